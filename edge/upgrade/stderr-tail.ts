/**
 * @module The last lines a new agent binary on trial wrote on stderr (edge/upgrade/launcher.ts),
 * kept in a bounded buffer while they are passed on to the launcher's own stderr, and put at the
 * end of the rollback reason: a binary that dies at start says why there (a missing library, a
 * crash, a configuration it refuses), and the reason reaches the hub in the edge's report, where
 * an operator reads it without a shell on the site. The agent logs on stdout: what comes on stderr
 * is little and says what went wrong.
 */
import { visibleText } from '../../core/text.js';

/** Lines of the new binary's stderr the reason ends with, at most. */
export const STDERR_TAIL_LINES = 10;
/** Bytes of stderr kept while the binary runs: ten long lines, and what a cut first line loses. */
const KEEP_BYTES = 8192;
/** A rollback reason is reported in the edge's report, whose schema takes 1024 characters (core/mailbox/docs.ts). */
export const REASON_MAX = 1024;
const LEAD = '; its last lines on stderr: ';
const SEP = ' | ';
/** Colours and cursor moves of a terminal-minded program: noise in a reason. */
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

export class StderrTail {
  private buf = Buffer.alloc(0);
  /** Bytes were dropped from the front: the first line kept is partial. */
  private cut = false;

  push(chunk: Buffer): void {
    const all = Buffer.concat([this.buf, chunk]);
    this.cut ||= all.length > KEEP_BYTES;
    this.buf = all.length > KEEP_BYTES ? all.subarray(all.length - KEEP_BYTES) : all;
  }

  /** The last `n` lines that say something, trimmed, control characters written as escapes (core/text.ts). */
  lines(n = STDERR_TAIL_LINES): string[] {
    const all = this.buf.toString('utf8').split('\n');
    if (this.cut) all.shift();
    return all
      .map((l) => visibleText(l.replace(ANSI, '').trim()))
      .filter((l) => l !== '')
      .slice(-n);
  }
}

/**
 * `reason`, then as many of the last `lines` as fit in REASON_MAX characters in all, the newest
 * kept first (the last lines of a crash say most); a last line longer than the room left keeps
 * its end.
 */
export function withStderrTail(reason: string, lines: string[], max = REASON_MAX): string {
  const head = reason.length > max ? `${reason.slice(0, max - 1)}…` : reason;
  let room = max - head.length - LEAD.length;
  // Too little room for anything worth reading: the reason alone.
  if (lines.length === 0 || room < 40) return head;
  const kept: string[] = [];
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    const need = line.length + (kept.length ? SEP.length : 0);
    if (need <= room) {
      kept.unshift(line);
      room -= need;
      continue;
    }
    if (kept.length === 0) kept.unshift(`…${line.slice(line.length - (room - 1))}`);
    break;
  }
  return head + LEAD + kept.join(SEP);
}
