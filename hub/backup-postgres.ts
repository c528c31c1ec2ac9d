/**
 * @module The backup of a hub whose tables are in PostgreSQL (backup.ts): one file, a gzipped tar
 * archive of
 *
 * - `outpost-backup.json`: what it is (format, version, the schema, the database without its
 *   password, the server's version, when);
 * - `database.dump`: `pg_dump --format=custom` of the hub's schema, one consistent snapshot taken
 *   while the hub and its replicas run (pg_dump reads in one repeatable-read transaction);
 * - `hub.db`: a consistent copy of DATA/hub.db (backup.ts copySqlite), the edges' documents this
 *   data directory's hub serves. Taken right after the dump: documents and tables are each
 *   consistent, and a hub started on the restore writes each edge's spec from the tables when the
 *   edge connects, as a replica taking over an edge does.
 *
 * Not in it, as for a SQLite hub: `tls/`, `secrets.key` (kept apart from the backups), the release
 * key, blob files (docs/operations.md, "Backup and restore"). With `--identity-key` the identity
 * is in the database's `hub_identity` table, sealed: the dump holds it, the key file does not.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { buildInfo } from '../core/version.js';
import { databaseFacts, pgProgram, runPgProgram } from './state/pg/programs.js';
import { redactUrl } from './state/pg/statements.js';
import { copySqlite, reserveFile } from './backup-files.js';

export const MANIFEST = 'outpost-backup.json';
export const DUMP = 'database.dump';
export const DOCUMENTS = 'hub.db';
export const BACKUP_FORMAT = 'outpost-hub-backup';
export const BACKUP_VERSION = 1;

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  version: number;
  tables: 'postgres';
  /** The schema dumped, and the one it is restored into. */
  schema: string;
  database: string;
  serverVersion: string;
  outpost: string;
  createdAt: string;
}

export async function backupPostgresHub(
  dataDir: string,
  to: string,
  database: string,
): Promise<{ bytes: number; ms: number; schema: string }> {
  const t0 = performance.now();
  const pgDump = pgProgram('pg_dump');
  const facts = await databaseFacts(database);
  if (!facts.tables.includes('objects'))
    throw new Error(
      `the database ${redactUrl(database)} holds no hub tables in schema ${facts.schema}: give --database the URL the hub runs with`,
    );
  reserveFile(to);
  // Beside the backup, so its parts take space where the operator chose; 0700.
  const work = fs.mkdtempSync(path.join(path.dirname(path.resolve(to)), '.outpost-backup-'));
  try {
    await runPgProgram(
      pgDump,
      [
        '--format=custom',
        '--no-owner',
        '--no-privileges',
        `--schema=${facts.schema}`,
        `--file=${path.join(work, DUMP)}`,
      ],
      database,
    );
    copySqlite(path.join(dataDir, 'hub.db'), path.join(work, DOCUMENTS));
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      version: BACKUP_VERSION,
      tables: 'postgres',
      schema: facts.schema,
      database: redactUrl(database),
      serverVersion: facts.serverVersion,
      outpost: buildInfo().version,
      createdAt: new Date().toISOString(),
    };
    fs.writeFileSync(path.join(work, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    await tar.c({ file: to, cwd: work, gzip: true, portable: true }, [MANIFEST, DUMP, DOCUMENTS]);
    fs.chmodSync(to, 0o600);
  } catch (err) {
    fs.rmSync(to, { force: true });
    throw err;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return { bytes: fs.statSync(to).size, ms: Math.round(performance.now() - t0), schema: facts.schema };
}
