/**
 * @module The hub's index of files the edges' workloads exported (table `data_files`; the only
 * SQL about it; docs/data.md). One row per (edge, workload, path): the newest version the hub
 * holds. The bytes are a blob of the edge's project, referred to as `DataFile/EDGE/WORKLOAD/PATH`
 * so the blob store keeps it while the row exists.
 */
import type { BlobDigest } from '../../core/blobs.js';
import type { DataFile } from '../../core/data.js';
import { setReferences } from './blobs.js';
import { all, bindDb, migrateTables, run, transaction, type SqlDb } from './sql.js';

export function migrateDataFiles(db: SqlDb): void {
  migrateTables(db, 'data-files');
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
  db: SqlDb,
  project: string,
  f: { edge: string; workload: string; path: string; size: number; digest: BlobDigest; modifiedAt: number },
  now = Date.now(),
): void {
  transaction(db, () => {
    run(
      db,
      `INSERT INTO data_files (project, edge, workload, path, size, digest, modified_at, uploaded_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (project, edge, workload, path) DO UPDATE SET size = excluded.size, digest = excluded.digest,
         modified_at = excluded.modified_at, uploaded_at = excluded.uploaded_at`,
      project,
      f.edge,
      f.workload,
      f.path,
      f.size,
      f.digest,
      f.modifiedAt,
      now,
    );
    setReferences(db, project, 'DataFile', refName(f.edge, f.workload, f.path), [f.digest], now);
  });
}

export function listDataFiles(
  db: SqlDb,
  project: string,
  edge: string,
  o: { workload?: string; path?: string } = {},
): DataFile[] {
  // The casts: PostgreSQL cannot tell the type of a parameter that is only compared with NULL.
  const rows = all<Row>(
    db,
    `SELECT * FROM data_files WHERE project = ? AND edge = ?
       AND (CAST(? AS TEXT) IS NULL OR workload = ?) AND (CAST(? AS TEXT) IS NULL OR path = ?)
     ORDER BY workload, path`,
    project,
    edge,
    o.workload ?? null,
    o.workload ?? null,
    o.path ?? null,
    o.path ?? null,
  );
  return rows.map(toFile);
}

/** Files whose newest version the sink has not forwarded yet, oldest first. */
export function unsunkDataFiles(db: SqlDb, limit: number): (DataFile & { project: string })[] {
  const rows = all<Row>(
    db,
    `SELECT * FROM data_files WHERE sink_digest IS NULL OR sink_digest != digest ORDER BY uploaded_at LIMIT ?`,
    limit,
  );
  return rows.map((r) => ({ ...toFile(r), project: r.project }));
}

/** The sink forwarded this version of a file. */
export function markSunk(db: SqlDb, project: string, f: DataFile): void {
  transaction(db, () =>
    run(
      db,
      'UPDATE data_files SET sink_digest = ? WHERE project = ? AND edge = ? AND workload = ? AND path = ?',
      f.digest,
      project,
      f.edge,
      f.workload,
      f.path,
    ),
  );
}

/** The data file index as hub/data sees it (`HubState.dataFiles`). */
export type DataFileTables = ReturnType<typeof sqlDataFileTables>;

/** The data file index of `db`, migrated on SQLite (PostgreSQL is migrated at start). */
export function sqlDataFileTables(db: SqlDb) {
  migrateDataFiles(db);
  return bindDb(db, { putDataFile, listDataFiles, unsunkDataFiles, markSunk });
}
