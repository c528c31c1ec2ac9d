/**
 * @module The hub's event log (table `events`): the only SQL about it. Events record what happened
 * to an object (created, approved, connected, rolled out...) for `outpost describe`, the UI and its
 * live stream; retention bounds them (hub/edges/history.ts). An event of one object about an edge
 * (an AgentUpgrade's, naming the edge it ordered) carries that edge too, and lists with the edge's.
 * `EventLog` is the seam for a second implementation (issue #22); `sqlEventLog` is today's.
 */
import { type SqlDb, all, keyed, one, oneOf, read, run, write } from './sql.js';

export interface EventRecord {
  id: number;
  at: number;
  project: string;
  kind: string;
  name: string;
  reason: string;
  message: string;
  /**
   * The edge an event of another object is about (an AgentUpgrade ordering it, its switch
   * running or rolled back; a placement's images over budget there): listed with the edge's own.
   */
  edge?: string;
}

export type NewEvent = Omit<EventRecord, 'id' | 'at'> & { at?: number };

export interface EventFilter {
  kind?: string;
  name?: string;
  /** The events of Edge `edge` and those of other objects about it (EventRecord.edge); not with kind or name. */
  edge?: string;
  reason?: string;
  /** Only events at or after this time (ms since the epoch). */
  since?: number;
  limit: number;
}

export interface EventLog {
  record(e: NewEvent): void;
  /** Rewrites one event in place (coalescing repeated ones, hub/edges/history.ts). */
  update(id: number, e: { at: number; reason: string; message: string }): void;
  /** The newest event of one object. */
  last(project: string, kind: string, name: string): EventRecord | undefined;
  /** A project's events, newest first. */
  list(project: string, f: EventFilter): EventRecord[];
  /** The id of the newest event (0 when none): a cursor for `after`. */
  lastId(): number;
  /** Events after a cursor, oldest first. */
  after(id: number): { id: number; project: string }[];
  /** Deletes events older than `before` and all but the newest `keep`; returns how many went. */
  prune(before: number, keep: number): number;
}

/**
 * Appends one event; the SQLite implementation's function, for callers holding the database. Part
 * of the unit of work (sql.ts write): on PostgreSQL with the next round trip, or the COMMIT of the
 * transaction it is in.
 */
export function recordEvent(db: SqlDb, e: NewEvent): void {
  write(
    db,
    'INSERT INTO events (at, project, kind, name, reason, message, edge) VALUES (?, ?, ?, ?, ?, ?, ?)',
    e.at ?? Date.now(),
    e.project,
    e.kind,
    e.name,
    e.reason,
    e.message,
    e.edge ?? null,
  );
}

/** A row as the API shows it: no `edge` when the event is about none. */
function eventOf(r: EventRecord & { edge?: string | null }): EventRecord {
  const { edge, ...rest } = r;
  return edge ? { ...rest, edge } : rest;
}

/** The read of an object's last event, given ahead at an edge's handshake (hub/state/index.ts `handshakeReads`). */
export const lastEventRead = (project: string, kind: string, name: string) =>
  keyed(
    read(
      'SELECT * FROM events WHERE project = ? AND kind = ? AND name = ? ORDER BY id DESC LIMIT 1',
      project,
      kind,
      name,
    ),
    'name',
    name,
    // Each name's newest from the index (events_by_object), as the single read does.
    (names) =>
      read(
        `SELECT e.* FROM json_array_elements_text(CAST(? AS json)) n(name) CROSS JOIN LATERAL
           (SELECT * FROM events WHERE project = ? AND kind = ? AND name = n.name ORDER BY id DESC LIMIT 1) e`,
        JSON.stringify(names),
        project,
        kind,
      ),
    project,
    kind,
  );

export function sqlEventLog(db: SqlDb): EventLog {
  return {
    record: (e) => recordEvent(db, e),
    update(id, e) {
      // In the connection history's transaction (hub/edges/history.ts): with its next statement.
      write(db, 'UPDATE events SET at = ?, reason = ?, message = ? WHERE id = ?', e.at, e.reason, e.message, id);
    },
    last(project, kind, name) {
      const r = oneOf<EventRecord>(db, lastEventRead(project, kind, name));
      return r && eventOf(r);
    },
    list(project, f) {
      // Five optional filters: 32 statement texts at most, each cached once. An edge's events are
      // its own (events_by_object) and those about it (events_by_edge).
      const sql = `SELECT id, at, project, kind, name, reason, message, edge FROM events WHERE project = ?${f.edge ? " AND ((kind = 'Edge' AND name = ?) OR edge = ?)" : ''}${f.kind ? ' AND kind = ?' : ''}${f.name ? ' AND name = ?' : ''}${f.reason ? ' AND reason = ?' : ''}${f.since !== undefined ? ' AND at >= ?' : ''} ORDER BY id DESC LIMIT ?`;
      return all<EventRecord>(
        db,
        sql,
        project,
        ...(f.edge ? [f.edge, f.edge] : []),
        ...(f.kind ? [f.kind] : []),
        ...(f.name ? [f.name] : []),
        ...(f.reason ? [f.reason] : []),
        ...(f.since !== undefined ? [f.since] : []),
        f.limit,
      ).map(eventOf);
    },
    lastId() {
      return one<{ m: number | null }>(db, 'SELECT MAX(id) m FROM events')?.m ?? 0;
    },
    after(id) {
      // id is the rowid: this reads only the rows added since the cursor.
      return all<{ id: number; project: string }>(db, 'SELECT id, project FROM events WHERE id > ? ORDER BY id', id);
    },
    prune(before, keep) {
      return (
        run(db, 'DELETE FROM events WHERE at < ?', before) +
        run(db, 'DELETE FROM events WHERE id <= (SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?)', keep)
      );
    },
  };
}
