/**
 * @module The rows of the table `connections` (one per connection of an edge, issue #42: each
 * names the hub replica that served it and the connection, so a replica that stops ends only its
 * own and a late close of an older connection leaves a newer one alone): the only SQL about it.
 * hub/state/edges.ts (EdgeState) uses it, writing an edge's runtime facts in the same breath;
 * hub/edges/history.ts says why rows end.
 */
import { all, run, type SqlDb, write } from './sql.js';

/** One row of an edge's connection history. */
export interface ConnectionRecord {
  connectedAt: number;
  disconnectedAt?: number;
  reason?: string;
  remoteAddress?: string;
  /** The hub replica that served it (absent on rows recorded before hubs named themselves). */
  replica?: string;
}

/** A connection as the hub records it: which replica serves it, under which id. */
export interface ConnectionStart {
  at: number;
  agentVersion: string;
  remoteAddress: string;
  /** The hub process serving it (hub/state/replicas.ts newReplicaId). */
  replica: string;
  /** Unique among all connections: names it when it ends. */
  connection: string;
}

/** The rows of `connections`. */
export interface ConnectionRows {
  /** A connection opened: its row. */
  open(edge: string, c: ConnectionStart): void;
  /** Connection `connection` of the edge ended: its row, if still open. */
  close(edge: string, at: number, reason: string, connection: string): void;
  /** Every open row of the edge ends (before its next connection's starts). */
  endOpen(edge: string, at: number, reason: string): void;
  /** Every open row of a replica ends at `at` (`null`: rows without a replica); how many. */
  endReplica(replica: string | null, at: number, reason: string): number;
  /** The edge's open rows of a replica end at `at`, not before each began (`null`: when it began). */
  endEdgeOf(edge: string, replica: string | null, at: number | null, reason: string): void;
  /** The replicas with open rows (`null`: rows without a replica). */
  openReplicas(): (string | null)[];
  /** The latest `limit` rows of an edge, newest first. */
  list(edge: string, limit: number): ConnectionRecord[];
  /** Deletes ended rows older than `before` and all but the newest `perEdge` per edge. */
  prune(before: number, perEdge: number): number;
}

const whichReplica = (replica: string | null) =>
  replica === null ? { sql: 'replica IS NULL', params: [] as string[] } : { sql: 'replica = ?', params: [replica] };

export function connectionRows(db: SqlDb): ConnectionRows {
  return {
    open(edge, c) {
      // In the connection history's transaction (hub/edges/history.ts): with its next statement.
      write(
        db,
        'INSERT INTO connections (edge, connected_at, remote_address, replica, connection) VALUES (?, ?, ?, ?, ?)',
        edge,
        c.at,
        c.remoteAddress,
        c.replica,
        c.connection,
      );
    },
    close(edge, at, reason, connection) {
      write(
        db,
        'UPDATE connections SET disconnected_at = ?, reason = ? WHERE edge = ? AND connection = ? AND disconnected_at IS NULL',
        at,
        reason,
        edge,
        connection,
      );
    },
    endOpen(edge, at, reason) {
      write(
        db,
        'UPDATE connections SET disconnected_at = ?, reason = ? WHERE edge = ? AND disconnected_at IS NULL',
        at,
        reason,
        edge,
      );
    },
    endReplica(replica, at, reason) {
      const w = whichReplica(replica);
      return run(
        db,
        `UPDATE connections SET disconnected_at = ?, reason = ? WHERE ${w.sql} AND disconnected_at IS NULL`,
        at,
        reason,
        ...w.params,
      );
    },
    endEdgeOf(edge, replica, at, reason) {
      const w = whichReplica(replica);
      run(
        db,
        `UPDATE connections SET disconnected_at = CASE WHEN ? > connected_at THEN ? ELSE connected_at END, reason = ?
         WHERE edge = ? AND ${w.sql} AND disconnected_at IS NULL`,
        at,
        at,
        reason,
        edge,
        ...w.params,
      );
    },
    openReplicas() {
      return all<{ replica: string | null }>(
        db,
        'SELECT DISTINCT replica FROM connections WHERE disconnected_at IS NULL',
      ).map((r) => r.replica);
    },
    list(edge, limit) {
      return all<{
        connected_at: number;
        disconnected_at: number | null;
        reason: string | null;
        remote_address: string | null;
        replica: string | null;
      }>(
        db,
        'SELECT connected_at, disconnected_at, reason, remote_address, replica FROM connections WHERE edge = ? ORDER BY id DESC LIMIT ?',
        edge,
        limit,
      ).map((r) => ({
        connectedAt: r.connected_at,
        ...(r.disconnected_at !== null ? { disconnectedAt: r.disconnected_at } : {}),
        ...(r.reason ? { reason: r.reason } : {}),
        ...(r.remote_address ? { remoteAddress: r.remote_address } : {}),
        ...(r.replica ? { replica: r.replica } : {}),
      }));
    },
    prune(before, perEdge) {
      return (
        run(db, 'DELETE FROM connections WHERE disconnected_at IS NOT NULL AND disconnected_at < ?', before) +
        run(
          db,
          `DELETE FROM connections WHERE id IN (
             SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY edge ORDER BY id DESC) AS n FROM connections) ranked
             WHERE n > ?)`,
          perEdge,
        )
      );
    },
  };
}
