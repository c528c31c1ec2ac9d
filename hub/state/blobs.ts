/**
 * @module The hub's blob index (tables `blobs` and `blob_refs`; the only SQL about them). A blob
 * is indexed per project (the same bytes uploaded in two projects are two rows and one file);
 * references name what needs it (`AgentUpgrade/NAME`, `Edge/NAME` for what an edge uploaded).
 * A blob with no reference becomes collectable `unreferenced_since` plus the grace period.
 */
import type { BlobDigest, BlobInfo } from '../../core/blobs.js';
import type { Migration } from '../../sync/sqlite.js';
import { all, migrateTables, one, run, transaction, type SqlDb } from './sql.js';

export const BLOB_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE blobs (
        project TEXT NOT NULL,
        digest TEXT NOT NULL,
        size INTEGER NOT NULL,
        media_type TEXT NOT NULL,
        uploaded_by TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        -- NULL while something refers to it; else since when nothing does (GC after the grace period).
        unreferenced_since INTEGER,
        PRIMARY KEY (project, digest)
      );
      CREATE INDEX blobs_by_digest ON blobs (digest);
      CREATE TABLE blob_refs (
        project TEXT NOT NULL,
        digest TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        PRIMARY KEY (project, digest, kind, name)
      );
      CREATE INDEX blob_refs_by_owner ON blob_refs (project, kind, name);
    `,
  },
];

export function migrateBlobs(db: SqlDb): void {
  migrateTables(db, 'blobs', BLOB_MIGRATIONS);
}

interface Row {
  project: string;
  digest: string;
  size: number;
  media_type: string;
  uploaded_by: string;
  created_at: number;
  unreferenced_since: number | null;
}

function refsOf(db: SqlDb, project: string, digest: string): string[] {
  return all<{ kind: string; name: string }>(
    db,
    'SELECT kind, name FROM blob_refs WHERE project = ? AND digest = ? ORDER BY kind, name',
    project,
    digest,
  ).map((r) => `${r.kind}/${r.name}`);
}

function toInfo(db: SqlDb, r: Row): BlobInfo {
  return {
    digest: r.digest as BlobDigest,
    size: r.size,
    mediaType: r.media_type,
    project: r.project,
    uploadedBy: r.uploaded_by,
    createdAt: new Date(r.created_at).toISOString(),
    references: refsOf(db, r.project, r.digest),
  };
}

/** Records a blob in a project (or refreshes nothing if it is already there); returns it. */
export function putBlob(
  db: SqlDb,
  b: { project: string; digest: BlobDigest; size: number; mediaType: string; uploadedBy: string },
  now = Date.now(),
): BlobInfo {
  return transaction(db, () => {
    run(
      db,
      `INSERT INTO blobs (project, digest, size, media_type, uploaded_by, created_at, unreferenced_since)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, digest) DO NOTHING`,
      b.project,
      b.digest,
      b.size,
      b.mediaType,
      b.uploadedBy,
      now,
      now,
    );
    return getBlob(db, b.project, b.digest)!;
  });
}

export function getBlob(db: SqlDb, project: string, digest: BlobDigest): BlobInfo | undefined {
  const r = one<Row>(db, 'SELECT * FROM blobs WHERE project = ? AND digest = ?', project, digest);
  return r ? toInfo(db, r) : undefined;
}

export function listBlobs(db: SqlDb, project: string | '*'): BlobInfo[] {
  const rows =
    project === '*'
      ? all<Row>(db, 'SELECT * FROM blobs ORDER BY project, created_at, digest')
      : all<Row>(db, 'SELECT * FROM blobs WHERE project = ? ORDER BY created_at, digest', project);
  return rows.map((r) => toInfo(db, r));
}

/** Bytes a project's blobs take (for its quota). */
export function projectBytes(db: SqlDb, project: string): number {
  // The cast: PostgreSQL's SUM of a BIGINT is a NUMERIC, which its client gives as a string.
  return one<{ n: number }>(
    db,
    'SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) n FROM blobs WHERE project = ?',
    project,
  )!.n;
}

/** Removes a blob's row and its references; true when no project holds the digest any more (delete the file). */
export function deleteBlob(db: SqlDb, project: string, digest: BlobDigest): boolean {
  return transaction(db, () => {
    run(db, 'DELETE FROM blob_refs WHERE project = ? AND digest = ?', project, digest);
    run(db, 'DELETE FROM blobs WHERE project = ? AND digest = ?', project, digest);
    return !digestKnown(db, digest);
  });
}

/** True when the hub holds this digest in any project (so its file must stay). */
export function digestKnown(db: SqlDb, digest: BlobDigest): boolean {
  return !!one(db, 'SELECT 1 FROM blobs WHERE digest = ? LIMIT 1', digest);
}

/**
 * Makes `owner` (`kind`, `name`) refer to exactly `digests` in `project`: references it no longer
 * makes are dropped, and blobs left with none start their grace period. Digests the project does
 * not hold are ignored (the caller validated them).
 */
export function setReferences(
  db: SqlDb,
  project: string,
  kind: string,
  name: string,
  digests: BlobDigest[],
  now = Date.now(),
): void {
  transaction(db, () => {
    const before = all<{ digest: string }>(
      db,
      'SELECT digest FROM blob_refs WHERE project = ? AND kind = ? AND name = ?',
      project,
      kind,
      name,
    ).map((r) => r.digest);
    run(db, 'DELETE FROM blob_refs WHERE project = ? AND kind = ? AND name = ?', project, kind, name);
    for (const d of digests) {
      if (!one(db, 'SELECT 1 FROM blobs WHERE project = ? AND digest = ?', project, d)) continue;
      run(
        db,
        'INSERT INTO blob_refs (project, digest, kind, name) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
        project,
        d,
        kind,
        name,
      );
      run(db, 'UPDATE blobs SET unreferenced_since = NULL WHERE project = ? AND digest = ?', project, d);
    }
    for (const d of before) {
      if (one(db, 'SELECT 1 FROM blob_refs WHERE project = ? AND digest = ? LIMIT 1', project, d)) continue;
      run(
        db,
        'UPDATE blobs SET unreferenced_since = ? WHERE project = ? AND digest = ? AND unreferenced_since IS NULL',
        now,
        project,
        d,
      );
    }
  });
}

/** Blobs nothing has referred to for at least `graceMs`. */
export function collectableBlobs(
  db: SqlDb,
  graceMs: number,
  now = Date.now(),
): { project: string; digest: BlobDigest }[] {
  return all<{ project: string; digest: BlobDigest }>(
    db,
    `SELECT project, digest FROM blobs b WHERE unreferenced_since IS NOT NULL AND unreferenced_since <= ?
       AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.project = b.project AND r.digest = b.digest)
     ORDER BY project, digest`,
    now - graceMs,
  );
}

/** The references that keep a blob from being removed by hand: objects, not an edge's hold on its upload. */
export function blockingReferences(db: SqlDb, project: string, digest: BlobDigest): string[] {
  return refsOf(db, project, digest).filter((r) => !r.startsWith('Edge/'));
}
