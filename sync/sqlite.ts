/**
 * @module SQLite conventions shared by the hub's and the edge's stores: WAL, forward-only migrations
 * recorded per component, and a clear refusal when a newer binary already migrated the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { openSqlite, type SqliteDatabase } from './native.js';

export type { SqliteDatabase };

export interface Migration {
  version: number;
  sql: string;
}

/**
 * Opens (creating if needed) a database with the pragmas every Outpost store uses.
 * `walAutocheckpointPages`: the WAL is copied back into the database file (a checkpoint, with two
 * fsyncs) once it holds this many pages; SQLite's default is 1,000 (4 MB).
 */
/** The error (or a cause of it) says the file is not an intact SQLite database. */
export function isCorruptDatabase(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB')) return true;
  }
  return false;
}

/**
 * Fails with a SQLITE_CORRUPT error when the database's pages do not check out (`quick_check`:
 * linear in its size, so for the edge's small replica at start, not for the hub's).
 */
export function quickCheck(db: SqliteDatabase): void {
  const r = db.pragma('quick_check', { simple: true });
  if (r !== 'ok')
    throw Object.assign(new Error(`${db.name} failed its integrity check: ${String(r).slice(0, 200)}`), {
      code: 'SQLITE_CORRUPT',
    });
}

export function openDatabase(file: string, opts: { walAutocheckpointPages?: number } = {}): SqliteDatabase {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new Error(`cannot create data directory ${path.dirname(file)}: check the path and its permissions`, {
      cause: err,
    });
  }
  let db: SqliteDatabase;
  try {
    db = openSqlite(file);
  } catch (err) {
    throw new Error(`cannot open database ${file}`, { cause: err });
  }
  db.pragma('journal_mode = WAL');
  // NORMAL in WAL mode: a committed transaction survives a process crash (kill -9); only an OS
  // crash or power loss may lose the last transactions, never corrupt the file.
  db.pragma('synchronous = NORMAL');
  if (opts.walAutocheckpointPages !== undefined)
    db.pragma(`wal_autocheckpoint = ${Math.max(0, Math.floor(opts.walAutocheckpointPages))}`);
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.exec('CREATE TABLE IF NOT EXISTS schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL)');
  return db;
}

/**
 * Applies the migrations of one component newer than the recorded version, each in a transaction.
 * A file written by a newer binary is refused: running an old binary on it could lose data.
 */
/** How a component's schema version is recorded: in the SQLite files and in the hub's PostgreSQL alike. */
export const RECORD_SCHEMA_VERSION =
  'INSERT INTO schema_versions (component, version) VALUES (?, ?) ON CONFLICT(component) DO UPDATE SET version = excluded.version';

/**
 * The migrations to apply to a schema at version `current`, in order. A schema newer than every
 * migration was written by a newer outpost: refused, with the fix (`where` names the database).
 */
export function pendingMigrations(
  component: string,
  migrations: Migration[],
  current: number,
  where: string,
  binaryVersion: string,
): Migration[] {
  const latest = migrations.reduce((m, x) => Math.max(m, x.version), 0);
  if (current > latest) {
    throw new Error(
      `the ${component} data in ${where} has schema version ${current}, but this outpost ${binaryVersion} only knows up to ${latest}: ` +
        `it was written by a newer outpost. Run the newer binary, or restore a backup taken before the upgrade.`,
    );
  }
  return [...migrations].sort((a, b) => a.version - b.version).filter((m) => m.version > current);
}

export function migrate(db: SqliteDatabase, component: string, migrations: Migration[], binaryVersion: string): void {
  const row = db.prepare('SELECT version FROM schema_versions WHERE component = ?').get(component) as
    { version: number } | undefined;
  for (const m of pendingMigrations(component, migrations, row?.version ?? 0, db.name, binaryVersion)) {
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare(RECORD_SCHEMA_VERSION).run(component, m.version);
    })();
  }
}

type AnyStatement = Database.Statement<unknown[], unknown>;

/** What callers of cachedStatement use of a statement. */
export interface CachedStatement {
  run(...params: unknown[]): Database.RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
}

const statements = new WeakMap<SqliteDatabase, Map<string, CachedStatement>>();

/**
 * A reading statement whose rows are built here: better-sqlite3 13 builds a row object through a
 * function it compiles with `Function()` for the statement's column names, and compiles it anew
 * on every execution of a statement that sorts or deduplicates (ORDER BY, DISTINCT: checked,
 * one `Function()` per `get`/`all`/`iterate`), which made `rowFactory` a top entry of the hub's
 * profile (docs/benchmarks.md). In raw mode it returns arrays; the object is built from the
 * column names read once. Same rows: keys in column order, a later duplicate name wins.
 */
function rowsFromArrays(st: AnyStatement): CachedStatement {
  const names = st.columns().map((c) => c.name);
  st.raw(true);
  const row = (values: unknown[]): Record<string, unknown> => {
    const r: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) r[names[i]!] = values[i];
    return r;
  };
  return {
    run: (...params) => st.run(...params),
    get: (...params) => {
      const v = st.get(...params) as unknown[] | undefined;
      return v === undefined ? undefined : row(v);
    },
    all: (...params) => (st.all(...params) as unknown[][]).map(row),
    *iterate(...params) {
      for (const v of st.iterate(...params) as IterableIterator<unknown[]>) yield row(v);
    },
  };
}

/**
 * A prepared statement cached per database: preparing is expensive (it was the top self-time
 * entry in the hub's profile under load), and hot paths run the same few statements.
 */
export function cachedStatement(db: SqliteDatabase, sql: string): CachedStatement {
  let m = statements.get(db);
  if (!m) statements.set(db, (m = new Map()));
  let st = m.get(sql);
  if (!st) {
    const prepared = db.prepare<unknown[], unknown>(sql);
    m.set(sql, (st = prepared.reader ? rowsFromArrays(prepared) : prepared));
  }
  return st;
}

/**
 * Runs `fn` in a transaction, joining the caller's if one is open (an inner failure then rolls
 * back the whole outer transaction, which is what every caller here wants). Unlike
 * better-sqlite3's `db.transaction(fn)`, which prepares its BEGIN/COMMIT statements anew for
 * every new `fn` (a measurable cost on the hub's hot path), the statements are prepared once.
 */
/**
 * Runs `fn` atomically on its own: in a transaction of its own, or, inside the caller's, in a
 * savepoint that is rolled back alone when `fn` throws (the caller's other writes stay). For one
 * unit of several in a batched transaction (sync/store.ts `receive` under the server's inbox).
 */
export function inSavepoint<T>(db: SqliteDatabase, fn: () => T): T {
  if (!db.inTransaction) return inTransaction(db, fn);
  cachedStatement(db, 'SAVEPOINT unit').run();
  try {
    const out = fn();
    cachedStatement(db, 'RELEASE unit').run();
    return out;
  } catch (err) {
    if (db.inTransaction) {
      cachedStatement(db, 'ROLLBACK TO unit').run();
      cachedStatement(db, 'RELEASE unit').run();
    }
    throw err;
  }
}

export function inTransaction<T>(db: SqliteDatabase, fn: () => T): T {
  if (db.inTransaction) return fn();
  cachedStatement(db, 'BEGIN').run();
  try {
    const out = fn();
    cachedStatement(db, 'COMMIT').run();
    return out;
  } catch (err) {
    if (db.inTransaction) cachedStatement(db, 'ROLLBACK').run();
    throw err;
  }
}
