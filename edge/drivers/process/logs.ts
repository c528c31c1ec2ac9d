/**
 * @module Log files of host processes: `workloads/NAME/logs/KEY.log`, rotated to `KEY.log.1` ...
 * `KEY.log.N` (newest first), and reading them back (tail, follow).
 *
 * The process writes straight into the file (O_APPEND), with no pipe through the agent, so it keeps
 * logging after the agent dies. The agent cannot reopen the process's descriptor, so rotation is
 * copy-then-truncate (as logrotate's copytruncate): lines written between the copy and the
 * truncate are lost, a window of one file copy. While no agent runs, nothing rotates.
 */
import { copyFile, open, rename, rm, stat, truncate } from 'node:fs/promises';
import { stamp, timedLines, timesPath } from './log-times.js';

export interface RotateOptions {
  maxBytes: number;
  keep: number;
}

/**
 * Rotates `file` when it is larger than maxBytes. Returns the file's size after (0 when it was
 * rotated), undefined when there is no file: one `stat` serves the rotation and the time index.
 */
export async function rotateIfNeeded(file: string, opts: RotateOptions): Promise<number | undefined> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch {
    return undefined;
  }
  if (size <= opts.maxBytes) return size;
  if (opts.keep <= 0) {
    await truncate(file, 0);
    await rm(timesPath(file), { force: true });
    return 0;
  }
  await rm(`${file}.${opts.keep}`, { force: true });
  await rm(timesPath(`${file}.${opts.keep}`), { force: true });
  for (let i = opts.keep - 1; i >= 1; i--) {
    await renameIfThere(`${file}.${i}`, `${file}.${i + 1}`);
    await renameIfThere(timesPath(`${file}.${i}`), timesPath(`${file}.${i + 1}`));
  }
  await copyFile(file, `${file}.1`);
  // The copy's offsets are the file's, so its index moves with it.
  await renameIfThere(timesPath(file), timesPath(`${file}.1`));
  await truncate(file, 0);
  return 0;
}

async function renameIfThere(from: string, to: string): Promise<void> {
  await rename(from, to).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

async function sizeOf(file: string): Promise<number | null> {
  try {
    return (await stat(file)).size;
  } catch {
    return null;
  }
}

async function readRange(file: string, start: number, end: number): Promise<Buffer> {
  if (end <= start) return Buffer.alloc(0);
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(end - start);
    const { bytesRead } = await fh.read(buf, 0, buf.length, start);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** The last `n` complete-or-trailing lines of one file, reading backwards in chunks. */
async function tailFile(file: string, n: number, size: number): Promise<string[]> {
  if (n <= 0 || size === 0) return [];
  const CHUNK = 64 * 1024;
  let end = size;
  let buf: Buffer = Buffer.alloc(0);
  while (end > 0) {
    const start = Math.max(0, end - CHUNK);
    buf = Buffer.concat([await readRange(file, start, end), buf]);
    end = start;
    // n lines need n newlines before them (plus a possible trailing newline).
    let count = 0;
    for (let i = 0; i < buf.length - 1; i++) if (buf[i] === 10) count++;
    if (count >= n) break;
  }
  return splitLines(buf.toString('utf8')).slice(-n);
}

function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

export interface ReadLogOptions {
  tail?: number;
  follow?: boolean;
  signal?: AbortSignal;
  keep: number;
  pollMs?: number;
  /** Follow stops when this turns false (the workload was removed). */
  stillExists?: () => boolean;
  /** Only lines written at or after this time (epoch ms); see log-times.ts for how exact. */
  sinceMs?: number;
  /** Prefix each line with its RFC 3339 time. */
  timestamps?: boolean;
}

/** The files of a log, oldest first: `.N` ... `.1`, then the current file (read up to `size`). */
async function* timedRead(file: string, size: number, opts: ReadLogOptions): AsyncGenerator<string> {
  const since = opts.sinceMs ?? -Infinity;
  const ring: string[] = [];
  const files: Array<[string, number]> = [];
  for (let i = opts.keep; i >= 1; i--) {
    const rsize = await sizeOf(`${file}.${i}`);
    if (rsize !== null) files.push([`${file}.${i}`, rsize]);
  }
  files.push([file, size]);
  for (const [f, fsize] of files) {
    for (const { line, ms } of await timedLines(f, await readRange(f, 0, fsize))) {
      if (ms < since) continue;
      const out = opts.timestamps ? stamp(ms, line) : line;
      if (opts.tail === undefined) yield out;
      else {
        ring.push(out);
        if (ring.length > opts.tail) ring.shift();
      }
    }
  }
  yield* ring;
}

/**
 * Yields the log as lines. Without tail: the rotated files oldest first, then the current file.
 * With follow: then waits for new bytes until the signal aborts; when it sees the file shrink
 * (rotated), it first finishes what it had not read from the copy in `.1`.
 */
export async function* readLog(file: string, opts: ReadLogOptions): AsyncGenerator<string> {
  const size = (await sizeOf(file)) ?? 0;
  if (opts.sinceMs !== undefined || opts.timestamps) {
    yield* timedRead(file, size, opts);
  } else if (opts.tail !== undefined) {
    let lines = await tailFile(file, opts.tail, size);
    for (let i = 1; i <= opts.keep && lines.length < opts.tail; i++) {
      const rotated = `${file}.${i}`;
      const rsize = await sizeOf(rotated);
      if (rsize === null) break;
      lines = [...(await tailFile(rotated, opts.tail - lines.length, rsize)), ...lines];
    }
    yield* lines;
  } else {
    for (let i = opts.keep; i >= 1; i--) {
      const rotated = `${file}.${i}`;
      const rsize = await sizeOf(rotated);
      if (rsize !== null) yield* splitLines((await readRange(rotated, 0, rsize)).toString('utf8'));
    }
    yield* splitLines((await readRange(file, 0, size)).toString('utf8'));
  }
  if (!opts.follow) return;

  let offset = size;
  let partial = '';
  const pollMs = opts.pollMs ?? 200;
  while (!opts.signal?.aborted && (opts.stillExists?.() ?? true)) {
    await sleep(pollMs, opts.signal);
    if (opts.signal?.aborted) break;
    const now = await sizeOf(file);
    if (now === null) continue;
    let chunk: Buffer = Buffer.alloc(0);
    if (now < offset) {
      const rotatedSize = (await sizeOf(`${file}.1`)) ?? 0;
      if (rotatedSize > offset) chunk = await readRange(`${file}.1`, offset, rotatedSize);
      offset = 0;
    }
    if (now > offset) {
      chunk = Buffer.concat([chunk, await readRange(file, offset, now)]);
      offset = now;
    }
    if (chunk.length === 0) continue;
    const text = partial + chunk.toString('utf8');
    const lines = text.split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) {
      if (opts.signal?.aborted) return;
      // A followed line is read within a poll of being written.
      yield opts.timestamps ? stamp(Date.now(), l) : l;
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
