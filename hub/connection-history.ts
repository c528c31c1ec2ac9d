/**
 * @module An edge's connection history: the `connections` table (one row per connection, owned
 * here) and the Connected / Disconnected / Reconnected events, with retention for both.
 *
 * One edge on a flapping link, or a hostile one in a reconnect loop, once wrote ~440 rows a second
 * here. Three bounds keep that in check: the sync server rate-limits reconnects per edge
 * (RECONNECT_BURST, sync/server.ts); repeated reconnects within RECONNECT_COALESCE_MS update one
 * event instead of adding two each; `pruneHistory` deletes rows past their age and count
 * (docs/operations.md, "Retention").
 */
import { cachedStatement, inTransaction, type SqliteDatabase } from '../sync/sqlite.js';
import { recordEvent, updateEvent } from './db.js';
import { edgeRuntime } from './controllers/edges.js';

const DAY = 86_400_000;
/** Events are kept this long, and at most EVENTS_MAX_ROWS of them (the oldest go first). */
export const EVENTS_MAX_AGE_MS = 30 * DAY;
export const EVENTS_MAX_ROWS = 100_000;
/** Connection rows are kept this long, and at most CONNECTIONS_PER_EDGE per edge. */
export const CONNECTIONS_MAX_AGE_MS = 30 * DAY;
export const CONNECTIONS_PER_EDGE = 100;
/** A reconnect this soon after the edge's last connection event updates that event. */
export const RECONNECT_COALESCE_MS = 60_000;

export interface ConnectionFacts {
  edge: string;
  remoteAddress: string;
  agentVersion: string;
}

interface LastEvent {
  id: number;
  at: number;
  reason: string;
}

/** Reconnect counts of the edges whose last connection event is a coalesced one, by event id. */
const flaps = new Map<number, { count: number; since: number }>();

function lastEdgeEvent(db: SqliteDatabase, project: string, edge: string): LastEvent | undefined {
  return cachedStatement(
    db,
    "SELECT id, at, reason FROM events WHERE project = ? AND kind = 'Edge' AND name = ? ORDER BY id DESC LIMIT 1",
  ).get(project, edge) as LastEvent | undefined;
}

const iso = (t: number) => new Date(t).toISOString();

/** Records a connection: the runtime row, a connections row and an event (one transaction). */
export function recordConnect(db: SqliteDatabase, conn: ConnectionFacts, now = Date.now()): void {
  inTransaction(db, () => {
    const rt = edgeRuntime(db, conn.edge);
    cachedStatement(
      db,
      'UPDATE edge_runtime SET connected_since = ?, last_seen = ?, agent_version = ?, remote_address = ? WHERE name = ?',
    ).run(now, now, conn.agentVersion, conn.remoteAddress, conn.edge);
    cachedStatement(db, 'INSERT INTO connections (edge, connected_at, remote_address) VALUES (?, ?, ?)').run(
      conn.edge,
      now,
      conn.remoteAddress,
    );
    if (!rt) return;
    const last = lastEdgeEvent(db, rt.project, conn.edge);
    if (last && last.reason === 'Disconnected' && now - last.at < RECONNECT_COALESCE_MS) {
      const f = flaps.get(last.id) ?? { count: 0, since: last.at };
      f.count++;
      if (flaps.size > 10_000) flaps.clear();
      flaps.set(last.id, f);
      updateEvent(db, last.id, {
        at: now,
        reason: 'Reconnected',
        message: `edge ${conn.edge} reconnected from ${conn.remoteAddress} (${f.count} reconnect${f.count === 1 ? '' : 's'} since ${iso(f.since)})`,
      });
      return;
    }
    recordEvent(db, {
      project: rt.project,
      kind: 'Edge',
      name: conn.edge,
      reason: 'Connected',
      message: `edge ${conn.edge} connected from ${conn.remoteAddress}`,
      at: now,
    });
  });
}

/** Records a disconnection (one transaction). */
export function recordDisconnect(
  db: SqliteDatabase,
  edge: string,
  code: number,
  reason: string,
  now = Date.now(),
): void {
  inTransaction(db, () => {
    cachedStatement(db, 'UPDATE edge_runtime SET connected_since = NULL, disconnected_at = ? WHERE name = ?').run(
      now,
      edge,
    );
    cachedStatement(
      db,
      'UPDATE connections SET disconnected_at = ?, reason = ? WHERE edge = ? AND disconnected_at IS NULL',
    ).run(now, `${code} ${reason}`.trim(), edge);
    const rt = edgeRuntime(db, edge);
    if (!rt) return;
    const why = `${code}${reason ? `: ${reason}` : ''}`;
    const last = lastEdgeEvent(db, rt.project, edge);
    const f = last && flaps.get(last.id);
    if (last && f && last.reason === 'Reconnected' && now - last.at < RECONNECT_COALESCE_MS) {
      updateEvent(db, last.id, {
        at: now,
        reason: 'Disconnected',
        message: `edge ${edge} disconnected (${why}) after ${f.count} reconnect${f.count === 1 ? '' : 's'} since ${iso(f.since)}`,
      });
      return;
    }
    recordEvent(db, {
      project: rt.project,
      kind: 'Edge',
      name: edge,
      reason: 'Disconnected',
      message: `edge ${edge} disconnected (${why})`,
      at: now,
    });
  });
}

/** Every connected edge is disconnected by a hub stop: one statement each, not one event per edge. */
export function recordHubStop(db: SqliteDatabase, now = Date.now()): number {
  return inTransaction(db, () => {
    const n = cachedStatement(
      db,
      'UPDATE edge_runtime SET connected_since = NULL, disconnected_at = ? WHERE connected_since IS NOT NULL',
    ).run(now).changes;
    cachedStatement(db, 'UPDATE connections SET disconnected_at = ?, reason = ? WHERE disconnected_at IS NULL').run(
      now,
      'hub stopped',
    );
    return n;
  });
}

/** Deletes events and connection rows past their age and count bounds; returns how many went. */
export function pruneHistory(db: SqliteDatabase, now = Date.now()): { events: number; connections: number } {
  return inTransaction(db, () => {
    let events = cachedStatement(db, 'DELETE FROM events WHERE at < ?').run(now - EVENTS_MAX_AGE_MS).changes;
    events += cachedStatement(
      db,
      'DELETE FROM events WHERE id <= (SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?)',
    ).run(EVENTS_MAX_ROWS).changes;
    let connections = cachedStatement(
      db,
      'DELETE FROM connections WHERE disconnected_at IS NOT NULL AND disconnected_at < ?',
    ).run(now - CONNECTIONS_MAX_AGE_MS).changes;
    connections += cachedStatement(
      db,
      `DELETE FROM connections WHERE id IN (
         SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY edge ORDER BY id DESC) AS n FROM connections)
         WHERE n > ?)`,
    ).run(CONNECTIONS_PER_EDGE).changes;
    return { events, connections };
  });
}
