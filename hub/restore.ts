/**
 * @module `outpost hub restore --data DIR --from FILE [--database URL]`: puts a backup of
 * `outpost hub backup` (backup.ts) back, into a data directory without a hub.db, with the hub
 * stopped (a new hub is then started on DIR).
 *
 * - A SQLite hub's backup (a SQLite file) becomes DIR/hub.db; stale `hub.db-wal`/`hub.db-shm`
 *   there, which SQLite would replay onto it, are removed. `--database` is refused: that backup
 *   has no PostgreSQL part (`outpost hub migrate` moves a restored SQLite hub afterwards).
 * - A PostgreSQL hub's backup (backup-postgres.ts) needs `--database`, an **empty** database (no
 *   table in the backup's schema: nothing is ever merged): its dump goes in with pg_restore in one
 *   transaction (a failure leaves the database as it was), then its hub.db becomes DIR/hub.db.
 *
 * Either way DIR/hub-database.json then says where the tables are (database-marker.ts). What a
 * backup does not hold (tls/, secrets.key, the release key: docs/operations.md) is copied into
 * DIR by the operator, as before.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { writeDatabaseMarker } from './database-marker.js';
import { BACKUP_FORMAT, BACKUP_VERSION, DOCUMENTS, DUMP, MANIFEST, type BackupManifest } from './backup-postgres.js';
import { databaseFacts, pgProgram, runPgProgram } from './state/pg/programs.js';
import { redactUrl } from './state/pg/statements.js';

export interface RestoreResult {
  tables: 'sqlite' | 'postgres';
  /** The PostgreSQL backup's manifest. */
  manifest?: BackupManifest;
  ms: number;
}

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0');
const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);

/** What kind of backup `file` is, by its first bytes. */
function kindOf(file: string): 'sqlite' | 'archive' {
  const head = Buffer.alloc(16);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, head, 0, 16, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (head.equals(SQLITE_MAGIC)) return 'sqlite';
  if (head.subarray(0, 2).equals(GZIP_MAGIC)) return 'archive';
  throw new Error(`${file} is not a backup of outpost hub backup (neither a SQLite file nor its archive)`);
}

export async function restoreHub(dataDir: string, from: string, o: { database?: string } = {}): Promise<RestoreResult> {
  const t0 = performance.now();
  if (!fs.existsSync(from)) throw new Error(`${from} does not exist: give --from the file outpost hub backup wrote`);
  const target = path.join(dataDir, 'hub.db');
  if (fs.existsSync(target))
    throw new Error(
      `${target} exists: restore into a data directory without a hub.db (stop that hub and move hub.db, hub.db-wal and hub.db-shm aside to replace it)`,
    );
  const kind = kindOf(from);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (kind === 'sqlite') {
    if (o.database)
      throw new Error(
        `${from} is the backup of a hub on SQLite (its whole state is the file): restore it without --database (and without OUTPOST_DATABASE); to move it to PostgreSQL afterwards, run outpost hub migrate`,
      );
    place(from, target, 'copy');
    writeDatabaseMarker(dataDir, undefined);
    return { tables: 'sqlite', ms: Math.round(performance.now() - t0) };
  }

  const work = fs.mkdtempSync(path.join(dataDir, '.outpost-restore-'));
  try {
    await tar.x({ file: from, cwd: work, strict: true, filter: (p) => [MANIFEST, DUMP, DOCUMENTS].includes(p) });
    const manifest = readManifest(path.join(work, MANIFEST), from);
    if (!o.database)
      throw new Error(
        `${from} is the backup of a hub on PostgreSQL (${manifest.database}, taken ${manifest.createdAt}): give --database URL (or OUTPOST_DATABASE) of an empty database to restore its tables into (createdb a new one)`,
      );
    for (const part of [DUMP, DOCUMENTS])
      if (!fs.existsSync(path.join(work, part))) throw new Error(`${from} lacks its ${part}: it is not a whole backup`);
    const pgRestore = pgProgram('pg_restore');
    const facts = await databaseFacts(o.database, manifest.schema);
    if (facts.tables.length > 0)
      throw new Error(
        `the database ${redactUrl(o.database)} already holds tables in schema ${manifest.schema} (${facts.tables.slice(0, 5).join(', ')}${facts.tables.length > 5 ? ', ...' : ''}): restore into an empty database (createdb a new one); nothing was changed`,
      );
    await runPgProgram(
      pgRestore,
      [
        '--no-owner',
        '--no-privileges',
        '--exit-on-error',
        '--single-transaction',
        `--schema=${manifest.schema}`,
        path.join(work, DUMP),
      ],
      o.database,
    );
    place(path.join(work, DOCUMENTS), target, 'move');
    writeDatabaseMarker(dataDir, o.database);
    return { tables: 'postgres', manifest, ms: Math.round(performance.now() - t0) };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

function readManifest(file: string, from: string): BackupManifest {
  let m: Partial<BackupManifest>;
  try {
    m = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<BackupManifest>;
  } catch {
    throw new Error(`${from} is an archive, but not one outpost hub backup wrote (no ${MANIFEST})`);
  }
  if (m.format !== BACKUP_FORMAT || m.tables !== 'postgres' || typeof m.schema !== 'string')
    throw new Error(`${from} is an archive, but not one outpost hub backup wrote (${MANIFEST} says otherwise)`);
  if (m.version !== BACKUP_VERSION)
    throw new Error(
      `${from} is a backup of format version ${m.version}, this outpost knows ${BACKUP_VERSION}: restore it with the outpost that took it (${m.outpost ?? 'unknown'}) or newer`,
    );
  return m as BackupManifest;
}

/**
 * Puts the documents' file in place as DIR/hub.db (0600), after removing a stale WAL and shared
 * memory file, which SQLite would replay onto it; a partial copy never has the final name.
 */
function place(src: string, target: string, how: 'copy' | 'move'): void {
  for (const stale of [`${target}-wal`, `${target}-shm`]) fs.rmSync(stale, { force: true });
  const tmp = `${target}.restoring`;
  if (how === 'copy') fs.copyFileSync(src, tmp);
  else fs.renameSync(src, tmp);
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, target);
}
