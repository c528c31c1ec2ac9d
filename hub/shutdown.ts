/**
 * @module The hub's shutdown, in order: this replica leaves the others' view first (they stop
 * forwarding here), then the loops and timers stop, then the edges' connections close, then the
 * HTTP server (idle keep-alive connections ended at once); the scheduler finishes what it was
 * writing before the store and the database close.
 */
import type http from 'node:http';
import { createLogger } from '../core/logger.js';
import type { SyncServer } from '../sync/server.js';
import type { ReplicaStore } from '../sync/store.js';
import type { ChangeFeed } from './changes/feed.js';
import type { TokenStreams } from './auth/token-streams.js';
import type { HubBlobs } from './blobs/index.js';
import type { Catalog } from './catalog/index.js';
import type { DataDeliveries } from './data/delivery.js';
import type { S3Sink } from './data/s3-sink.js';
import type { EdgeLifecycle } from './edges/lifecycle.js';
import type { ImagePins } from './images/pins.js';
import type { HubStaging } from './images/staging.js';
import type { Replicas } from './replicas/index.js';
import type { Scheduler } from './scheduler/index.js';
import type { SyncPostgres } from './state/pg/sync-client.js';
import type { HubReplicas } from './state/replicas.js';
import type { TunnelGateway } from './tunnel/gateway.js';
import type { AgentUpgradeController } from './upgrades/controller.js';

const log = createLogger('hub');

/** What a running hub stops; the optional parts are those of replicas, PostgreSQL or an S3 sink. */
export interface RunningHub {
  /** Why it stops (the signal, e.g.): its edges are told, and their connection history says so. */
  why: string | undefined;
  replicas: HubReplicas;
  blobs: HubBlobs;
  pins: ImagePins;
  upgrades: AgentUpgradeController | undefined;
  imageStaging: HubStaging;
  leaseTimer: NodeJS.Timeout | undefined;
  peers: Replicas | undefined;
  deliveries: DataDeliveries | undefined;
  sink: S3Sink | undefined;
  catalog: Catalog;
  changes: ChangeFeed | undefined;
  tokenStreams: TokenStreams;
  tunnel: TunnelGateway;
  edges: EdgeLifecycle;
  sync: SyncServer;
  server: http.Server;
  scheduler: Scheduler;
  store: ReplicaStore;
  pg: SyncPostgres | undefined;
}

export async function closeHub(h: RunningHub): Promise<void> {
  try {
    h.replicas.remove(); // the other replicas stop forwarding here at once
  } catch (err) {
    log.warn({ err }, "could not remove this replica's row (it expires)");
  }
  h.blobs.stop();
  h.pins.stop();
  h.upgrades?.stop();
  h.imageStaging.stop();
  clearInterval(h.leaseTimer);
  h.peers?.close();
  h.deliveries?.stop();
  await h.sink?.stop();
  await h.catalog.stop();
  h.changes?.close();
  h.tokenStreams.close();
  h.tunnel.close();
  h.edges.stop(h.why);
  await h.sync.close(`the hub replica is shutting down${h.why ? ` (${h.why})` : ''}`);
  // Idle keep-alive API connections would hold close() for their timeout: end them now.
  const closed = new Promise<void>((r) => h.server.close(() => r()));
  h.server.closeAllConnections?.();
  await closed;
  await h.scheduler.idle();
  h.store.close();
  await h.pg?.close();
}
