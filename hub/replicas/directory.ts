/**
 * @module What the hub shows of its replicas (issue #42; docs/operations.md, "HA and scale-out"):
 * `GET /api/v1/replicas` (each one's URL, whether it is alive, its last renewal, the edges it
 * serves, which one plans), the replica an edge's connection is on, and what one replica knows of
 * another when an edge comes over from it (its connection history then says failover, or a move).
 * A SQLite hub is its own only replica. Reads only: the rows are hub/state/replicas.ts's.
 */
import type { ReplicaView, ServedByView } from '../../core/api/views.js';
import type { PeerFacts } from '../edges/history.js';
import type { EdgeState } from '../state/edges.js';
import type { HubReplicas, ReplicaState } from '../state/replicas.js';

/**
 * What this replica knows of the others is read again after this long: an edge status list and a
 * reconnect wave ask for each edge, and a replica that died shows so within a second.
 */
export const PEER_CACHE_MS = 1_000;

const iso = (t: number) => new Date(t).toISOString();

export class ReplicaDirectory {
  private cached: { at: number; byId: Map<string, ReplicaState> } | undefined;

  constructor(
    private readonly registry: HubReplicas,
    private readonly edges: EdgeState,
    /** This replica's advertise URL (known once it listens). */
    private readonly selfUrl: () => string,
  ) {}

  /** This hub process, as `GET /api/v1/whoami` names it. */
  self(): { id: string; url: string } {
    return { id: this.registry.self, url: this.selfUrl() };
  }

  /** Every replica with a row, oldest first; the edges each serves are counted in `project` (`*`: all). */
  list(project: string, now = Date.now()): ReplicaView[] {
    const rows = this.registry.list(now);
    this.cached = { at: now, byId: new Map(rows.map((r) => [r.id, r])) };
    const served = this.edges.servedCounts(project);
    return rows.map((r) => ({
      id: r.id,
      url: r.url,
      alive: r.alive,
      leader: r.leader,
      self: r.id === this.registry.self,
      startedAt: iso(r.startedAt),
      lastHeartbeat: iso(r.renewedAt),
      edges: served.get(r.id) ?? 0,
    }));
  }

  /** Another replica as the connection history names it; undefined: it has no row (gone for a day). */
  peer(id: string, now = Date.now()): PeerFacts | undefined {
    const r = this.known(now).get(id);
    return r && { alive: r.alive, url: r.url };
  }

  /** The replica an edge's connection is on, with its URL while its row is there. */
  servedBy(replica: string, now = Date.now()): ServedByView {
    const url = this.known(now).get(replica)?.url;
    return { replica, ...(url ? { url } : {}) };
  }

  private known(now: number): Map<string, ReplicaState> {
    if (!this.cached || now - this.cached.at >= PEER_CACHE_MS)
      this.cached = { at: now, byId: new Map(this.registry.list(now).map((r) => [r.id, r])) };
    return this.cached.byId;
  }
}
