/**
 * @module Content-addressed files on disk, shared by the hub's and the edge's blob stores:
 * `ROOT/sha256/<hex>` holds a complete blob whose bytes hash to its name; `ROOT/partial/<hex>` a
 * transfer in progress (its length is where a resumed transfer starts); `ROOT/tmp/` uploads whose
 * digest is not known until their last byte. A blob appears under `sha256/` only by a rename
 * after its digest was checked, so a kill -9 at any moment leaves either no blob or a whole one.
 *
 * @example
 * const files = new BlobFiles('/var/lib/outpost-hub/blobs');
 * const { digest, size } = await files.ingest(req, { maxBytes: 1e9 });
 */
import { ABANDONED_UPLOAD_MS } from '../core/durations.js';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { digestHex, isDigest, type BlobDigest } from '../core/blobs.js';

/** A blob that failed its digest or size check, or a body past its bound. */
export class BlobError extends Error {
  constructor(
    readonly code: 'digest_mismatch' | 'too_large' | 'not_found' | 'size_mismatch',
    message: string,
  ) {
    super(message);
    this.name = 'BlobError';
  }
}

export async function sha256File(file: string): Promise<BlobDigest> {
  const h = createHash('sha256');
  await pipeline(fs.createReadStream(file, { highWaterMark: 1024 * 1024 }), h);
  return `sha256:${h.digest('hex')}` as BlobDigest;
}

export class BlobFiles {
  constructor(readonly root: string) {
    for (const d of ['sha256', 'partial', 'tmp']) fs.mkdirSync(path.join(root, d), { recursive: true, mode: 0o700 });
    // Uploads of a previous run that never finished: their digest is unknown, so they cannot resume.
    // Only those no process has written to for a while: hub replicas may share this directory, and
    // another one's upload may be under way.
    const now = Date.now();
    for (const f of fs.readdirSync(path.join(root, 'tmp'))) {
      const file = path.join(root, 'tmp', f);
      try {
        if (now - fs.statSync(file).mtimeMs > ABANDONED_UPLOAD_MS) fs.rmSync(file, { force: true });
      } catch {
        /* gone meanwhile */
      }
    }
  }

  path(d: BlobDigest): string {
    return path.join(this.root, 'sha256', digestHex(d));
  }

  partialPath(d: BlobDigest): string {
    return path.join(this.root, 'partial', digestHex(d));
  }

  has(d: BlobDigest): boolean {
    return fs.existsSync(this.path(d));
  }

  size(d: BlobDigest): number | undefined {
    try {
      return fs.statSync(this.path(d)).size;
    } catch {
      return undefined;
    }
  }

  /** Bytes of a transfer in progress already on disk: where it resumes. */
  partialSize(d: BlobDigest): number {
    try {
      return fs.statSync(this.partialPath(d)).size;
    } catch {
      return 0;
    }
  }

  /** Every complete blob with its size. */
  list(): { digest: BlobDigest; size: number; mtimeMs: number }[] {
    const out: { digest: BlobDigest; size: number; mtimeMs: number }[] = [];
    for (const f of fs.readdirSync(path.join(this.root, 'sha256'))) {
      const digest = `sha256:${f}`;
      if (!isDigest(digest)) continue;
      try {
        const st = fs.statSync(path.join(this.root, 'sha256', f));
        out.push({ digest, size: st.size, mtimeMs: st.mtimeMs });
      } catch {
        // removed meanwhile
      }
    }
    return out;
  }

  /** Transfers in progress (or abandoned) with their size and last write. */
  partials(): { digest: BlobDigest; size: number; mtimeMs: number }[] {
    const out: { digest: BlobDigest; size: number; mtimeMs: number }[] = [];
    for (const f of fs.readdirSync(path.join(this.root, 'partial'))) {
      const digest = `sha256:${f}`;
      if (!isDigest(digest)) continue;
      try {
        const st = fs.statSync(path.join(this.root, 'partial', f));
        out.push({ digest, size: st.size, mtimeMs: st.mtimeMs });
      } catch {
        // finished meanwhile
      }
    }
    return out;
  }

  /** Bytes held, complete and partial. */
  usedBytes(): number {
    let n = 0;
    for (const dir of ['sha256', 'partial'])
      for (const f of fs.readdirSync(path.join(this.root, dir))) {
        try {
          n += fs.statSync(path.join(this.root, dir, f)).size;
        } catch {
          // removed meanwhile
        }
      }
    return n;
  }

  /**
   * Streams `body` into the store, hashing as it goes (never the whole body in memory). Fails
   * with `too_large` past `maxBytes` and `digest_mismatch` when `expected` is given and differs;
   * nothing is left behind on failure. With `grow`, the blob may also only grow as far as it
   * allows: asked when the bytes pass what it granted last (0 at first) with the size they reached,
   * it answers the bytes granted now, less than that size to refuse (`too_large`); so a caller
   * holding room for the blob (the hub's quota) is asked once per step, not per chunk.
   */
  async ingest(
    body: Readable,
    o: { maxBytes: number; expected?: BlobDigest; grow?: (bytes: number) => number },
  ): Promise<{ digest: BlobDigest; size: number }> {
    const tmp = path.join(this.root, 'tmp', randomUUID());
    const h = createHash('sha256');
    let size = 0;
    let granted = o.grow ? 0 : o.maxBytes;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        size += chunk.length;
        if (size > o.maxBytes) return cb(new BlobError('too_large', `the blob exceeds ${o.maxBytes} bytes`));
        if (size > granted) {
          try {
            granted = o.grow!(size);
          } catch (err) {
            return cb(err as Error);
          }
          if (size > granted) return cb(new BlobError('too_large', `the blob may not grow past ${granted} bytes`));
        }
        h.update(chunk);
        cb(null, chunk);
      },
    });
    try {
      await pipeline(body, meter, fs.createWriteStream(tmp, { mode: 0o600 }));
      const digest = `sha256:${h.digest('hex')}` as BlobDigest;
      if (o.expected && o.expected !== digest)
        throw new BlobError('digest_mismatch', `the bytes hash to ${digest}, not ${o.expected}`);
      await fsp.rename(tmp, this.path(digest));
      return { digest, size };
    } finally {
      await fsp.rm(tmp, { force: true });
    }
  }

  /** Copies a local file in (the edge's `blob push`), checking nothing but its own hash. */
  async ingestFile(file: string, maxBytes: number): Promise<{ digest: BlobDigest; size: number }> {
    return this.ingest(fs.createReadStream(file, { highWaterMark: 1024 * 1024 }), { maxBytes });
  }

  /**
   * A partial transfer is complete: checks its size and digest and moves it into place. A
   * mismatch deletes the partial file (the next attempt starts over) and throws.
   */
  async commitPartial(d: BlobDigest, size: number): Promise<void> {
    const p = this.partialPath(d);
    const got = this.partialSize(d);
    if (got !== size) {
      if (got > size) await fsp.rm(p, { force: true });
      throw new BlobError('size_mismatch', `transfer of ${d} holds ${got} bytes, expected ${size}`);
    }
    const actual = await sha256File(p);
    if (actual !== d) {
      await fsp.rm(p, { force: true });
      throw new BlobError('digest_mismatch', `transfer of ${d} hashes to ${actual}: discarded, it starts over`);
    }
    await fsp.rename(p, this.path(d));
  }

  async remove(d: BlobDigest): Promise<void> {
    await fsp.rm(this.path(d), { force: true });
    await fsp.rm(this.partialPath(d), { force: true });
  }

  async removePartial(d: BlobDigest): Promise<void> {
    await fsp.rm(this.partialPath(d), { force: true });
  }
}
