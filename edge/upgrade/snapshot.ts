/**
 * @module The replica snapshot of a switch (docs/operations.md, "Switching, with a health gate and
 * rollback"): before the agent restarts into a new release it copies its replica database with
 * SQLite's online backup (a consistent copy while the database is open and written). On a rollback
 * the launcher puts the copy back, but only when the new release migrated the replica's schema (a
 * `schema_versions` row differs): the old binary refuses a file a newer one migrated, while an
 * unmigrated replica holds newer desired state and reports than the snapshot and is kept.
 *
 * What this does not do: hold the new version's migrations until the commit. A release that
 * migrates at start migrates during its trial; the snapshot is what undoes that on a rollback.
 */
import fs from 'node:fs';
import { openSqlite, type SqliteDatabase } from '../../sync/native.js';

/** Copies the open replica to `file` (by rename: a kill -9 midway leaves no half snapshot). */
export async function snapshotReplica(db: SqliteDatabase, file: string): Promise<void> {
  const tmp = `${file}.tmp`;
  fs.rmSync(tmp, { force: true });
  await db.backup(tmp);
  fs.renameSync(tmp, file);
}

function schemaVersions(file: string): string {
  const db = openSqlite(file, { readonly: true });
  try {
    const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_versions'").get();
    if (!has) return '';
    return JSON.stringify(db.prepare('SELECT component, version FROM schema_versions ORDER BY component').all());
  } finally {
    db.close();
  }
}

/**
 * Puts the snapshot back over the replica when their schema versions differ; returns what it did,
 * for the rollback's log line. Call only with no agent running on the replica (the launcher does).
 */
export function restoreIfMigrated(replica: string, snapshot: string): 'restored' | 'kept' | 'no snapshot' {
  if (!fs.existsSync(snapshot)) return 'no snapshot';
  if (fs.existsSync(replica) && schemaVersions(replica) === schemaVersions(snapshot)) return 'kept';
  const tmp = `${replica}.restore`;
  fs.copyFileSync(snapshot, tmp);
  // The WAL and shared-memory files belong to the migrated database: without them the copy opens alone.
  for (const suffix of ['-wal', '-shm']) fs.rmSync(replica + suffix, { force: true });
  fs.renameSync(tmp, replica);
  return 'restored';
}
