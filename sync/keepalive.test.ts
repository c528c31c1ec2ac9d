/**
 * The hub's keepalive over real sockets: a connection the hub is sending to, and hearing from, is
 * not pinged (the frames already keep the edge's dead-link timer armed); a quiet one is pinged
 * again; a peer that answers nothing is cut off.
 */
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeName, mailboxDocId } from '../core/ids.js';
import { captureLogs } from '../core/logger.js';
import { putSpecWorkload, type SpecDoc } from '../core/mailbox.js';
import { tempDir, waitFor } from '../test/helpers.js';
import { ensureMailbox } from './mailbox.js';
import { encodeControl, PROTOCOL_VERSION } from './messages.js';
import { ReplicaStore } from './store.js';
import { listenSyncServer, type ListeningSyncServer } from '../test/fixtures/sync-server.js';

const EDGE = edgeName('edge-k');
const PING_MS = 150;
let dir: string;
let store: ReplicaStore;
let hub: ListeningSyncServer;

beforeAll(async () => {
  dir = tempDir();
  store = await ReplicaStore.open(path.join(dir, 'hub.db'), { afterChange: (id) => hub?.server.notify(id) });
  ensureMailbox(store, EDGE, 'hub');
  hub = await listenSyncServer({
    store,
    hubVersion: 'test',
    pingIntervalMs: PING_MS,
    authenticate: (t) => (t === 'tok' ? { edge: EDGE } : null),
  });
});

afterAll(async () => {
  await hub.close();
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A raw edge that never answers pings by itself (autoPong off) and counts them. */
async function rawEdge(): Promise<{ ws: WebSocket; pings: () => number; closed: Promise<void> }> {
  const ws = new WebSocket(hub.url, { headers: { authorization: 'Bearer tok' }, autoPong: false });
  let pings = 0;
  ws.on('ping', () => pings++);
  const closed = new Promise<void>((r) => ws.on('close', () => r()));
  await new Promise<void>((r, j) => {
    ws.on('open', () => r());
    ws.on('error', j);
  });
  ws.send(encodeControl({ type: 'hello', protocol: PROTOCOL_VERSION, agentVersion: 'test', docs: [] }));
  return { ws, pings: () => pings, closed };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('hub keepalive', () => {
  it('skips the ping of a connection it sends to and hears from, and pings it once it is quiet', async () => {
    const edge = await rawEdge();
    let gen = 0;
    // The hub writes the spec every 40 ms (a frame to the edge each time) and the edge sends a
    // heartbeat as often: for eight rounds no ping is needed.
    const busy = setInterval(() => {
      store.change<SpecDoc>(
        mailboxDocId(EDGE, 'spec'),
        (d) => void putSpecWorkload(d, { name: 'web', generation: ++gen, revision: 1, manifests: [] }),
      );
      edge.ws.send(encodeControl({ type: 'heartbeat', at: Date.now() }));
    }, 40);
    await sleep(8 * PING_MS);
    clearInterval(busy);
    expect(gen).toBeGreaterThan(10);
    expect(edge.pings()).toBe(0);
    // Quiet now: the next rounds ping it (answered with a pong, so it stays connected).
    edge.ws.on('ping', (data) => edge.ws.pong(data));
    await waitFor(() => edge.pings() >= 2, { what: 'pings once the connection is quiet', timeout: 5_000 });
    expect(edge.ws.readyState).toBe(WebSocket.OPEN);
    edge.ws.close();
    await edge.closed;
  });

  it('cuts off a connection that answers nothing', async () => {
    const logs = captureLogs();
    try {
      const edge = await rawEdge();
      await edge.closed;
      expect(edge.pings()).toBeGreaterThanOrEqual(1);
      expect(logs.lines.some((l) => l.includes('missed a ping'))).toBe(true);
    } finally {
      logs.stop();
    }
  });
});
