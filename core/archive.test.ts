import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeArchive } from '../test/fixtures/archives.js';
import { tempDir } from '../test/helpers.js';
import {
  ARCHIVE_CHUNK_BYTES,
  ArchiveFormatError,
  ArchiveLimitError,
  readArchive,
  type ArchiveLimits,
} from './archive.js';

const MiB = 1024 * 1024;
/** Small limits, so each case writes and reads a few MiB. */
const LIMITS: ArchiveLimits = { expandedBytes: 4 * MiB, entryBytes: 2 * MiB };
/** The reader inflates and hands on this much at a time: it stops within one chunk. */
const CHUNK = ARCHIVE_CHUNK_BYTES;

let dir: string;
beforeAll(() => {
  dir = tempDir('outpost-archive-');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const keepAll = (e: { path: string }) => e.path;

async function refusal(file: string, limits = LIMITS): Promise<Error> {
  return readArchive(file, keepAll, limits).then(
    () => {
      throw new Error(`${file} was read`);
    },
    (err: Error) => err,
  );
}

describe('readArchive', () => {
  it('keeps the entries asked for, later ones replacing earlier ones, and skips the rest', async () => {
    const file = path.join(dir, 'ok.tgz');
    await writeArchive(file, [
      { path: 'package.yaml', data: 'first' },
      { path: 'data/blob.bin', data: 3 * MiB },
      { path: './package.yaml', data: 'second' },
      { path: 'README.md', data: '# hi' },
    ]);
    const r = await readArchive(file, (e) => (e.path.endsWith('.bin') ? undefined : e.path.replace(/^\.\//, '')));
    expect(Object.fromEntries([...r.files].map(([k, v]) => [k, v.toString()]))).toEqual({
      'package.yaml': 'second',
      'README.md': '# hi',
    });
    expect(r.expandedBytes).toBeGreaterThan(3 * MiB);
  });

  it("keeps an entry's bytes intact across the reader's chunks", async () => {
    const file = path.join(dir, 'random.tgz');
    const a = randomBytes(100_001);
    const b = randomBytes(300_000);
    await writeArchive(file, [
      { path: 'a', data: a },
      { path: 'b', data: b },
    ]);
    const r = await readArchive(file, keepAll, LIMITS);
    expect(r.files.get('a')?.equals(a)).toBe(true);
    expect(r.files.get('b')?.equals(b)).toBe(true);
  });

  it('reads a plain (uncompressed) tar too', async () => {
    const file = path.join(dir, 'plain.tar');
    await writeArchive(file, [{ path: 'a.txt', data: 'plain' }], { gzip: false });
    expect((await readArchive(file, keepAll, LIMITS)).files.get('a.txt')?.toString()).toBe('plain');
  });

  it('stops at the first chunk past the expanded limit, naming the limit, the entry and what it read', async () => {
    const file = path.join(dir, 'bomb.tgz');
    // Entries each under the entry limit, 8 MiB together: twice the expanded limit.
    await writeArchive(file, [
      { path: 'package.yaml', data: 'kind: Package' },
      ...Array.from({ length: 8 }, (_, i) => ({ path: `zeros-${i}`, data: MiB })),
    ]);
    const err = await refusal(file);
    expect(err).toBeInstanceOf(ArchiveLimitError);
    const e = err as ArchiveLimitError;
    expect(e.limit).toBe('expanded');
    expect(e.expandedBytes).toBeGreaterThan(LIMITS.expandedBytes);
    expect(e.expandedBytes).toBeLessThanOrEqual(LIMITS.expandedBytes + CHUNK);
    expect(e.message).toMatch(
      /^the archive expands to more than 4\.0 MiB, the limit for one archive \(MAX_ARCHIVE_EXPANDED_BYTES\): refused in entry zeros-3, with 4\.\d MiB \(\d+ bytes\) of it expanded from [\d.]+ KiB of the compressed file; /,
    );
    expect(e.toOutpostError().status).toBe(413);
  });

  it('refuses an entry declared past the entry limit at its header: reading stops there', async () => {
    const file = path.join(dir, 'entry.tgz');
    await writeArchive(file, [
      { path: 'package.yaml', data: 'kind: Package' },
      { path: 'data/huge.bin', data: 3 * MiB },
    ]);
    const err = await refusal(file);
    expect(err).toBeInstanceOf(ArchiveLimitError);
    const e = err as ArchiveLimitError;
    expect(e.limit).toBe('entry');
    expect(e.expandedBytes).toBeLessThanOrEqual(CHUNK);
    expect(e.message).toMatch(
      /^entry data\/huge\.bin of the archive is 3\.0 MiB, over the 2\.0 MiB limit for one entry \(MAX_ARCHIVE_ENTRY_BYTES\): refused at its header, with [\d.]+ KiB \(\d+ bytes\) of it expanded/,
    );
  });

  it('stops at the end-of-archive marker: zeros after it are never expanded', async () => {
    const file = path.join(dir, 'trailing.tgz');
    await writeArchive(file, [{ path: 'a.txt', data: 'x' }], { trailingZeros: 64 * MiB });
    const r = await readArchive(file, keepAll, LIMITS);
    expect(r.files.get('a.txt')?.toString()).toBe('x');
    expect(r.expandedBytes).toBeLessThanOrEqual(CHUNK);
  });

  it('an archive of nothing but zeros ends at its marker (1 KiB): nothing to keep, little read', async () => {
    const file = path.join(dir, 'zeros.tgz');
    await writeArchive(file, [], { trailingZeros: 64 * MiB });
    const r = await readArchive(file, keepAll, LIMITS);
    expect(r.files.size).toBe(0);
    expect(r.expandedBytes).toBeLessThanOrEqual(CHUNK);
  });

  it('refuses a tar compressed twice: tar would inflate the inner one itself, unbounded', async () => {
    const file = path.join(dir, 'twice.tgz');
    await writeArchive(file, [{ path: 'zeros', data: MiB }], { gzipTwice: true });
    const err = await refusal(file);
    expect(err).toBeInstanceOf(ArchiveFormatError);
    expect(err.message).toMatch(/what the gzip holds is compressed again/);
  });

  it('a truncated tar is a format error, not an archive read in part', async () => {
    const file = path.join(dir, 'truncated.tar');
    await writeArchive(file, [{ path: 'a.bin', data: randomBytes(200_000) }], { gzip: false });
    fs.truncateSync(file, 100_000);
    const err = await refusal(file);
    expect(err).toBeInstanceOf(ArchiveFormatError);
    expect(err.message).toMatch(/Truncated input/);
  });

  it('a truncated .tgz is a format error', async () => {
    const file = path.join(dir, 'truncated.tgz');
    await writeArchive(file, [
      { path: 'a.bin', data: Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251)) },
    ]);
    fs.truncateSync(file, Math.floor(fs.statSync(file).size / 2));
    const err = await refusal(file);
    expect(err).toBeInstanceOf(ArchiveFormatError);
    expect(err.message).toMatch(/unexpected end of file/);
  });
});
