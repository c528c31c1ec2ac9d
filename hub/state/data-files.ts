/**
 * @module The hub's index of files the edges' workloads exported (table `data_files`; the only
 * SQL about it; docs/data.md). One row per (edge, workload, path): the newest version the hub
 * holds. The bytes are a blob of the edge's project, referred to as `DataFile/EDGE/WORKLOAD/PATH`
 * so the blob store keeps it while the row exists.
 */
import type { BlobDigest } from '../../core/blobs.js';
import type { DataFile } from '../../core/data.js';
import { buildInfo } from '../../core/version.js';
import { cachedStatement, inTransaction, migrate, type SqliteDatabase } from '../../sync/sqlite.js';
import { setReferences } from './blobs.js';

const MIGRATIONS = [
  {
    version: 1,
    sql: `
      CREATE TABLE data_files (
        project TEXT NOT NULL,
        edge TEXT NOT NULL,
        workload TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        digest TEXT NOT NULL,
        modified_at INTEGER NOT NULL,
        uploaded_at INTEGER NOT NULL,
        PRIMARY KEY (project, edge, workload, path)
      );
    `,
  },
  {
    version: 2,
    sql: `
      -- The digest the S3 sink last forwarded for this path (hub/data/s3-sink.ts); NULL: not yet.
      ALTER TABLE data_files ADD COLUMN sink_digest TEXT;
      CREATE INDEX data_files_unsunk ON data_files (uploaded_at) WHERE sink_digest IS NULL OR sink_digest != digest;
    `,
  },
];

export function migrateDataFiles(db: SqliteDatabase): void {
  migrate(db, 'data-files', MIGRATIONS, buildInfo().version);
}

interface Row {
  project: string;
  edge: string;
  workload: string;
  path: string;
  size: number;
  digest: string;
  modified_at: number;
  uploaded_at: number;
}

const toFile = (r: Row): DataFile => ({
  edge: r.edge,
  workload: r.workload,
  path: r.path,
  size: r.size,
  digest: r.digest as BlobDigest,
  modifiedAt: new Date(r.modified_at).toISOString(),
  uploadedAt: new Date(r.uploaded_at).toISOString(),
});

const refName = (edge: string, workload: string, path: string) => `${edge}/${workload}/${path}`;

/** Records a file (or its newer version) and makes its blob referred to by it, in one transaction. */
export function putDataFile(
  db: SqliteDatabase,
  project: string,
  f: { edge: string; workload: string; path: string; size: number; digest: BlobDigest; modifiedAt: number },
  now = Date.now(),
): void {
  inTransaction(db, () => {
    cachedStatement(
      db,
      `INSERT INTO data_files (project, edge, workload, path, size, digest, modified_at, uploaded_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (project, edge, workload, path) DO UPDATE SET size = excluded.size, digest = excluded.digest,
         modified_at = excluded.modified_at, uploaded_at = excluded.uploaded_at`,
    ).run(project, f.edge, f.workload, f.path, f.size, f.digest, f.modifiedAt, now);
    setReferences(db, project, 'DataFile', refName(f.edge, f.workload, f.path), [f.digest], now);
  });
}

export function listDataFiles(
  db: SqliteDatabase,
  project: string,
  edge: string,
  o: { workload?: string; path?: string } = {},
): DataFile[] {
  const rows = cachedStatement(
    db,
    `SELECT * FROM data_files WHERE project = ? AND edge = ?
       AND (? IS NULL OR workload = ?) AND (? IS NULL OR path = ?)
     ORDER BY workload, path`,
  ).all(project, edge, o.workload ?? null, o.workload ?? null, o.path ?? null, o.path ?? null) as Row[];
  return rows.map(toFile);
}

/** Files whose newest version the sink has not forwarded yet, oldest first. */
export function unsunkDataFiles(db: SqliteDatabase, limit: number): (DataFile & { project: string })[] {
  const rows = cachedStatement(
    db,
    `SELECT * FROM data_files WHERE sink_digest IS NULL OR sink_digest != digest ORDER BY uploaded_at LIMIT ?`,
  ).all(limit) as Row[];
  return rows.map((r) => ({ ...toFile(r), project: r.project }));
}

/** The sink forwarded this version of a file. */
export function markSunk(db: SqliteDatabase, project: string, f: DataFile): void {
  inTransaction(db, () =>
    cachedStatement(
      db,
      'UPDATE data_files SET sink_digest = ? WHERE project = ? AND edge = ? AND workload = ? AND path = ?',
    ).run(f.digest, project, f.edge, f.workload, f.path),
  );
}
