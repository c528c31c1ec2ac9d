/**
 * @module The hub's blob store (docs/bytes.md): files under `DATA/blobs` (sync/blob-files.ts),
 * indexed per project in the hub's database (hub/state/blobs.ts), a byte quota per project, and
 * garbage collection by reference: a blob nothing refers to is removed after a grace period.
 *
 * @example
 * const blobs = new HubBlobs({ db, dir: path.join(dataDir, 'blobs') });
 * const info = await blobs.upload(req, { project: 'default', uploadedBy: 'token:abc' });
 */
import type { Readable } from 'node:stream';
import { DEFAULT_MEDIA_TYPE, type BlobDigest, type BlobInfo } from '../../core/blobs.js';
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { BlobError, BlobFiles } from '../../sync/blob-files.js';
import type { SqlDb } from '../state/sql.js';
import {
  blockingReferences,
  collectableBlobs,
  deleteBlob,
  digestKnown,
  getBlob,
  listBlobs,
  migrateBlobs,
  projectBytes,
  putBlob,
  setReferences,
} from '../state/blobs.js';

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
  private readonly db: SqlDb;
  private timer: NodeJS.Timeout | undefined;

  constructor(o: HubBlobsOptions) {
    this.db = o.db;
    migrateBlobs(o.db);
    this.files = new BlobFiles(o.dir);
    this.quotaBytes = o.quotaBytes ?? DEFAULT_BLOB_QUOTA_BYTES;
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
  }

  /** Room left in a project's quota. */
  room(project: string): number {
    return Math.max(0, this.quotaBytes - projectBytes(this.db, project));
  }

  quotaError(project: string, size?: number): OutpostError {
    const used = projectBytes(this.db, project);
    return new OutpostError(
      'too_large',
      `project ${project} holds ${used} bytes of blobs${size === undefined ? '' : `; ${size} more`} would pass its quota of ${this.quotaBytes} bytes: remove blobs with \`outpost blob rm\` or raise the hub's --blob-quota`,
    );
  }

  /** Streams an upload into the store; never holds the body in memory. */
  async upload(
    body: Readable,
    o: { project: string; uploadedBy: string; mediaType?: string; expected?: BlobDigest; size?: number },
  ): Promise<BlobInfo> {
    const room = this.room(o.project);
    if (o.size !== undefined && o.size > room) throw this.quotaError(o.project, o.size);
    let r;
    try {
      r = await this.files.ingest(body, { maxBytes: room, ...(o.expected ? { expected: o.expected } : {}) });
    } catch (err) {
      if (err instanceof BlobError && err.code === 'too_large') throw this.quotaError(o.project);
      if (err instanceof BlobError) throw new OutpostError('invalid', err.message);
      throw err;
    }
    const info = putBlob(this.db, {
      project: o.project,
      digest: r.digest,
      size: r.size,
      mediaType: o.mediaType ?? DEFAULT_MEDIA_TYPE,
      uploadedBy: o.uploadedBy,
    });
    log.info({ project: o.project, digest: r.digest, size: r.size, by: o.uploadedBy }, 'blob stored');
    return info;
  }

  /** A blob an edge sent (sync/transfer.ts) is now complete in the files: index it and hold it for that edge. */
  recordEdgeUpload(project: string, edge: string, digest: BlobDigest, size: number, mediaType: string): BlobInfo {
    const info = putBlob(this.db, { project, digest, size, mediaType, uploadedBy: `edge:${edge}` });
    const held = listBlobs(this.db, project)
      .filter((b) => b.references.includes(`Edge/${edge}`))
      .map((b) => b.digest);
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
