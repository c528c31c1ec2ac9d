/**
 * @module When each line of a process's log was written, for `logs --since` and `--timestamps`.
 *
 * The process writes straight into its log file (logs.ts), so the file holds its bytes only. The
 * supervisor keeps a sidecar index next to it, `KEY.log.times` (rotated with the log as
 * `KEY.log.N.times`): lines `OFFSET MS`, meaning "the file held OFFSET bytes at MS" (epoch ms),
 * appended on a supervision tick when the file grew, at most one a second. A line's time is the
 * first entry that covers its end, else the file's mtime: at most one tick (plus a second) after
 * it was really written, never before. Lines written while no agent ran get the time the next
 * agent first saw them.
 */
import { appendFile, readFile, stat } from 'node:fs/promises';

/** The sidecar index of a log file (or of a rotated copy). */
export const timesPath = (logFile: string): string => `${logFile}.times`;

/** Appends index entries for one log file; one per supervised process. */
export class LogTimes {
  private last = -1;
  private lastAt = 0;

  constructor(private readonly logFile: string) {}

  /**
   * Records the file's size now, if it grew (or after a rotation emptied it); `known`: the size
   * just read by the caller (rotateIfNeeded), saving a `stat`.
   */
  async mark(now = Date.now(), known?: number): Promise<void> {
    let size: number;
    if (known !== undefined) size = known;
    else
      try {
        size = (await stat(this.logFile)).size;
      } catch {
        return;
      }
    if (size < this.last) {
      // Rotated: the index moved with the copy; the new file's first entry is written at once.
      this.last = -1;
      this.lastAt = 0;
    }
    if (size <= this.last || size === 0 || now - this.lastAt < 1_000) return;
    await appendFile(timesPath(this.logFile), `${size} ${now}\n`, { mode: 0o640 });
    this.last = size;
    this.lastAt = now;
  }
}

/** The index of a file as [offset, ms] pairs, offsets ascending; empty if it has none. */
async function readIndex(logFile: string): Promise<Array<[number, number]>> {
  let text: string;
  try {
    text = await readFile(timesPath(logFile), 'utf8');
  } catch {
    return [];
  }
  const out: Array<[number, number]> = [];
  for (const l of text.split('\n')) {
    const m = /^(\d+) (\d+)$/.exec(l);
    if (m) out.push([Number(m[1]), Number(m[2])]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}

/** The complete lines of `content` (the first `content.length` bytes of `logFile`) with their times. */
export async function timedLines(logFile: string, content: Buffer): Promise<Array<{ line: string; ms: number }>> {
  const index = await readIndex(logFile);
  const mtime = await stat(logFile).then(
    (s) => s.mtimeMs,
    () => Date.now(),
  );
  const out: Array<{ line: string; ms: number }> = [];
  let start = 0;
  let k = 0;
  while (start < content.length) {
    let nl = content.indexOf(10, start);
    if (nl < 0) nl = content.length;
    const end = nl + 1;
    while (k < index.length && index[k][0] < Math.min(end, content.length)) k++;
    out.push({ line: content.subarray(start, nl).toString('utf8'), ms: k < index.length ? index[k][1] : mtime });
    start = end;
  }
  return out;
}

/** `line` as `kubectl logs --timestamps` prints it: an RFC 3339 time, a space, the line. */
export const stamp = (ms: number, line: string): string => `${new Date(ms).toISOString()} ${line}`;
