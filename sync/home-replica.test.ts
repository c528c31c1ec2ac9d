/**
 * An edge given several hub URLs (hub replicas) waits for the one that served it while that one
 * answers busy, past its home window (`homeRedialMs`, shortened here from HOME_REDIAL_MS), and moves
 * on once it stops answering: a real SyncServer serves the edge first; then `busyHub`, a test double
 * on the same port, answers every upgrade with 503 and Retry-After: 1; `otherHub`, another test
 * double, counts the dials that reach it.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { edgeName } from '../core/ids.js';
import { tempDir, waitFor } from '../test/helpers.js';
import { listenSyncServer } from '../test/fixtures/sync-server.js';
import { SyncClient } from './client.js';
import { ensureMailbox } from './mailbox.js';
import { ReplicaStore } from './store.js';

const E = edgeName('edge-home');
/** The home window of this test's client: short, so that being dialled past it takes seconds. */
const HOME_WINDOW_MS = 2_000;
const cleanup: (() => unknown)[] = [];

afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A test double of a hub replica: records when each upgrade came and answers it 503 (busy). */
async function upgradeCounter(
  port = 0,
): Promise<{ port: number; dials: () => number; lastDialAt: () => number; close(): Promise<void> }> {
  const at: number[] = [];
  const server = http.createServer((_q, r) => r.writeHead(404).end());
  server.on('upgrade', (_req, socket) => {
    at.push(Date.now());
    socket.end('HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    dials: () => at.length,
    lastDialAt: () => at.at(-1) ?? 0,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

it('waits for its own replica while it answers busy, past the home window, and moves on once it stops answering', async () => {
  const dir = tempDir();
  cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const hubStore = await ReplicaStore.open(path.join(dir, 'hub.db'), { afterChange: (id) => home.server.notify(id) });
  cleanup.push(() => hubStore.close());
  const home = await listenSyncServer({
    store: hubStore,
    hubVersion: 'test',
    authenticate: (t) => (t === 'tok' ? { edge: E } : null),
  });
  ensureMailbox(hubStore, E, 'hub');
  const otherHub = await upgradeCounter();
  cleanup.push(() => otherHub.close());
  const edgeStore = await ReplicaStore.open(path.join(dir, 'edge.db'), { afterChange: (id) => client.notify(id) });
  cleanup.push(() => edgeStore.close());
  const client = new SyncClient({
    url: [home.url, `ws://127.0.0.1:${otherHub.port}${home.server.path}`],
    token: 'tok',
    edge: E,
    store: edgeStore,
    agentVersion: 'test',
    homeRedialMs: HOME_WINDOW_MS,
  });
  cleanup.push(() => client.stop());
  client.start();
  await waitFor(() => client.state === 'connected', { what: 'served by its own replica' });

  // Its replica restarts into a storm: up again at once, and busy.
  const lostAt = Date.now();
  await home.close();
  const busyHub = await upgradeCounter(home.port);
  let busyClosed = false;
  cleanup.push(() => (busyClosed ? undefined : busyHub.close()));
  // Dialled again and again, the last time well past the window (by more than one Retry-After and
  // its grace): each busy answer kept the edge there.
  await waitFor(() => busyHub.dials() >= 5 && busyHub.lastDialAt() > lostAt + HOME_WINDOW_MS + 2_000, {
    timeout: 30_000,
    what: 'five dials to its busy replica, the last past the home window',
  });
  expect(busyHub.dials()).toBeGreaterThanOrEqual(5);
  expect(otherHub.dials()).toBe(0);
  expect(client.url).toContain(`:${home.port}/`);

  // Its replica is gone now (nothing listens): the edge moves to the other within a few seconds.
  await busyHub.close();
  busyClosed = true;
  await waitFor(() => otherHub.dials() > 0, { timeout: 10_000, what: 'a dial to the other replica' });
}, 40_000);
