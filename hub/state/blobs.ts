/**
 * @module The hub's blob index (tables `blobs` and `blob_refs`; the only SQL about them). A blob
 * is indexed per project (the same bytes uploaded in two projects are two rows and one file);
 * references name what needs it (`AgentUpgrade/NAME`, `Edge/NAME` for what an edge uploaded).
 * A blob with no reference becomes collectable `unreferenced_since` plus the grace period.
 *
 * `blob_reservations`: bytes of uploads in progress, held against their project's quota until the
 * blob is indexed (the row goes in the same transaction) or the upload fails. A row is checked
 * and written in one transaction, serialized per project across hub replicas, so concurrent
 * uploads never hold more than the quota together; it expires unless renewed, so the rows of a
 * hub that died free their bytes.
 */
import type { BlobDigest, BlobInfo, BlobScan } from '../../core/blobs.js';
import { all, bindDb, inJsonList, isPostgres, migrateTables, one, run, transaction, type SqlDb } from './sql.js';

export function migrateBlobs(db: SqlDb): void {
  migrateTables(db, 'blobs');
}

interface Row {
  project: string;
  digest: string;
  size: number;
  media_type: string;
  uploaded_by: string;
  created_at: number;
  unreferenced_since: number | null;
  scan: string | null;
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
    ...(r.scan ? { scan: JSON.parse(r.scan) as BlobScan } : {}),
  };
}

/** Records the malware scanner's verdict on a blob of a project (the last one stands). */
export function recordBlobScan(db: SqlDb, project: string, digest: BlobDigest, scan: BlobScan): void {
  run(db, 'UPDATE blobs SET scan = ? WHERE project = ? AND digest = ?', JSON.stringify(scan), project, digest);
}

/**
 * Records a blob in a project (or refreshes nothing if it is already there); returns it. With
 * `reservation`, the upload's reservation goes in the same transaction: its bytes are counted
 * once, as the reservation or as the blob, never neither.
 */
export function putBlob(
  db: SqlDb,
  b: { project: string; digest: BlobDigest; size: number; mediaType: string; uploadedBy: string; reservation?: string },
  now = Date.now(),
): BlobInfo {
  return transaction(db, () => {
    if (b.reservation !== undefined) run(db, 'DELETE FROM blob_reservations WHERE id = ?', b.reservation);
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

/** Bytes of uploads in progress a project holds (live reservations), but those of `except`. */
export function reservedBytes(db: SqlDb, project: string, now = Date.now(), except = ''): number {
  return one<{ n: number }>(
    db,
    'SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) n FROM blob_reservations WHERE project = ? AND expires_at > ? AND id <> ?',
    project,
    now,
    except,
  )!.n;
}

/**
 * Two-key advisory locks live apart from the one-key ones (the leader's, the migrations'): this
 * class and a hash of the project name.
 */
const QUOTA_LOCK_CLASS = 0x626c6f62; // "blob"

/**
 * Grows (or takes) the reservation `id` of an upload in `project` to at least `atLeast` bytes and
 * at most `upTo`, as the room under `quota` allows, and renews its expiry; answers the bytes
 * granted, null (nothing changed) when the blobs and the other live reservations of the project
 * leave less than `atLeast`; with what they hold.
 * Checked and written in one transaction that holds the project's quota lock: SQLite's write
 * lock (an immediate transaction), on PostgreSQL a transaction advisory lock of the project, so
 * two hub replicas reserving at once are serialized.
 */
export function reserveBlobBytes(
  db: SqlDb,
  r: { id: string; project: string; atLeast: number; upTo: number; quota: number; ttlMs: number },
  now = Date.now(),
): { granted: number | null; stored: number; reserved: number } {
  return transaction(
    db,
    () => {
      if (isPostgres(db)) one(db, `SELECT pg_advisory_xact_lock(${QUOTA_LOCK_CLASS}, hashtext(?)) locked`, r.project);
      run(db, 'DELETE FROM blob_reservations WHERE project = ? AND expires_at <= ?', r.project, now);
      const stored = projectBytes(db, r.project);
      const reserved = reservedBytes(db, r.project, now, r.id);
      const room = r.quota - stored - reserved;
      if (room < r.atLeast) return { granted: null, stored, reserved };
      const granted = Math.min(r.upTo, room);
      run(
        db,
        `INSERT INTO blob_reservations (id, project, bytes, expires_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET bytes = excluded.bytes, expires_at = excluded.expires_at`,
        r.id,
        r.project,
        granted,
        now + r.ttlMs,
      );
      return { granted, stored, reserved };
    },
    { immediate: true },
  );
}

/**
 * Extends the reservations `ids` (uploads this hub is still serving) by `ttlMs`; returns those it
 * extended. One that had expired is not brought back (its bytes may have been granted to another
 * upload since): its upload must reserve again.
 */
export function renewBlobReservations(db: SqlDb, ids: string[], ttlMs: number, now = Date.now()): Set<string> {
  if (ids.length === 0) return new Set();
  return new Set(
    all<{ id: string }>(
      db,
      `UPDATE blob_reservations SET expires_at = ? WHERE expires_at > ? AND ${inJsonList(db, 'id')} RETURNING id`,
      now + ttlMs,
      now,
      JSON.stringify(ids),
    ).map((r) => r.id),
  );
}

/** Every reservation goes: the uploads of a previous run of the only hub on this database. */
export function clearBlobReservations(db: SqlDb): void {
  run(db, 'DELETE FROM blob_reservations');
}

/** An upload failed: its reservation goes. */
export function releaseBlobReservation(db: SqlDb, id: string): void {
  run(db, 'DELETE FROM blob_reservations WHERE id = ?', id);
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

const BLOBS = {
  recordBlobScan,
  putBlob,
  getBlob,
  listBlobs,
  projectBytes,
  reservedBytes,
  reserveBlobBytes,
  renewBlobReservations,
  releaseBlobReservation,
  deleteBlob,
  digestKnown,
  setReferences,
  collectableBlobs,
  blockingReferences,
};

/** The blob index as hub/blobs sees it (`HubState.blobs`). */
export type BlobTables = ReturnType<typeof sqlBlobTables>;

/** The blob index of `db`, migrated on SQLite (PostgreSQL is migrated at start). */
export function sqlBlobTables(db: SqlDb) {
  migrateBlobs(db);
  return {
    ...bindDb(db, BLOBS),
    /**
     * At start: a SQLite hub is the only one on its file, so what its previous run reserved
     * (killed mid-upload) holds nothing now. Replicas on PostgreSQL leave each other's to expire.
     */
    clearStaleReservations(): void {
      if (!isPostgres(db)) clearBlobReservations(db);
    },
    /** Where the index is, for an error saying which disk is full. */
    where: isPostgres(db) ? "the hub's database" : db.name,
  };
}
