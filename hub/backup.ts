/**
 * @module `outpost hub backup`: a consistent online backup of a hub, taken while it keeps running
 * and writing; `outpost hub restore` (restore.ts) puts one back.
 *
 * - A hub on SQLite: one copy of DATA/hub.db, its whole state (documents, sync states, objects,
 *   tokens). `VACUUM INTO` copies the database in one read transaction: the hub's writes go on
 *   beside it (WAL) and the copy is the state at its start. SQLite's stepped backup API, used
 *   before, started over on every write by another connection: under ~9 applies a second it did
 *   not finish until the writes stopped.
 * - A hub on PostgreSQL (DATA/hub-database.json says so, database-marker.ts): its tables are in the
 *   database, and DATA/hub.db holds the edges' documents (after `hub migrate`, also the SQLite
 *   tables as they were then: stale). The backup is an archive of a pg_dump of the hub's schema and
 *   a copy of hub.db (backup-postgres.ts); without --database it is refused, naming the procedure,
 *   never a silent copy of the stale file.
 *
 * A backup holds secrets (tokens' hashes, Secret manifests sealed): it is created 0600, and never
 * over an existing file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openSqlite } from '../sync/native.js';
import { copySqlite, reserveFile } from './backup-files.js';
import { backupPostgresHub } from './backup-postgres.js';
import { MARKER_FILE, readDatabaseMarker } from './database-marker.js';

export interface BackupResult {
  /** Where the tables were: a copy of hub.db, or an archive of the database's dump and hub.db. */
  tables: 'sqlite' | 'postgres';
  bytes: number;
  ms: number;
  /** The database's schema that was dumped (PostgreSQL). */
  schema?: string;
}

export async function backupHub(dataDir: string, to: string, o: { database?: string } = {}): Promise<BackupResult> {
  const src = path.join(dataDir, 'hub.db');
  if (!fs.existsSync(src)) throw new Error(`${dataDir} holds no hub database (hub.db): check --data`);
  const marker = readDatabaseMarker(dataDir);
  // No marker: a hub that has not started since markers exist. Its hub.db without the hub's tables
  // is a PostgreSQL hub's documents file; with them it is taken for a SQLite hub's.
  const onPostgres = marker ? marker.tables === 'postgres' : !hasHubTables(src);
  if (o.database && marker?.tables === 'sqlite')
    throw new Error(
      `${dataDir}'s hub keeps its tables in ${src} (SQLite, since ${marker.since}, per ${path.join(dataDir, MARKER_FILE)}), not in a PostgreSQL database: back it up without --database (and without OUTPOST_DATABASE)`,
    );
  if (onPostgres && !o.database)
    throw new Error(
      `${dataDir}'s hub keeps its tables in PostgreSQL (${marker?.database ?? 'its --database'}${marker ? `, since ${marker.since}` : ''}): ${src} holds the edges' documents${marker ? ' (and, after `outpost hub migrate`, the SQLite tables as they were then, which the hub no longer uses)' : ''}, not the hub's state, so it is not backed up alone. Give the database too: outpost hub backup --data ${dataDir} --database URL (or OUTPOST_DATABASE) --to FILE takes both (a pg_dump of the hub's tables and a copy of hub.db), restored with outpost hub restore; docs/operations.md, "Backup and restore"`,
    );
  if (o.database) return { tables: 'postgres', ...(await backupPostgresHub(dataDir, to, o.database)) };
  const t0 = performance.now();
  reserveFile(to);
  try {
    copySqlite(src, to);
  } catch (err) {
    fs.rmSync(to, { force: true });
    throw err;
  }
  fs.chmodSync(to, 0o600);
  return { tables: 'sqlite', bytes: fs.statSync(to).size, ms: Math.round(performance.now() - t0) };
}

/** Whether the SQLite file holds the hub's tables (a SQLite hub's, or one migrated from it). */
function hasHubTables(file: string): boolean {
  const db = openSqlite(file, { readonly: true });
  try {
    return !!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'objects'").get();
  } finally {
    db.close();
  }
}
