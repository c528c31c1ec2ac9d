/**
 * @module The hub's sync endpoint: the SyncServer edges connect to, and what each of its hooks
 * does on the hub. An upgrade is authenticated by the edge's credential (a decommissioned edge is
 * told so); a handshake writes every kind of order into the edge's spec first (hub/orders/engine.ts
 * `writeEdge`) when this process never served it (or always, with replicas); connections and
 * disconnections go to the edge's lifecycle and its lease, heartbeats to the lifecycle and the
 * data uploads, tunnel frames to the tunnel gateway, refusals and throttling to the metrics. On
 * PostgreSQL the handshakes that come together read what every kind needs in one round trip.
 */
import type { Socket } from 'node:net';
import { PG_HANDSHAKE_GATHER, REFUSAL_LOG_INTERVAL_MS } from '../core/durations.js';
import { edgeName } from '../core/ids.js';
import { createLogger, throttle } from '../core/logger.js';
import { compactSpec } from '../sync/compaction.js';
import { SyncServer } from '../sync/server.js';
import type { ReplicaStore } from '../sync/store.js';
import type { HubDataFiles } from './data/index.js';
import type { EdgeLifecycle } from './edges/lifecycle.js';
import type { ConnectionLimiter } from './http-limits.js';
import type { HubMetrics } from './metrics.js';
import type { OrderEngine } from './orders/engine.js';
import type { EdgeLeases } from './state/leases.js';
import type { TunnelGateway } from './tunnel/gateway.js';

const log = createLogger('hub');

/** What the sync endpoint's hooks reach. */
export interface SyncEndpointWiring {
  store: ReplicaStore;
  version: string;
  /** The edges' credentials (hub/auth/): whose an upgrade is, and when a decommissioned one was. */
  credentials: {
    /** On PostgreSQL the credentials of the upgrades that come together are read in one round trip (PG_HANDSHAKE_GATHER). */
    verify(token: string): Promise<{ edge: string } | null>;
    decommissionedAt(token: string): number | undefined;
  };
  /**
   * On PostgreSQL: what the handshakes of a turn will read, given ahead in one round trip
   * (hub/state/index.ts `prefetchHandshakes`, from the order engine's kinds).
   */
  readAhead(edges: string[]): void;
  /** The hub's tables are in PostgreSQL: handshakes gather (PG_HANDSHAKE_GATHER). */
  postgres: boolean;
  /** This process has replicas (hub/replicas/): another may have served an edge since. */
  replicated(): boolean;
  /** This hub process (hub/state/replicas.ts newReplicaId): the connection history names it. */
  replica: string;
  /** Only with replicas: an edge's connection takes its lease, and gives it back when it ends. */
  leases: EdgeLeases | undefined;
  edges: EdgeLifecycle;
  /** Orders to edges (hub/orders/engine.ts): every kind's part is written at the handshake. */
  orders: OrderEngine;
  tunnel: TunnelGateway;
  dataFiles: HubDataFiles;
  metrics: HubMetrics;
  /** The server's cap on connections per address, which an edge's upgraded socket leaves. */
  connLimit: ConnectionLimiter;
}

/** The sync server with the hub's hooks, not attached to the HTTP server yet. */
export function createSyncEndpoint(w: SyncEndpointWiring): SyncServer {
  const { store, edges, leases, tunnel, metrics } = w;
  const { refused, heartbeats, throttled } = metrics;
  const throttledLog = throttle(REFUSAL_LOG_INTERVAL_MS);
  // Whether a handshake writes the edge's spec and orders first (`beforeWelcome` below).
  const writesAtHandshake = (fresh: boolean) => fresh || w.replicated();
  const sync: SyncServer = new SyncServer({
    store,
    hubVersion: w.version,
    authenticate: async (token) => {
      const id = await w.credentials.verify(token);
      return id ? { edge: edgeName(id.edge) } : null;
    },
    decommissioned: (token) => {
      const at = w.credentials.decommissionedAt(token);
      return at === undefined
        ? undefined
        : `this edge was decommissioned on ${new Date(at).toISOString()}: it is no longer part of the fleet; run outpost edge uninstall on it, or enroll it again with a new join token`;
    },
    onConnect: (conns) => {
      edges.connected(
        conns.map((c) => ({
          edge: c.edge,
          remoteAddress: c.remoteAddress,
          agentVersion: c.agentVersion,
          replica: w.replica,
          connection: c.id,
        })),
      );
      for (const conn of conns) leases?.take(conn.edge);
    },
    // On PostgreSQL: what the handshakes that come together read (below and the connection
    // history), in one round trip for all of them, and their connections recorded in one more.
    gatherHellos: w.postgres ? PG_HANDSHAKE_GATHER : undefined,
    beforeWelcomes: (batch) => {
      w.readAhead(batch.filter((b) => writesAtHandshake(b.fresh)).map((b) => b.edge));
    },
    // An edge this process never served (a replica taking it over, docs/operations.md): every kind
    // of order is written into its spec before the edge is answered, in this replica's new epoch
    // (a spec without them would have the edge take them for withdrawn: stop its workloads, remove
    // its files). With replicas, every time: another replica may have served the edge since this
    // one last did.
    beforeWelcome: (edge, fresh) => {
      if (writesAtHandshake(fresh)) w.orders.writeEdge(edge);
    },
    onDisconnect: (conn, code, reason, byHub) => {
      // Recorded at the end of this turn with the others that ended in it.
      edges.disconnected({ edge: conn.edge, connection: conn.id, code, reason, byHub });
      // A newer connection of the edge to this same process holds the lease now: keep it.
      if (!sync.connection(conn.edge)) leases?.release(conn.edge);
      tunnel.onDisconnect(conn);
      metrics.connectionClosed(conn.session.stats);
    },
    onTunnel: (conn, payload) => tunnel.onTunnel(conn, payload),
    onHeartbeat: (edge, hb) => {
      heartbeats.inc();
      edges.heartbeat(edge);
      w.dataFiles.noteHeartbeat(edge, hb.metrics);
    },
    onRefused: (_edge, code) => refused.inc({ code }),
    onThrottled: (edge) => {
      throttled.inc();
      throttledLog((suppressed) =>
        log.warn({ edge, suppressed }, 'an edge sends frames faster than FRAMES_PER_SECOND: reading it more slowly'),
      );
    },
    onUpgraded: (socket) => w.connLimit.exempt(socket as Socket),
    restartEpoch: (id) => void compactSpec(store, id, -1),
  });
  return sync;
}
