/** Shared helpers for cross-folder tests: temp dirs, polling with a deadline, forked peers. */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * `fetch` for an idempotent request (GET, HEAD) that tries once more when the connection it reused
 * was reset: the hub closes an idle keep-alive connection after 5 s, and a request sent on it in
 * that instant meets the close (a reset, since the request is unread). fetch pools connections;
 * on a loaded machine the pool's own 4 s timer fires late enough for the race.
 */
export async function fetchIdempotent(url: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    if (cause?.code !== 'ECONNRESET' && cause?.code !== 'UND_ERR_SOCKET') throw err;
    return fetch(url, init);
  }
}

export function tempDir(prefix = 'outpost-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Resident memory of a process in MB (Linux), for tests that report what an attack cost. */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : 0;
}

/**
 * Measures a process's resident memory around `fn`, in MB: before it, its peak while `fn` ran
 * (VmHWM, reset to the current RSS first through /proc/PID/clear_refs, Linux 4.0+) and after it.
 * The peak is what an attack cost at its worst, which two samples around it can miss.
 */
export async function rssAround<T>(
  pid: number,
  fn: () => Promise<T>,
): Promise<{ result: T; beforeMb: number; peakMb: number; afterMb: number }> {
  const status = (field: string) =>
    Math.round(
      Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024,
    );
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
  const beforeMb = status('VmRSS');
  const result = await fn();
  return { result, beforeMb, peakMb: status('VmHWM'), afterMb: status('VmRSS') };
}

/**
 * Runs `fn` while this process's event loop is kept busy 50 ms in every 70: a loaded client, whose
 * reads and writes wait their turn (the refused-upload tests: a reset that reaches such a client
 * before the answer it had not read yet).
 */
export async function whileBusy<T>(fn: () => Promise<T>): Promise<T> {
  const busy = setInterval(() => {
    const until = Date.now() + 50;
    while (Date.now() < until);
  }, 20);
  try {
    return await fn();
  } finally {
    clearInterval(busy);
  }
}

/**
 * The one poll-until helper of the tests: polls `fn` until it returns a truthy value or the
 * deadline passes (default 30 s; then throws naming `what` and the last value or error).
 */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  opts: { timeout?: number; interval?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeout ?? 30_000);
  let last: unknown;
  for (;;) {
    try {
      last = await fn();
      if (last) return last as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${opts.what ?? 'condition'}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`,
      );
    await new Promise((r) => setTimeout(r, opts.interval ?? 50));
  }
}

/** A TypeScript script in a child process with an IPC channel: request/response by id. */
export class ForkedPeer {
  readonly child: ChildProcess;
  private rid = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly events: Record<string, unknown>[] = [];
  readonly ready: Promise<Record<string, unknown>>;
  stderr = '';

  constructor(script: string, env: Record<string, string>) {
    this.child = fork(script, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, OUTPOST_LOG_LEVEL: process.env.OUTPOST_TEST_LOG ?? 'warn', ...env },
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    this.child.stderr?.on('data', (c: Buffer) => {
      this.stderr += c.toString();
      if (process.env.OUTPOST_TEST_LOG) process.stderr.write(c);
    });
    this.ready = new Promise((resolve, reject) => {
      this.child.on('message', (m: Record<string, unknown>) => {
        if (m.ready) resolve(m);
        else if (typeof m.rid === 'number') {
          const p = this.pending.get(m.rid);
          this.pending.delete(m.rid);
          if (m.error) p?.reject(new Error(String(m.error)));
          else p?.resolve(m.result);
        } else this.events.push(m);
      });
      this.child.on('exit', (code, sig) => {
        reject(new Error(`peer exited (${code ?? sig}) before ready: ${this.stderr.slice(-2000)}`));
        for (const p of this.pending.values()) p.reject(new Error(`peer exited (${code ?? sig})`));
        this.pending.clear();
      });
    });
  }

  call<T = unknown>(cmd: Record<string, unknown>): Promise<T> {
    const rid = ++this.rid;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(rid, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ ...cmd, rid });
    });
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill(signal);
    await exited;
  }
}
