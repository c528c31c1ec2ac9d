/**
 * @module The one place where a query result becomes a typed row, for the SQLite implementations
 * of the hub's state modules (hub/state/*). Each state module declares the row type of its own
 * statements and maps it to its domain type; nothing outside hub/state/ runs SQL on hub tables.
 * Statements are cached per database (sync/sqlite.ts `cachedStatement`).
 */
import { cachedStatement, type SqliteDatabase } from '../../sync/sqlite.js';

type Param = string | number | bigint | null | Buffer;

/** The first row of a query, typed by its caller's declared row type; undefined when none. */
export function one<Row>(db: SqliteDatabase, sql: string, ...params: Param[]): Row | undefined {
  return cachedStatement(db, sql).get(...params) as Row | undefined;
}

/** Every row of a query, typed by its caller's declared row type. */
export function all<Row>(db: SqliteDatabase, sql: string, ...params: Param[]): Row[] {
  return cachedStatement(db, sql).all(...params) as Row[];
}

/** Runs a write; returns how many rows it changed. */
export function run(db: SqliteDatabase, sql: string, ...params: Param[]): number {
  return cachedStatement(db, sql).run(...params).changes;
}

/** A JSON column, parsed; a malformed value is a damaged database, named with its table and column. */
export function json<T>(text: string, where: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new Error(`the hub database holds malformed JSON in ${where}: restore the last backup`, { cause: err });
  }
}
