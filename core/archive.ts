/**
 * @module The one reader of archives that come from an operator or a peer (a package's .tgz;
 * docs/security.md, "Archives"): a tar, gzip-compressed or plain, read from a file as a stream and
 * bounded by bytes (core/limits.ts). It stops at the chunk that passes MAX_ARCHIVE_EXPANDED_BYTES
 * (tar never sees it), refuses an entry whose header declares more than MAX_ARCHIVE_ENTRY_BYTES at
 * that header, and stops at the tar's end-of-archive marker. What it holds is two 256 KiB
 * buffers, zlib's state and the entries the caller keeps (which the caller bounds).
 *
 * Why not `tar.t({ file })`: it reads the whole compressed file in one write and inflates it
 * synchronously, so a 2 MB .tgz of 2 GiB of zeros became 2 GiB of buffers before its ratio check
 * fired; and after the end-of-archive marker its parser keeps every further byte in one buffer.
 * Here tar only parses plain tar, 256 KiB at a time, inflated into one reused buffer
 * (core/inflate.ts): the memory a read holds does not grow with the archive.
 *
 * @example
 * const { files } = await readArchive('web-1.0.0.tgz', (e) => (e.path === 'package.yaml' ? e.path : undefined));
 */
import fs from 'node:fs';
import * as tar from 'tar';
import { OutpostError, type ConvertsToOutpostError } from './errors.js';
import { GunzipInto } from './inflate.js';
import { formatBytes, MAX_ARCHIVE_ENTRY_BYTES, MAX_ARCHIVE_EXPANDED_BYTES } from './limits.js';

export interface ArchiveLimits {
  /** The tar stream, decompressed (MAX_ARCHIVE_EXPANDED_BYTES). */
  expandedBytes: number;
  /** One entry, as its header declares it (MAX_ARCHIVE_ENTRY_BYTES). */
  entryBytes: number;
}

export const ARCHIVE_LIMITS: ArchiveLimits = {
  expandedBytes: MAX_ARCHIVE_EXPANDED_BYTES,
  entryBytes: MAX_ARCHIVE_ENTRY_BYTES,
};

export interface ArchiveEntry {
  /** As the archive names it. */
  path: string;
  /** tar's entry type: `File`, `Directory`, `SymbolicLink`, ... */
  type: string;
  /** Bytes, as the header declares them (and as tar hands them over, never more). */
  size: number;
}

export interface ArchiveRead {
  /** The entries the caller kept, by the key it gave them. */
  files: Map<string, Buffer>;
  /** Bytes of tar stream read (decompressed). */
  expandedBytes: number;
  /** Bytes of the file read. */
  fileBytes: number;
}

/** An archive past one of its limits: 413 `too_large`, naming the limit, the entry and what was read. */
export class ArchiveLimitError extends Error implements ConvertsToOutpostError {
  constructor(
    message: string,
    readonly limit: 'expanded' | 'entry',
    readonly expandedBytes: number,
  ) {
    super(message);
    this.name = 'ArchiveLimitError';
  }
  toOutpostError(): OutpostError {
    return new OutpostError('too_large', this.message);
  }
}

/** Not a tar (or not one gzip'd once): the caller names what it expected and how to make it. */
export class ArchiveFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveFormatError';
  }
}

/**
 * Read size of the file and of each inflated chunk handed to tar (a multiple of tar's 512-byte
 * block): a limit is found passed at most this far past it. Larger chunks mean fewer (small,
 * short-lived) objects per byte read, which V8 answers with fewer collections.
 */
export const ARCHIVE_CHUNK_BYTES = 256 * 1024;
const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);
const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);

const FIX =
  'large data does not belong in an archive: upload it with `outpost blob push` or build it into an image (docs/bytes.md)';

/**
 * Reads `file`, a tar (gzip-compressed or not), entry by entry. `keep` is asked for each entry
 * and returns the key to keep its bytes under, or undefined to skip them; a kept entry is held
 * whole, so keep only small ones (the caller bounds them by `size`). A later entry kept under
 * the same key replaces the earlier one, as tar itself would. Throws ArchiveLimitError past a
 * limit, ArchiveFormatError when the file is not such an archive.
 */
export async function readArchive(
  file: string,
  keep: (entry: ArchiveEntry) => string | undefined,
  limits: ArchiveLimits = ARCHIVE_LIMITS,
): Promise<ArchiveRead> {
  const files = new Map<string, Buffer>();
  let fileBytes = 0;
  let expanded = 0;
  let gzipped = false;
  let current: string | undefined;
  let failure: Error | undefined;
  let ended = false;

  const read = () =>
    `${formatBytes(expanded)} (${expanded} bytes) of it expanded${gzipped ? ` from ${formatBytes(fileBytes)} of the compressed file` : ''}`;
  const tooBig = (e: { path: string; size?: number }): boolean => {
    if ((e.size ?? 0) <= limits.entryBytes) return false;
    failure ??= new ArchiveLimitError(
      `entry ${e.path} of the archive is ${formatBytes(e.size ?? 0)}, over the ${formatBytes(limits.entryBytes)} limit for one entry (MAX_ARCHIVE_ENTRY_BYTES): refused at its header, with ${read()}; ${FIX}`,
      'entry',
      expanded,
    );
    return true;
  };

  // brotli and zstd off: tar would otherwise sniff and inflate them itself, unbounded. strict: a
  // damaged archive (a bad checksum, a truncated entry) is refused, not read in part.
  const parser = new tar.Parser({ brotli: false, zstd: false, strict: true });
  parser.on('entry', (entry: tar.ReadEntry) => {
    current = entry.path;
    const key = tooBig(entry) ? undefined : keep({ path: entry.path, type: entry.type, size: entry.size ?? 0 });
    if (key === undefined) return void entry.resume();
    const parts: Buffer[] = [];
    // A copy: what tar hands over is a view of the reader's one buffer, overwritten next.
    entry.on('data', (c: Buffer) => parts.push(Buffer.from(c)));
    entry.on('end', () => files.set(key, Buffer.concat(parts)));
  });
  // Entries tar skips itself (an extended header past its own bound) are bounded too.
  parser.on('ignoredEntry', (entry: tar.ReadEntry) => {
    current = entry.path;
    tooBig(entry);
  });
  // After the end-of-archive marker, tar's parser would keep every further byte in memory; nothing
  // after it belongs to the archive, so reading stops there.
  parser.on('eof', () => (ended = true));
  parser.on('error', (err: Error) => (failure ??= new ArchiveFormatError(err.message)));

  // The tar stream is inflated (or read) into this one buffer and handed to tar whenever it is
  // full: always whole 512-byte blocks, so tar keeps no view of it between writes.
  const block = Buffer.allocUnsafe(ARCHIVE_CHUNK_BYTES);
  let fill = 0;
  let handed = 0;
  /** Hands tar what `block` holds; false when reading stops (a failure, or the archive's end). */
  const hand = async (): Promise<boolean> => {
    if (fill === 0) return true;
    const chunk = block.subarray(0, fill);
    if (expanded === 0 && (chunk.subarray(0, 2).equals(GZIP_MAGIC) || chunk.subarray(0, 4).equals(ZSTD_MAGIC))) {
      failure ??= new ArchiveFormatError(
        `${gzipped ? 'what the gzip holds is compressed again' : 'it is compressed with zstd'}: a tar compressed once with gzip is expected`,
      );
      return false;
    }
    expanded += fill;
    fill = 0;
    if (expanded > limits.expandedBytes) {
      failure ??= new ArchiveLimitError(
        `the archive expands to more than ${formatBytes(limits.expandedBytes)}, the limit for one archive (MAX_ARCHIVE_EXPANDED_BYTES): refused in entry ${current ?? '(none yet)'}, with ${read()}; ${FIX}`,
        'expanded',
        expanded,
      );
      return false;
    }
    parser.write(chunk);
    if (failure || ended) return false;
    // Inflating is synchronous: let the hub serve others every 2 MiB.
    if (++handed % ((2 * 1024 * 1024) / ARCHIVE_CHUNK_BYTES) === 0) await new Promise(setImmediate);
    return true;
  };

  const fh = await fs.promises.open(file, 'r');
  const input = Buffer.allocUnsafe(ARCHIVE_CHUNK_BYTES);
  let gunzip: GunzipInto | undefined;
  /** Reads the file into tar until its end or until hand() says stop. */
  const pump = async (): Promise<void> => {
    gzipped = (await fh.read(input, 0, 2, 0)).bytesRead === 2 && input.subarray(0, 2).equals(GZIP_MAGIC);
    if (gzipped) {
      gunzip = new GunzipInto();
      for (let finish = false; !finish;) {
        const { bytesRead } = await fh.read(input, 0, ARCHIVE_CHUNK_BYTES, fileBytes);
        fileBytes += bytesRead;
        finish = bytesRead === 0;
        let data = input.subarray(0, bytesRead);
        // zlib stops when the input is consumed or the output full: full, hand it over and go on.
        for (;;) {
          const { used, made } = gunzip.step(data, block, fill, finish);
          data = data.subarray(used);
          fill += made;
          if (fill < ARCHIVE_CHUNK_BYTES) break;
          if (!(await hand())) return;
        }
      }
    } else {
      for (;;) {
        const { bytesRead } = await fh.read(block, fill, ARCHIVE_CHUNK_BYTES - fill, fileBytes);
        fileBytes += bytesRead;
        fill += bytesRead;
        if (bytesRead === 0) break;
        if (fill === ARCHIVE_CHUNK_BYTES && !(await hand())) return;
      }
    }
    if (await hand()) parser.end();
  };
  try {
    await pump();
  } catch (err) {
    failure ??= new ArchiveFormatError((err as Error).message);
  } finally {
    gunzip?.close();
    await fh.close();
  }
  if (failure) throw failure;
  return { files, expandedBytes: expanded, fileBytes };
}
