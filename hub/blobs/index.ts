/**
 * @module The hub's blob store (docs/bytes.md): files under `DATA/blobs` (sync/blob-files.ts),
 * indexed per project in the hub's database (hub/state/blobs.ts), a byte quota per project held
 * under concurrent uploads (quota.ts), and garbage collection by reference: a blob nothing refers
 * to is removed after a grace period.
 *
 * @example
 * const blobs = new HubBlobs({ db, dir: path.join(dataDir, 'blobs') });
 * const info = await blobs.upload(req, { project: 'default', uploadedBy: 'token:abc' });
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { DEFAULT_MEDIA_TYPE, type BlobDigest, type BlobInfo, type BlobScan } from '../../core/blobs.js';
import { diskFullError, isDiskFull, OutpostError } from '../../core/errors.js';
import { formatBytes } from '../../core/limits.js';
import { createLogger, throttle } from '../../core/logger.js';
import { BlobError, BlobFiles } from '../../sync/blob-files.js';
import { isPostgres, type SqlDb } from '../state/sql.js';
import {
  blockingReferences,
  clearBlobReservations,
  collectableBlobs,
  deleteBlob,
  digestKnown,
  getBlob,
  listBlobs,
  migrateBlobs,
  putBlob,
  recordBlobScan,
  setReferences,
} from '../state/blobs.js';
import { BlobQuota, type BlobReservation } from './quota.js';

const log = createLogger('hub:blobs');

/** Per project: room for a few agent builds (~100 MB each) and data the sites send, on a hub's disk. */
export const DEFAULT_BLOB_QUOTA_BYTES = 20 * 1024 ** 3;
/** An unreferenced blob stays this long: time to apply the object that will refer to it after a push. */
export const DEFAULT_BLOB_GRACE_MS = 24 * 60 * 60_000;
/** How often garbage collection runs. */
export const BLOB_GC_INTERVAL_MS = 10 * 60_000;

export interface HubBlobsOptions {
  db: SqlDb;
  dir: string;
  quotaBytes?: number;
  graceMs?: number;
}

export class HubBlobs {
  readonly files: BlobFiles;
  readonly quotaBytes: number;
  readonly graceMs: number;
  readonly quota: BlobQuota;
  private readonly db: SqlDb;
  private timer: NodeJS.Timeout | undefined;
  /** Every upload fails while the disk is full: one log line a minute says so. */
  private readonly diskFullLog = throttle(60_000);

  constructor(o: HubBlobsOptions) {
    this.db = o.db;
    migrateBlobs(o.db);
    this.files = new BlobFiles(o.dir);
    this.quotaBytes = o.quotaBytes ?? DEFAULT_BLOB_QUOTA_BYTES;
    this.quota = new BlobQuota(o.db, this.quotaBytes);
    // A SQLite hub is the only one on its file: what its previous run reserved (killed mid-upload)
    // holds nothing now. Replicas on PostgreSQL leave each other's to expire.
    if (!isPostgres(o.db)) clearBlobReservations(o.db);
    this.graceMs = o.graceMs ?? DEFAULT_BLOB_GRACE_MS;
  }

  /** Starts periodic garbage collection. */
  start(intervalMs = BLOB_GC_INTERVAL_MS): void {
    this.timer = setInterval(() => {
      this.gc().catch((err: unknown) => log.warn({ err }, 'blob garbage collection failed; it runs again later'));
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.quota.stop();
  }

  /** Room left in a project's quota (uploads in progress hold theirs). */
  room(project: string): number {
    return this.quota.room(project);
  }

  quotaError(project: string, size?: number, except?: string): OutpostError {
    return this.quota.error(project, size, except);
  }

  /**
   * Streams an upload into the store; never holds the body in memory. Its bytes are reserved
   * against the project's quota before they are written: `size` (a declared length) at once,
   * else in steps as they come, and the upload is cut (413) when the reservation cannot grow.
   */
  async upload(
    body: Readable,
    o: { project: string; uploadedBy: string; mediaType?: string; expected?: BlobDigest; size?: number },
  ): Promise<BlobInfo> {
    const held = this.quota.reserve(o.project);
    try {
      let r;
      try {
        if (o.size !== undefined && !held.take(o.size)) throw this.quotaError(o.project, o.size, held.id);
        r = await this.files.ingest(body, {
          maxBytes: o.size ?? this.quotaBytes,
          ...(o.expected ? { expected: o.expected } : {}),
          ...(o.size === undefined ? { grow: (n: number) => held.grow(n) } : {}),
        });
      } catch (err) {
        if (err instanceof BlobError && err.code === 'too_large') throw this.quotaError(o.project, o.size, held.id);
        if (err instanceof BlobError) throw new OutpostError('invalid', err.message);
        if (isDiskFull(err)) throw this.diskFull(this.files.root, err);
        throw err;
      }
      return this.index(held, {
        project: o.project,
        digest: r.digest,
        size: r.size,
        mediaType: o.mediaType ?? DEFAULT_MEDIA_TYPE,
        uploadedBy: o.uploadedBy,
      });
    } finally {
      held.end();
    }
  }

  /**
   * Indexes a blob whose bytes `held` reserved, taking the reservation's place in one
   * transaction. A reservation that expired meanwhile (this hub stalled past its renewals) is
   * taken again first, so the quota still holds.
   */
  private index(
    held: BlobReservation,
    b: { project: string; digest: BlobDigest; size: number; mediaType: string; uploadedBy: string },
  ): BlobInfo {
    if (held.lost && !held.take(b.size)) throw this.quotaError(b.project, b.size, held.id);
    let info;
    try {
      info = putBlob(this.db, { ...b, reservation: held.id });
    } catch (err) {
      if (isDiskFull(err)) throw this.diskFull(isPostgres(this.db) ? "the hub's database" : this.db.name, err);
      throw err;
    }
    held.indexed = true;
    log.info({ project: b.project, digest: b.digest, size: b.size, by: b.uploadedBy }, 'blob stored');
    return info;
  }

  /**
   * The answer to an upload that found the disk full (507, not a bare 500): names the directory,
   * what is free there, and the fixes; logged once a minute while it lasts.
   */
  private diskFull(where: string, err: unknown): OutpostError {
    let free = '';
    try {
      const s = fs.statfsSync(where);
      free = ` (${formatBytes(s.bavail * s.bsize)} free of ${formatBytes(s.blocks * s.bsize)})`;
    } catch {
      // the database's name, or the statfs failed: the message goes without the figures
    }
    const e = diskFullError(
      `${where}${free}`,
      err,
      where === this.files.root
        ? "remove blobs nothing needs with `outpost blob rm`, or move the hub's --blob-dir to a larger disk"
        : undefined,
    );
    this.diskFullLog((suppressed) => log.error({ err, suppressed }, e.message));
    return e;
  }

  /**
   * Reserves the bytes of a blob an edge is about to send (hub/blobs/transfers.ts); undefined
   * when the project has no room for them. The caller ends it when the transfer is over.
   */
  reserveEdgeUpload(project: string, size: number): BlobReservation | undefined {
    const held = this.quota.reserve(project);
    if (held.take(size)) return held;
    held.end();
    return undefined;
  }

  /**
   * A blob an edge sent (sync/transfer.ts) is now complete in the files: index it (in place of its
   * reservation) and hold it for that edge.
   */
  recordEdgeUpload(
    project: string,
    edge: string,
    digest: BlobDigest,
    size: number,
    mediaType: string,
    reservation?: BlobReservation,
  ): BlobInfo {
    const b = { project, digest, size, mediaType, uploadedBy: `edge:${edge}` };
    const info = reservation ? this.index(reservation, b) : putBlob(this.db, b);
    const held = listBlobs(this.db, project)
      .filter((x) => x.references.includes(`Edge/${edge}`))
      .map((x) => x.digest);
    setReferences(this.db, project, 'Edge', edge, [...new Set([...held, digest])]);
    return getBlob(this.db, project, digest) ?? info;
  }

  get(project: string, digest: BlobDigest): BlobInfo | undefined {
    const b = getBlob(this.db, project, digest);
    return b && this.files.has(digest) ? b : undefined;
  }

  list(project: string | '*'): BlobInfo[] {
    return listBlobs(this.db, project);
  }

  /** Makes an object refer to exactly these blobs (called in the object's write transaction). */
  /** Keeps the malware scanner's verdict on a blob, shown with it (`blob ls`, the UI's Blobs page). */
  recordScan(project: string, digest: BlobDigest, scan: BlobScan): void {
    recordBlobScan(this.db, project, digest, scan);
  }

  setReferences(project: string, kind: string, name: string, digests: BlobDigest[]): void {
    setReferences(this.db, project, kind, name, digests);
  }

  /** Removes a blob by hand: refused while an object refers to it. */
  async remove(project: string, digest: BlobDigest): Promise<void> {
    if (!getBlob(this.db, project, digest))
      throw new OutpostError('not_found', `blob ${digest} not found in project ${project}`);
    const refs = blockingReferences(this.db, project, digest);
    if (refs.length > 0)
      throw new OutpostError(
        'conflict',
        `blob ${digest} is referred to by ${refs.join(', ')}: delete or change ${refs.length === 1 ? 'that object' : 'those objects'} first`,
      );
    if (deleteBlob(this.db, project, digest)) await this.files.remove(digest);
    log.info({ project, digest }, 'blob removed');
  }

  /** Removes every blob nothing has referred to for the grace period; returns their digests. */
  async gc(now = Date.now()): Promise<BlobDigest[]> {
    const gone: BlobDigest[] = [];
    for (const b of collectableBlobs(this.db, this.graceMs, now)) {
      if (deleteBlob(this.db, b.project, b.digest)) await this.files.remove(b.digest);
      gone.push(b.digest);
    }
    // Files without a row: an upload whose index write never happened (a kill -9 between the two).
    // Only old ones: a file younger than that may be an upload about to be indexed.
    for (const f of this.files.list())
      if (f.mtimeMs < now - 60 * 60_000 && !digestKnown(this.db, f.digest)) await this.files.remove(f.digest);
    // An upload an edge started and never finished (decommissioned, its file deleted) resumes no more.
    for (const p of this.files.partials())
      if (p.mtimeMs < now - this.graceMs) {
        await this.files.removePartial(p.digest);
        log.info({ digest: p.digest, bytes: p.size }, 'abandoned partial upload removed');
      }
    if (gone.length > 0) log.info({ blobs: gone.length }, 'unreferenced blobs collected');
    return gone;
  }
}
