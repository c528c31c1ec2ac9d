/**
 * @module This hub process among its replicas, as one module: its row in hub_replicas (a SQLite
 * hub has one row, its own, for `outpost get replicas`), the edge leases and the bus of hubs
 * sharing a PostgreSQL (hub/replicas/), and the directory the API names replicas from. It starts
 * last and stops first: the other replicas stop forwarding here before anything else closes.
 */
import type { EdgeName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import type { SyncServer } from '../../sync/server.js';
import type { TokenStreams } from '../auth/token-streams.js';
import type { ChangeFeed } from '../changes/feed.js';
import type { HubModule } from '../module.js';
import { ReplicaDirectory } from '../replicas/directory.js';
import { endEarlierRuns, renewMembership, startReplicas, type Replicas } from '../replicas/index.js';
import type { Scheduler } from '../scheduler/index.js';
import type { HubState } from '../state/index.js';
import type { EdgeLeases } from '../state/leases.js';
import type { SyncPostgres } from '../state/pg/sync-client.js';
import { LEASE_TTL_MS } from '../state/leases.js';
import { newReplicaId, type HubReplicas } from '../state/replicas.js';

const log = createLogger('hub');

/** What the replicas reach once the hub is wired (`start`). */
export interface ReplicationWiring {
  scheduler: Scheduler;
  sync: SyncServer;
  changes: ChangeFeed;
  tokens: Pick<TokenStreams, 'revoked' | 'recheck'>;
  /** Another replica wrote an object of this kind (controllers that tick may go at once). */
  objectWritten(kind: string): void;
}

export interface Replication extends HubModule {
  /** This hub process (hub/state/replicas.ts newReplicaId). */
  readonly id: string;
  /** Only with replicas: an edge's connection takes its lease. */
  readonly leases: EdgeLeases | undefined;
  readonly registry: HubReplicas;
  readonly directory: ReplicaDirectory;
  /** The other replicas, once started (undefined on a SQLite hub). */
  peers(): Replicas | undefined;
  /** Registers the URL the others reach this replica at, once it listens. */
  listening(advertiseUrl: string): void;
  /** Wires what the replicas reach: before `start`. */
  wire(w: ReplicationWiring): void;
}

/**
 * Before any edge connects: on SQLite, what a run of this hub that was killed left open ends (a
 * PostgreSQL replica's leader ends what dead replicas left, hub/replicas/).
 */
export function createReplication(pg: SyncPostgres | undefined, state: HubState, leaseMs = LEASE_TTL_MS): Replication {
  const id = newReplicaId();
  // Only hubs sharing a PostgreSQL need leases: a SQLite hub is the only one of its database.
  const leases = state.edgeLeases(id, leaseMs);
  // The replicas' URLs, for tunnel requests one forwards to the replica serving the edge.
  const registry = state.replicaRegistry(id, leaseMs);
  if (!pg) endEarlierRuns(state, registry);
  let advertiseUrl = '';
  const directory = new ReplicaDirectory(registry, state.edges, () => advertiseUrl);
  let wiring: ReplicationWiring | undefined;
  let peers: Replicas | undefined;
  let timer: NodeJS.Timeout | undefined;
  return {
    name: 'replication',
    id,
    leases,
    registry,
    directory,
    peers: () => peers,
    // The other replicas hear of every object written here (they plan from it, their streams show it).
    onObjectChange: (c) => peers?.send({ t: 'object', kind: c.kind, project: c.project, name: c.name }),
    listening(url) {
      advertiseUrl = url;
      registry.register(url);
      if (pg) warnOtherLeases(registry);
    },
    wire(w) {
      wiring = w;
    },
    start() {
      if (!wiring) throw new Error('the replication module was started before it was wired');
      const { scheduler, sync } = wiring;
      const servedEdges = () => sync.connections().map((c) => c.edge);
      // Several hub processes on one PostgreSQL: one plans, each writes its edges' specs.
      if (pg && leases)
        peers = startReplicas({
          pg,
          id,
          scheduler,
          connected: (edge) => !!sync.connection(edge as EdgeName),
          connections: servedEdges,
          changes: wiring.changes,
          tokens: wiring.tokens,
          objectWritten: wiring.objectWritten,
        });
      // Leases and this replica's row are renewed every few seconds; a SQLite hub renews its row only.
      timer = renewMembership({
        leases,
        registry,
        leaseMs,
        state,
        connections: servedEdges,
        replaced: (edge) =>
          sync.disconnect(
            edge as EdgeName,
            'replaced',
            'lease lost: a newer connection of this edge is served by another hub replica',
          ),
        leaseLost: (list, awayMs) => {
          const why = `lease lost: this hub replica could not reach its database for ${Math.round(awayMs / 1000)} s`;
          for (const edge of list) sync.disconnect(edge as EdgeName, 'replaced', why);
        },
        leading: () => scheduler.leading,
        advertiseUrl: () => advertiseUrl,
      });
    },
    stop() {
      try {
        registry.remove(); // the other replicas stop forwarding here at once
      } catch (err) {
        log.warn({ err }, "could not remove this replica's row (it expires)");
      }
      clearInterval(timer);
      peers?.close();
    },
  };
}

/**
 * Every replica of one database must run with the same `--replica-lease` (docs/operations.md, "HA
 * and scale-out"): each row says its replica's lease, so a replica that starts with another one
 * says so, naming both values and the fix. It still starts: changing the lease means restarting
 * the replicas one by one, and each says so until the last is restarted.
 */
function warnOtherLeases(registry: HubReplicas): void {
  try {
    for (const peer of registry.otherLeases())
      log.warn(
        { replica: peer.id, url: peer.url, theirLeaseMs: peer.leaseMs, ourLeaseMs: registry.ttlMs },
        `hub replica ${peer.id} (${peer.url}) runs with a lease of ${peer.leaseMs / 1000} s, this one with ${registry.ttlMs / 1000} s: give every replica the same --replica-lease (its edges move and its connections end at its own lease)`,
      );
  } catch (err) {
    log.warn({ err }, "could not read the other replicas' leases");
  }
}
