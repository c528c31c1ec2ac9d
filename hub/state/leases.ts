/**
 * @module Edge leases (issue #22; docs/operations.md, "HA and scale-out"): which hub process serves
 * each connected edge, when several share one PostgreSQL. A hub takes an edge's lease at the
 * handshake (a newer connection wins, whichever replica held it) and renews the leases of its
 * connections in one statement every few seconds; a renewal finds the edges another replica took
 * since, and the hub closes its own, older connection of each. A lease that is not renewed expires:
 * the edges of a replica that died are nobody's.
 *
 * | table | |
 * |---|---|
 * | edge_leases | edge, replica, expires_at, taken_at |
 */
import { all, inJsonList, migrateTables, one, type SqlDb, write } from './sql.js';

/**
 * A lease outlives three missed renewals. The default: `outpost hub --replica-lease` sets another
 * (every replica of one database the same: docs/operations.md, "HA and scale-out").
 */
export const LEASE_RENEW_MS = 5_000;
export const LEASE_TTL_MS = 3 * LEASE_RENEW_MS;

/** The shortest `--replica-lease`: three renewals, each a database round trip, must fit in it. */
export const MIN_LEASE_TTL_MS = 3_000;

/** How often leases and a replica's row are renewed: three times per lease. */
export function leaseRenewMs(ttlMs: number): number {
  return Math.round(ttlMs / 3);
}

export interface EdgeLease {
  edge: string;
  replica: string;
  expiresAt: number;
  takenAt: number;
}

export class EdgeLeases {
  constructor(
    private readonly db: SqlDb,
    /** This hub process, as other replicas see it in the table. */
    readonly replica: string,
    /** How long a lease lasts unrenewed (`--replica-lease`). */
    readonly ttlMs = LEASE_TTL_MS,
  ) {
    migrateTables(db, 'hub-leases');
  }

  /**
   * Takes the edge's lease for this replica, from whoever held it: the newest connection wins. With
   * the next round trip (within PG_GATHER): nobody reads its result, and a round trip of its own
   * was one of a handshake's dozen on PostgreSQL (docs/benchmarks.md, issue #22). Another replica
   * learns of it at its next renewal, seconds later, either way.
   */
  take(edge: string, now = Date.now()): void {
    write(
      this.db,
      `INSERT INTO edge_leases (edge, replica, expires_at, taken_at) VALUES (?, ?, ?, ?)
       ON CONFLICT(edge) DO UPDATE SET replica = excluded.replica, expires_at = excluded.expires_at, taken_at = excluded.taken_at`,
      edge,
      this.replica,
      now + this.ttlMs,
      now,
    );
  }

  /**
   * Extends this replica's leases of `edges` and answers those it no longer holds: another replica
   * took them (its connection of the edge is newer), or the row is gone.
   */
  renew(edges: string[], now = Date.now()): string[] {
    if (edges.length === 0) return [];
    // One statement: the rows it extends are the leases still ours.
    const mine = new Set(
      all<{ edge: string }>(
        this.db,
        `UPDATE edge_leases SET expires_at = ? WHERE replica = ? AND ${inJsonList(this.db, 'edge')} RETURNING edge`,
        now + this.ttlMs,
        this.replica,
        JSON.stringify(edges),
      ).map((r) => r.edge),
    );
    return edges.filter((e) => !mine.has(e));
  }

  /** The connection ended: the lease goes, if it is still ours (with the next round trip, as `take`). */
  release(edge: string): void {
    write(this.db, 'DELETE FROM edge_leases WHERE edge = ? AND replica = ?', edge, this.replica);
  }

  /** The replica serving `edge` now (a live lease), if any. */
  holder(edge: string, now = Date.now()): string | undefined {
    return one<{ replica: string }>(
      this.db,
      'SELECT replica FROM edge_leases WHERE edge = ? AND expires_at > ?',
      edge,
      now,
    )?.replica;
  }

  /** Who serves each edge (live leases only). */
  list(now = Date.now()): EdgeLease[] {
    return all<{ edge: string; replica: string; expires_at: number; taken_at: number }>(
      this.db,
      'SELECT edge, replica, expires_at, taken_at FROM edge_leases WHERE expires_at > ? ORDER BY edge',
      now,
    ).map((r) => ({ edge: r.edge, replica: r.replica, expiresAt: Number(r.expires_at), takenAt: Number(r.taken_at) }));
  }
}
