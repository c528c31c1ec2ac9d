/**
 * The local operator API over its real unix socket, with a real replica (SQLite file) and the real
 * process driver: the answers and the bounds a request meets before anything is written.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import client from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeName } from '../core/ids.js';
import { ensureMailbox } from '../sync/mailbox.js';
import { initAutomerge } from '../sync/native.js';
import { ReplicaStore } from '../sync/store.js';
import { tempDir } from '../test/helpers.js';
import type { Driver } from './drivers/driver.js';
import { createDriver } from './drivers/index.js';
import { LOCAL_BODY_LIMIT, listenLocal, localApp } from './local-api.js';
import { Reconciler } from './reconciler.js';

let dir: string;
let store: ReplicaStore;
let driver: Driver;
let server: http.Server;
let socketPath: string;

function call(
  method: string,
  p: string,
  body?: string | Buffer,
): Promise<{ status: number; type: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path: p }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  await initAutomerge();
  dir = tempDir('outpost-local-api-');
  const edge = edgeName('site-1');
  store = await ReplicaStore.open(path.join(dir, 'edge.db'));
  ensureMailbox(store, edge, 'edge');
  driver = await createDriver('process', dir);
  const registry = new client.Registry();
  new client.Counter({ name: 'outpost_edge_test_total', help: 'a counter', registers: [registry] }).inc();
  socketPath = path.join(dir, 'agent.sock');
  server = await listenLocal(
    localApp({
      edge,
      hub: () => 'http://hub.invalid',
      store,
      driver,
      reconciler: new Reconciler(store, edge, driver),
      connection: () => 'offline',
      registry,
    }),
    socketPath,
  );
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await driver.close();
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the local API', () => {
  it('socket is private to the agent user (0600)', () => {
    expect(fs.statSync(socketPath).mode & 0o777).toBe(0o600);
  });

  it('status answers from the replica with the hub away', async () => {
    const r = await call('GET', '/status');
    expect(r.status).toBe(200);
    expect(r.type).toBe('application/json');
    expect(JSON.parse(r.text)).toEqual({
      edge: 'site-1',
      hub: 'http://hub.invalid',
      connection: 'offline',
      driver: 'process',
      workloads: [],
      data: {},
      exports: [],
    });
  });

  it('intents: a body that is not an intent, an unknown action, a workload not placed here', async () => {
    const bad = await call('POST', '/intents', 'not json');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.message).toContain('{"workload", "action"}');
    const action = await call('POST', '/intents', JSON.stringify({ workload: 'web', action: 'explode' }));
    expect(action.status).toBe(400);
    expect(JSON.parse(action.text).error.message).toContain('action must be one of');
    const absent = await call('POST', '/intents', JSON.stringify({ workload: 'web', action: 'pause' }));
    expect(absent.status).toBe(404);
    expect(JSON.parse(absent.text).error.message).toContain('workload web is not placed on this edge');
  });

  it('a body past the limit is refused before it is parsed', async () => {
    const r = await call('POST', '/intents', Buffer.alloc(LOCAL_BODY_LIMIT + 1, 0x20));
    expect(r.status).toBe(413);
    expect(JSON.parse(r.text).error.message).toContain(`larger than ${LOCAL_BODY_LIMIT} bytes`);
  });

  it('logs need a workload; unknown routes name the ones there are', async () => {
    const logs = await call('GET', '/logs');
    expect(logs.status).toBe(400);
    expect(JSON.parse(logs.text).error.message).toBe('workload is required');
    const none = await call('DELETE', '/status');
    expect(none.status).toBe(404);
    expect(JSON.parse(none.text).error.message).toContain('no route DELETE /status; the local API has GET /status');
  });

  it('metrics in the Prometheus text format', async () => {
    const r = await call('GET', '/metrics');
    expect(r.status).toBe(200);
    expect(r.type).toContain('text/plain');
    expect(r.text).toContain('outpost_edge_test_total 1');
  });
});
