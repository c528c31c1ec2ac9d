/**
 * @module Where a data directory's hub keeps its tables: `DATA/hub-database.json`, written at every
 * start of the hub (and by `outpost hub migrate` and `outpost hub restore`), read by `outpost hub
 * backup`, which is given only `--data`. A hub on PostgreSQL keeps its tables there and only the
 * edges' documents in `DATA/hub.db`; after `hub migrate` that file also still holds the SQLite
 * tables as they were at the migration. A backup of the file alone would silently be a backup of
 * that stale state: with the marker, `hub backup` knows to take the database too, or to refuse.
 *
 * The marker names the database without its password (the URL is not a secret then, but the
 * file is 0600 anyway, in the 0700 data directory).
 */
import fs from 'node:fs';
import path from 'node:path';
import { createLogger } from '../core/logger.js';
import { redactUrl } from './state/pg/statements.js';

const log = createLogger('hub');

export const MARKER_FILE = 'hub-database.json';

export interface DatabaseMarker {
  /** Where the hub's tables are: DATA/hub.db, or a PostgreSQL database. */
  tables: 'sqlite' | 'postgres';
  /** The PostgreSQL URL without its password. */
  database?: string;
  /** When the data directory's hub started on these tables (ISO 8601). */
  since: string;
}

/** The marker of `dataDir`; undefined when there is none (a hub that never started since markers exist). */
export function readDatabaseMarker(dataDir: string): DatabaseMarker | undefined {
  const file = path.join(dataDir, MARKER_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const m = JSON.parse(text) as DatabaseMarker;
    if (m.tables === 'sqlite' || m.tables === 'postgres') return m;
  } catch {
    // answered below
  }
  throw new Error(
    `${file} is not what outpost writes there (where the hub keeps its tables): delete it and start the hub once with the flags it runs with (--database for PostgreSQL)`,
  );
}

/**
 * Records that `dataDir`'s hub keeps its tables in `database` (PostgreSQL), or in DATA/hub.db when
 * undefined; the file is replaced (a temporary file renamed over it) only when that changed.
 * Returns what it said before.
 */
export function writeDatabaseMarker(
  dataDir: string,
  database: string | undefined,
  now = Date.now(),
): DatabaseMarker | undefined {
  let before: DatabaseMarker | undefined;
  try {
    before = readDatabaseMarker(dataDir);
  } catch {
    before = undefined; // unreadable: written anew
  }
  const next: DatabaseMarker = database
    ? { tables: 'postgres', database: redactUrl(database), since: new Date(now).toISOString() }
    : { tables: 'sqlite', since: new Date(now).toISOString() };
  if (before && before.tables === next.tables && before.database === next.database) return before;
  const file = path.join(dataDir, MARKER_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
  return before;
}

/**
 * At a hub's start: records where its tables are. A data directory that ran on PostgreSQL and now
 * starts without --database goes back to the SQLite tables of its hub.db, as they were at `hub
 * migrate` (a way back, docs/operations.md): said at warn, since what changed in PostgreSQL since
 * is not there.
 */
export function recordTablesAtStart(dataDir: string, database: string | undefined): void {
  const before = writeDatabaseMarker(dataDir, database);
  if (!database && before?.tables === 'postgres')
    log.warn(
      { dataDir, database: before.database, since: before.since },
      `this data directory's hub kept its tables in PostgreSQL (${before.database}) since ${before.since}; started without --database, it now runs on the SQLite tables of ${path.join(dataDir, 'hub.db')}, which do not have what changed in PostgreSQL since: stop it and start it with --database (or OUTPOST_DATABASE) unless this is meant`,
    );
}
