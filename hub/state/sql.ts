/**
 * @module The one place where a query result becomes a typed row, for the SQLite implementations
 * of the hub's state modules (hub/state/*). Each state module declares the row type of its own
 * statements and maps it to its domain type; nothing outside hub/state/ runs SQL on hub tables.
 * Statements are cached per database (sync/sqlite.ts `cachedStatement`).
 */
import { buildInfo } from '../../core/version.js';
import { cachedStatement, inTransaction, migrate, type SqliteDatabase } from '../../sync/sqlite.js';
import { SyncPostgres } from './pg/sync-client.js';
import type { Param, Read } from './read.js';
import { migrationsOf, type SchemaComponent } from './schema/index.js';

export type { Param, Read };

/**
 * The database a state module runs its SQL on: the hub's SQLite file, or PostgreSQL through the
 * synchronous client (issue #22). The modules write one SQL text for both: `?` placeholders,
 * `ON CONFLICT` upserts, `RETURNING`, `CAST(... AS INTEGER)`; where a statement cannot be the same,
 * `isPostgres` picks, in one place.
 */
export type SqlDb = SqliteDatabase | SyncPostgres;

export const isPostgres = (db: SqlDb): db is SyncPostgres => db instanceof SyncPostgres;

/** `column` contains the next parameter as a substring (`instr` in SQLite, `strpos` in PostgreSQL). */
export function containsParam(db: SqlDb, column: string): string {
  return isPostgres(db) ? `strpos(${column}, ?) > 0` : `instr(${column}, ?) > 0`;
}

/**
 * `column` is one of the strings of a JSON array given as the next parameter. On PostgreSQL as
 * `= ANY(ARRAY(...))`, which the planner answers from the column's index: `IN (SELECT
 * json_array_elements_text(...))` made it hash the whole table (it guesses 100 rows from the
 * function), a scan of every edge for each handshake's read of one (docs/benchmarks.md, issue #22).
 */
export function inJsonList(db: SqlDb, column: string): string {
  return isPostgres(db) ? pgInJsonList(column) : `${column} IN (SELECT value FROM json_each(?))`;
}

/** `inJsonList` on PostgreSQL (for the reads of many keys only PostgreSQL runs, `keyed`). */
export const pgInJsonList = (column: string) =>
  `${column} = ANY(ARRAY(SELECT json_array_elements_text(CAST(? AS json))))`;

/** A subquery of the strings of a JSON array given as the next parameter (`NOT IN (...)` a list; for `IN`, `inJsonList`). */
export function jsonListParam(db: SqlDb): string {
  return isPostgres(db) ? 'SELECT json_array_elements_text(CAST(? AS json))' : 'SELECT value FROM json_each(?)';
}

/**
 * Runs `fn` in one transaction on either database, joining an open one. `immediate` takes SQLite's
 * write lock at the start, for a read-then-write another process may race; PostgreSQL needs no
 * such mode (its statements lock the rows they read with `FOR UPDATE`, see `forUpdate`).
 */
export function transaction<T>(db: SqlDb, fn: () => T, opts?: { immediate?: boolean }): T {
  if (isPostgres(db)) return db.transaction(fn);
  return opts?.immediate && !db.inTransaction ? db.transaction(fn).immediate() : inTransaction(db, fn);
}

/**
 * ` FOR UPDATE` on PostgreSQL, to append to a SELECT whose row the same transaction then updates:
 * another replica's transaction reading the row waits for this one and reads the updated row.
 * Nothing on SQLite, whose immediate transaction holds the whole file's write lock instead.
 */
export function forUpdate(db: SqlDb): string {
  return isPostgres(db) ? ' FOR UPDATE' : '';
}

/**
 * Brings a table group's schema up to date on SQLite (each owner calls this as it opens). On
 * PostgreSQL, nothing: the whole schema is migrated once at start, under an advisory lock, by
 * hub/state/pg/schema.ts `migratePostgres` from the same migrations (hub/state/schema/).
 */
export function migrateTables(db: SqlDb, component: SchemaComponent): void {
  if (!isPostgres(db)) migrate(db, component, migrationsOf(component), buildInfo().version);
}

/** `LIMIT ?` with no limit: SQLite's -1 is refused by PostgreSQL; this is the same for both. */
export const NO_LIMIT = Number.MAX_SAFE_INTEGER;

/** The first row of a query, typed by its caller's declared row type; undefined when none. */
export function one<Row>(db: SqlDb, sql: string, ...params: Param[]): Row | undefined {
  if (isPostgres(db)) return db.one<Row>(sql, ...params);
  return cachedStatement(db, sql).get(...params) as Row | undefined;
}

/** Every row of a query, typed by its caller's declared row type. */
export function all<Row>(db: SqlDb, sql: string, ...params: Param[]): Row[] {
  if (isPostgres(db)) return db.all<Row>(sql, ...params);
  return cachedStatement(db, sql).all(...params) as Row[];
}

/**
 * `single`, a read of one key, which `prefetch` may answer from `many(keys)` read once for every
 * key of its group (the reads of the same statement with the same `groupParams`). `many` runs on
 * PostgreSQL only (`pgInJsonList`).
 */
export function keyed(
  single: Read,
  column: string,
  key: string,
  many: (keys: string[]) => Read,
  ...groupParams: Param[]
): Read {
  return { ...single, many: { group: `${single.sql}\u0000${JSON.stringify(groupParams)}`, key, column, read: many } };
}

export const read = (sql: string, ...params: Param[]): Read => ({ sql, params });

export function allOf<Row>(db: SqlDb, r: Read): Row[] {
  return all<Row>(db, r.sql, ...r.params);
}

export function oneOf<Row>(db: SqlDb, r: Read): Row | undefined {
  return one<Row>(db, r.sql, ...r.params);
}

/**
 * On PostgreSQL: runs reads that several state modules are about to make, in one round trip, and
 * answers them from their rows when they are made in this turn of the event loop before any
 * write (SyncPostgres `prefetch`). A read not given ahead, or given with other parameters, simply
 * runs: the list only saves round trips. Nothing on SQLite.
 */
export function prefetch(db: SqlDb, reads: Read[]): void {
  if (isPostgres(db)) db.prefetch(reads);
}

/**
 * Runs a write whose result its caller reads (the rows it changed, a refusal it answers, such as
 * a name already taken) at once, in a round trip of its own on PostgreSQL; returns how many rows it
 * changed. A write nobody reads is `write`'s.
 */
export function run(db: SqlDb, sql: string, ...params: Param[]): number {
  if (isPostgres(db)) return db.run(sql, ...params);
  return cachedStatement(db, sql).run(...params).changes;
}

/**
 * A write whose result nobody reads, made part of the open unit of work: the one way a state
 * module writes without reading the result (issue #43 item 5; `run` for the others). On SQLite it
 * runs at once, in the transaction that is open, if any. On PostgreSQL it is queued and goes with
 * the unit's next round trip instead of one of its own (a round trip is most of what a statement
 * costs there: docs/benchmarks.md, issue #22): inside a transaction with its next statement or
 * its COMMIT (a refusal fails the transaction whole, thrown where `transaction` was called; a
 * rollback takes the write with it); outside one with the next statement or within PG_GATHER.
 * Either way it runs before any statement made after it on this connection, so a read sees it.
 * Outside a transaction a refusal is logged with its statement, writes the database was away for
 * go with the next round trip, and the skip cache below is forgotten (`alreadyWritten`): a write
 * must not be skipped for one that never ran.
 */
export function write(db: SqlDb, sql: string, ...params: Param[]): void {
  if (isPostgres(db)) db.defer(sql, ...params);
  else cachedStatement(db, sql).run(...params);
}

/** What alreadyWritten recorded, per client: per edge, per key; with the client's count of lost writes then. */
const written = new WeakMap<SyncPostgres, { lost: number; byEdge: Map<string, Map<string, string>> }>();

/**
 * The skip cache of projections, on PostgreSQL: whether this process already wrote `value` (or
 * what it returns, computed only there) under (`edge`, `key`) since the edge last connected here
 * (a projection row, an inventory digest); records it when not. Every report of an edge projects
 * the same rows again, mostly unchanged (no data deliveries, no upgrade, the same workloads), and
 * each write skipped is a statement the database does not run, and for the inventory a read (a
 * round trip) it does not make. Forgotten when the edge connects or is removed (`forgetWritten`:
 * another replica may have written since), and whole when the unit of work lost a write (refused
 * or dropped outside a transaction: SyncPostgres `lostWrites`), which may have been one recorded.
 * Separate from `write` because it answers another question (is the write needed at all, from what
 * this process wrote) for projections only: an event or a lease is never skipped.
 * Always false on SQLite, where a statement costs no round trip and the projection's write can be
 * rolled back with the sync transaction it runs in (a value kept for a write undone would skip the
 * next one); likewise inside a PostgreSQL transaction: nothing is recorded there.
 */
export function alreadyWritten(db: SqlDb, edge: string, key: string, value: string | (() => string)): boolean {
  if (!isPostgres(db) || db.inTransaction) return false;
  if (typeof value === 'function') value = value();
  let cache = written.get(db);
  if (!cache || cache.lost !== db.lostWrites) written.set(db, (cache = { lost: db.lostWrites, byEdge: new Map() }));
  let mine = cache.byEdge.get(edge);
  if (!mine) cache.byEdge.set(edge, (mine = new Map()));
  if (mine.get(key) === value) return true;
  mine.set(key, value);
  return false;
}

/**
 * Projects the part of an edge's report that its owning module keeps as one JSON body per edge in
 * `table` (columns edge, body): upserted, or deleted when the report has none (`write`), and
 * skipped on PostgreSQL when written so before under `key` (most reports carry none).
 */
export function projectEdgeBody(db: SqlDb, table: string, key: string, edge: string, body: unknown): void {
  if (alreadyWritten(db, edge, key, () => JSON.stringify(body ?? null))) return;
  if (!body) write(db, `DELETE FROM ${table} WHERE edge = ?`, edge);
  else
    write(
      db,
      `INSERT INTO ${table} (edge, body) VALUES (?, ?) ON CONFLICT(edge) DO UPDATE SET body = excluded.body`,
      edge,
      JSON.stringify(body),
    );
}

/**
 * Forgets what alreadyWritten recorded for an edge (it connected: another replica may have written
 * since; or it was removed), or only its keys that start with `prefix`.
 */
export function forgetWritten(db: SqlDb, edge: string, prefix?: string): void {
  if (!isPostgres(db)) return;
  const byEdge = written.get(db)?.byEdge;
  if (prefix === undefined) byEdge?.delete(edge);
  else for (const k of byEdge?.get(edge)?.keys() ?? []) if (k.startsWith(prefix)) byEdge!.get(edge)!.delete(k);
}

/** A JSON column, parsed; a malformed value is a damaged database, named with its table and column. */
export function json<T>(text: string, where: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new Error(`the hub database holds malformed JSON in ${where}: restore the last backup`, { cause: err });
  }
}

/** `fn` with its database given: what a state module's interface exposes of a function over `db`. */
export type BoundToDb<F> = F extends (db: SqlDb, ...args: infer A) => infer R ? (...args: A) => R : never;

/**
 * The functions of a state module written over a database (`fn(db, ...)`), each given `db`: its
 * interface object, so callers outside hub/state never hold the database.
 */
export function bindDb<T extends Record<string, (db: SqlDb, ...args: never[]) => unknown>>(
  db: SqlDb,
  fns: T,
): { [K in keyof T]: BoundToDb<T[K]> } {
  return Object.fromEntries(Object.entries(fns).map(([k, fn]) => [k, (...args: never[]) => fn(db, ...args)])) as {
    [K in keyof T]: BoundToDb<T[K]>;
  };
}
