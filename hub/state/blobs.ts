/**
 * @module The hub's blob index (tables `blobs` and `blob_refs`; the only SQL about them). A blob
 * is indexed per project (the same bytes uploaded in two projects are two rows and one file);
 * references name what needs it (`AgentUpgrade/NAME`, `Edge/NAME` for what an edge uploaded).
 * A blob with no reference becomes collectable `unreferenced_since` plus the grace period.
 */
import type { BlobDigest, BlobInfo } from '../../core/blobs.js';
import { buildInfo } from '../../core/version.js';
import { cachedStatement, inTransaction, migrate, type SqliteDatabase } from '../../sync/sqlite.js';

const MIGRATIONS = [
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

export function migrateBlobs(db: SqliteDatabase): void {
  migrate(db, 'blobs', MIGRATIONS, buildInfo().version);
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

function refsOf(db: SqliteDatabase, project: string, digest: string): string[] {
  return (
    cachedStatement(db, 'SELECT kind, name FROM blob_refs WHERE project = ? AND digest = ? ORDER BY kind, name').all(
      project,
      digest,
    ) as { kind: string; name: string }[]
  ).map((r) => `${r.kind}/${r.name}`);
}

function toInfo(db: SqliteDatabase, r: Row): BlobInfo {
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
  db: SqliteDatabase,
  b: { project: string; digest: BlobDigest; size: number; mediaType: string; uploadedBy: string },
  now = Date.now(),
): BlobInfo {
  return inTransaction(db, () => {
    cachedStatement(
      db,
      `INSERT INTO blobs (project, digest, size, media_type, uploaded_by, created_at, unreferenced_since)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, digest) DO NOTHING`,
    ).run(b.project, b.digest, b.size, b.mediaType, b.uploadedBy, now, now);
    return getBlob(db, b.project, b.digest)!;
  });
}

export function getBlob(db: SqliteDatabase, project: string, digest: BlobDigest): BlobInfo | undefined {
  const r = cachedStatement(db, 'SELECT * FROM blobs WHERE project = ? AND digest = ?').get(project, digest) as
    Row | undefined;
  return r ? toInfo(db, r) : undefined;
}

export function listBlobs(db: SqliteDatabase, project: string | '*'): BlobInfo[] {
  const rows = (
    project === '*'
      ? cachedStatement(db, 'SELECT * FROM blobs ORDER BY project, created_at, digest').all()
      : cachedStatement(db, 'SELECT * FROM blobs WHERE project = ? ORDER BY created_at, digest').all(project)
  ) as Row[];
  return rows.map((r) => toInfo(db, r));
}

/** Bytes a project's blobs take (for its quota). */
export function projectBytes(db: SqliteDatabase, project: string): number {
  return (
    cachedStatement(db, 'SELECT COALESCE(SUM(size), 0) n FROM blobs WHERE project = ?').get(project) as { n: number }
  ).n;
}

/** Removes a blob's row and its references; true when no project holds the digest any more (delete the file). */
export function deleteBlob(db: SqliteDatabase, project: string, digest: BlobDigest): boolean {
  return inTransaction(db, () => {
    cachedStatement(db, 'DELETE FROM blob_refs WHERE project = ? AND digest = ?').run(project, digest);
    cachedStatement(db, 'DELETE FROM blobs WHERE project = ? AND digest = ?').run(project, digest);
    return !cachedStatement(db, 'SELECT 1 FROM blobs WHERE digest = ?').get(digest);
  });
}

/** True when the hub holds this digest in any project (so its file must stay). */
export function digestKnown(db: SqliteDatabase, digest: BlobDigest): boolean {
  return !!cachedStatement(db, 'SELECT 1 FROM blobs WHERE digest = ?').get(digest);
}

/**
 * Makes `owner` (`kind`, `name`) refer to exactly `digests` in `project`: references it no longer
 * makes are dropped, and blobs left with none start their grace period. Digests the project does
 * not hold are ignored (the caller validated them).
 */
export function setReferences(
  db: SqliteDatabase,
  project: string,
  kind: string,
  name: string,
  digests: BlobDigest[],
  now = Date.now(),
): void {
  inTransaction(db, () => {
    const before = (
      cachedStatement(db, 'SELECT digest FROM blob_refs WHERE project = ? AND kind = ? AND name = ?').all(
        project,
        kind,
        name,
      ) as { digest: string }[]
    ).map((r) => r.digest);
    cachedStatement(db, 'DELETE FROM blob_refs WHERE project = ? AND kind = ? AND name = ?').run(project, kind, name);
    for (const d of digests) {
      if (!cachedStatement(db, 'SELECT 1 FROM blobs WHERE project = ? AND digest = ?').get(project, d)) continue;
      cachedStatement(db, 'INSERT OR IGNORE INTO blob_refs (project, digest, kind, name) VALUES (?, ?, ?, ?)').run(
        project,
        d,
        kind,
        name,
      );
      cachedStatement(db, 'UPDATE blobs SET unreferenced_since = NULL WHERE project = ? AND digest = ?').run(
        project,
        d,
      );
    }
    for (const d of before) {
      if (cachedStatement(db, 'SELECT 1 FROM blob_refs WHERE project = ? AND digest = ?').get(project, d)) continue;
      cachedStatement(
        db,
        'UPDATE blobs SET unreferenced_since = ? WHERE project = ? AND digest = ? AND unreferenced_since IS NULL',
      ).run(now, project, d);
    }
  });
}

/** Blobs nothing has referred to for at least `graceMs`. */
export function collectableBlobs(
  db: SqliteDatabase,
  graceMs: number,
  now = Date.now(),
): { project: string; digest: BlobDigest }[] {
  return cachedStatement(
    db,
    `SELECT project, digest FROM blobs b WHERE unreferenced_since IS NOT NULL AND unreferenced_since <= ?
       AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.project = b.project AND r.digest = b.digest)`,
  ).all(now - graceMs) as { project: string; digest: BlobDigest }[];
}

/** The references that keep a blob from being removed by hand: objects, not an edge's hold on its upload. */
export function blockingReferences(db: SqliteDatabase, project: string, digest: BlobDigest): string[] {
  return refsOf(db, project, digest).filter((r) => !r.startsWith('Edge/'));
}
