/**
 * @module The edge's blob store (docs/bytes.md): content-addressed files in `DATA/blobs`
 * (sync/blob-files.ts) within a byte budget, and two small persistent queues as files, so a
 * kill -9 forgets nothing: `wanted/` (blobs to bring from the hub) and `outbox/` (blobs to send
 * to it). The transfer loop (transfers.ts) works them off whenever the hub is connected.
 */
import fs from 'node:fs';
import path from 'node:path';
import { digestHex, isDigest, type BlobDigest } from '../../core/blobs.js';
import { BlobFiles } from '../../sync/blob-files.js';

/** Default budget: room for a few agent binaries (~100 MB each) and staged files on a small device. */
export const DEFAULT_EDGE_BLOB_BUDGET_BYTES = 4 * 1024 ** 3;

/** The store, or the disk under it, has no room for a blob. */
export class BlobBudgetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlobBudgetError';
  }
}

export interface EdgeBlobEntry {
  digest: BlobDigest;
  size?: number;
  state: 'stored' | 'partial' | 'wanted' | 'outbox';
  /** For partial transfers: bytes on disk. */
  partialBytes?: number;
  mediaType?: string;
}

export class EdgeBlobStore {
  readonly files: BlobFiles;
  private readonly wantedDir: string;
  private readonly outboxDir: string;

  constructor(
    readonly dir: string,
    readonly budgetBytes = DEFAULT_EDGE_BLOB_BUDGET_BYTES,
  ) {
    this.files = new BlobFiles(dir);
    this.wantedDir = path.join(dir, 'wanted');
    this.outboxDir = path.join(dir, 'outbox');
    for (const d of [this.wantedDir, this.outboxDir]) fs.mkdirSync(d, { recursive: true, mode: 0o700 });
  }

  /**
   * Throws when `bytes` more would pass the budget or fill the disk: the message names both
   * numbers and the fix, and nothing already stored is touched.
   */
  checkRoom(bytes: number, what: string): void {
    const used = this.files.usedBytes();
    if (used + bytes > this.budgetBytes)
      throw new BlobBudgetError(
        `${what} needs ${bytes} bytes; the edge's blob store holds ${used} of its ${this.budgetBytes}-byte budget: raise --blob-budget or remove blobs (outpost edge local blob ls)`,
      );
    let free: number | undefined;
    try {
      const st = fs.statfsSync(this.dir);
      free = st.bavail * st.bsize;
    } catch {
      // statfs unsupported: the budget alone decides
    }
    if (free !== undefined && bytes > free)
      throw new BlobBudgetError(`${what} needs ${bytes} bytes; the disk under ${this.dir} has ${free} free`);
  }

  want(digest: BlobDigest): void {
    if (this.files.has(digest)) return;
    fs.writeFileSync(path.join(this.wantedDir, digestHex(digest)), '');
  }

  unwant(digest: BlobDigest): void {
    fs.rmSync(path.join(this.wantedDir, digestHex(digest)), { force: true });
  }

  wanted(): BlobDigest[] {
    return fs
      .readdirSync(this.wantedDir)
      .map((f) => `sha256:${f}`)
      .filter(isDigest);
  }

  /** Copies a local file into the store and queues it for the hub; returns its digest. */
  async queueUpload(file: string, mediaType: string): Promise<{ digest: BlobDigest; size: number }> {
    const st = fs.statSync(file);
    this.checkRoom(st.size, file);
    const r = await this.files.ingestFile(file, this.budgetBytes);
    fs.writeFileSync(path.join(this.outboxDir, digestHex(r.digest)), JSON.stringify({ mediaType }));
    return r;
  }

  /** Queues a blob already in the store for the hub again (it was sent, but the hub lost it). */
  requeue(digest: BlobDigest, mediaType: string): void {
    fs.writeFileSync(path.join(this.outboxDir, digestHex(digest)), JSON.stringify({ mediaType }));
  }

  outbox(): { digest: BlobDigest; mediaType: string }[] {
    const out: { digest: BlobDigest; mediaType: string }[] = [];
    for (const f of fs.readdirSync(this.outboxDir)) {
      const digest = `sha256:${f}`;
      if (!isDigest(digest)) continue;
      let mediaType = 'application/octet-stream';
      try {
        const j = JSON.parse(fs.readFileSync(path.join(this.outboxDir, f), 'utf8')) as { mediaType?: unknown };
        if (typeof j.mediaType === 'string') mediaType = j.mediaType;
      } catch {
        // a torn write: the default type
      }
      out.push({ digest, mediaType });
    }
    return out;
  }

  sent(digest: BlobDigest): void {
    fs.rmSync(path.join(this.outboxDir, digestHex(digest)), { force: true });
  }

  list(): EdgeBlobEntry[] {
    const outbox = new Map(this.outbox().map((o) => [o.digest, o.mediaType]));
    const out: EdgeBlobEntry[] = this.files.list().map((b) => ({
      digest: b.digest,
      size: b.size,
      state: outbox.has(b.digest) ? 'outbox' : 'stored',
      ...(outbox.has(b.digest) ? { mediaType: outbox.get(b.digest) } : {}),
    }));
    for (const d of this.wanted()) {
      if (this.files.has(d)) continue;
      const n = this.files.partialSize(d);
      out.push({ digest: d, state: n > 0 ? 'partial' : 'wanted', ...(n > 0 ? { partialBytes: n } : {}) });
    }
    return out;
  }

  async remove(digest: BlobDigest): Promise<void> {
    this.unwant(digest);
    this.sent(digest);
    await this.files.remove(digest);
  }
}
