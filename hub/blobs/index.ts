/**
 * @module The hub's blob store (docs/bytes.md): files under `DATA/blobs` (sync/blob-files.ts),
 * indexed per project in the hub's database (hub/state/blobs.ts), a byte quota per project held
 * under concurrent uploads (quota.ts), and garbage collection by reference: a blob nothing refers
 * to is removed after a grace period.
 *
 * @example
 * const blobs = new HubBlobs({ tables: state.blobs, dir: path.join(dataDir, 'blobs') });
 * const info = await blobs.upload(req, { project: 'default', uploadedBy: 'token:abc' });
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { DEFAULT_MEDIA_TYPE, type BlobDigest, type BlobInfo, type BlobScan } from '../../core/blobs.js';
import { diskFullError, isDiskFull, OutpostError } from '../../core/errors.js';
import { formatBytes } from '../../core/limits.js';
import { createLogger, throttle } from '../../core/logger.js';
import { BlobError, BlobFiles } from '../../sync/blob-files.js';
import type { BlobTables } from '../state/blobs.js';
import { BlobQuota, type BlobReservation } from './quota.js';

const log = createLogger('hub:blobs');

/** Per project: room for a few agent builds (~100 MB each) and data the sites send, on a hub's disk. */
export const DEFAULT_BLOB_QUOTA_BYTES = 20 * 1024 ** 3;
/** An unreferenced blob stays this long: time to apply the object that will refer to it after a push. */
export const DEFAULT_BLOB_GRACE_MS = 24 * 60 * 60_000;
/** How often garbage collection runs. */
export const BLOB_GC_INTERVAL_MS = 10 * 60_000;

export interface HubBlobsOptions {
  tables: BlobTables;
  dir: string;
  quotaBytes?: number;
  graceMs?: number;
}

export class HubBlobs {
  readonly files: BlobFiles;
  readonly quotaBytes: number;
  readonly graceMs: number;
  readonly quota: BlobQuota;
  private readonly tables: BlobTables;
  private timer: NodeJS.Timeout | undefined;
  /** Every upload fails while the disk is full: one log line a minute says so. */
  private readonly diskFullLog = throttle(60_000);

  constructor(o: HubBlobsOptions) {
    this.tables = o.tables;
    this.files = new BlobFiles(o.dir);
    this.quotaBytes = o.quotaBytes ?? DEFAULT_BLOB_QUOTA_BYTES;
    this.quota = new BlobQuota(o.tables, this.quotaBytes);
    this.tables.clearStaleReservations();
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
          maxBytes: o.size ?? this.quota.limit(o.project),
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
      info = this.tables.putBlob({ ...b, reservation: held.id });
    } catch (err) {
      if (isDiskFull(err)) throw this.diskFull(this.tables.where, err);
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
    const info = reservation ? this.index(reservation, b) : this.tables.putBlob(b);
    const held = this.tables
      .listBlobs(project)
      .filter((x) => x.references.includes(`Edge/${edge}`))
      .map((x) => x.digest);
    this.tables.setReferences(project, 'Edge', edge, [...new Set([...held, digest])]);
    return this.tables.getBlob(project, digest) ?? info;
  }

  get(project: string, digest: BlobDigest): BlobInfo | undefined {
    const b = this.tables.getBlob(project, digest);
    return b && this.files.has(digest) ? b : undefined;
  }

  /**
   * Indexes bytes another scope holds under `project` too (one file, two rows: it stays while
   * either does): the artifacts of a global ClusterTemplate (hub/clusters/global-templates.ts).
   */
  adopt(project: string, from: BlobInfo): BlobInfo {
    return this.tables.putBlob({
      project,
      digest: from.digest,
      size: from.size,
      mediaType: from.mediaType,
      uploadedBy: from.uploadedBy,
    });
  }

  list(project: string | '*'): BlobInfo[] {
    return this.tables.listBlobs(project);
  }

  /** Makes an object refer to exactly these blobs (called in the object's write transaction). */
  /** Keeps the malware scanner's verdict on a blob, shown with it (`blob ls`, the UI's Blobs page). */
  recordScan(project: string, digest: BlobDigest, scan: BlobScan): void {
    this.tables.recordBlobScan(project, digest, scan);
  }

  setReferences(project: string, kind: string, name: string, digests: BlobDigest[]): void {
    this.tables.setReferences(project, kind, name, digests);
  }

  /** Removes a blob by hand: refused while an object refers to it. */
  async remove(project: string, digest: BlobDigest): Promise<void> {
    if (!this.tables.getBlob(project, digest))
      throw new OutpostError('not_found', `blob ${digest} not found in project ${project}`);
    const refs = this.tables.blockingReferences(project, digest);
    if (refs.length > 0)
      throw new OutpostError(
        'conflict',
        `blob ${digest} is referred to by ${refs.join(', ')}: delete or change ${refs.length === 1 ? 'that object' : 'those objects'} first`,
      );
    if (this.tables.deleteBlob(project, digest)) await this.files.remove(digest);
    log.info({ project, digest }, 'blob removed');
  }

  /** Removes every blob of a project, referred to or not (its deletion: hub/projects/deletion.ts); how many. */
  async removeProject(project: string): Promise<number> {
    const all = this.tables.listBlobs(project);
    for (const b of all) if (this.tables.deleteBlob(project, b.digest)) await this.files.remove(b.digest);
    if (all.length) log.info({ project, blobs: all.length }, "the project's blobs removed");
    return all.length;
  }

  /** Removes every blob nothing has referred to for the grace period; returns their digests. */
  async gc(now = Date.now()): Promise<BlobDigest[]> {
    const gone: BlobDigest[] = [];
    for (const b of this.tables.collectableBlobs(this.graceMs, now)) {
      if (this.tables.deleteBlob(b.project, b.digest)) await this.files.remove(b.digest);
      gone.push(b.digest);
    }
    // Files without a row: an upload whose index write never happened (a kill -9 between the two).
    // Only old ones: a file younger than that may be an upload about to be indexed.
    for (const f of this.files.list())
      if (f.mtimeMs < now - 60 * 60_000 && !this.tables.digestKnown(f.digest)) await this.files.remove(f.digest);
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
