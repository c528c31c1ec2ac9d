/**
 * @module The hub's shutdown, in order: its modules stop in reverse of the list they were started
 * in (hub/module.ts), so this replica leaves the others' view first (they stop forwarding here),
 * then the controllers and loops stop before what they use; then the edges' connections close,
 * then the HTTP server (idle keep-alive connections ended at once); the scheduler finishes what it
 * was writing before the store and the database close.
 */
import type http from 'node:http';
import type { SyncServer } from '../sync/server.js';
import type { ReplicaStore } from '../sync/store.js';
import type { HubModules } from './module.js';
import type { Scheduler } from './scheduler/index.js';
import type { SyncPostgres } from './state/pg/sync-client.js';

/** What a running hub stops: its modules, then what outlives them all. */
export interface RunningHub {
  /** Why it stops (the signal, e.g.): its edges are told, and their connection history says so. */
  why: string | undefined;
  modules: HubModules;
  sync: SyncServer;
  server: http.Server;
  scheduler: Scheduler;
  store: ReplicaStore;
  pg: SyncPostgres | undefined;
}

export async function closeHub(h: RunningHub): Promise<void> {
  await h.modules.stop(h.why);
  await h.sync.close(`the hub replica is shutting down${h.why ? ` (${h.why})` : ''}`);
  // Idle keep-alive API connections would hold close() for their timeout: end them now.
  const closed = new Promise<void>((r) => h.server.close(() => r()));
  h.server.closeAllConnections?.();
  await closed;
  await h.scheduler.idle();
  h.store.close();
  await h.pg?.close();
}
