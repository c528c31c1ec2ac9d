/**
 * Drives the packaged `dist/outpost` as a user would: built (or reused) once per run, spawned with a
 * plain environment (no vitest or tsx settings leak into it), its output kept for failure messages.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DIST_BUNDLE, DIST_EXECUTABLE, ROOT } from '../../build/build.js';
import { ensureBuilt } from '../../build/sea/freshness.js';
import { waitFor } from '../helpers.js';

export const EXE = DIST_EXECUTABLE;

/**
 * Builds dist/outpost when it is older than its sources. The e2e files run in parallel workers: a
 * lock directory makes the second one wait for the first build instead of starting its own.
 */
export async function buildOnce(): Promise<void> {
  fs.mkdirSync(path.dirname(EXE), { recursive: true });
  const lock = path.join(path.dirname(EXE), '.e2e-build.lock');
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A lock left by a killed run: no build takes ten minutes.
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 10 * 60_000) fs.rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline)
        throw new Error(`waited 10 minutes for ${lock}: remove it if no build is running`);
      else await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    ensureBuilt(ROOT, [DIST_EXECUTABLE, DIST_BUNDLE]);
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

/** The environment a user's shell would give: without what vitest and tsx set for themselves. */
function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('VITEST') || k === 'NODE_OPTIONS' || k === 'TSX' || k.startsWith('OUTPOST_')) continue;
    env[k] = v;
  }
  return { ...env, OUTPOST_LOG_LEVEL: process.env.OUTPOST_TEST_LOG ? 'debug' : 'info', ...extra };
}

export class Exe {
  readonly child: ChildProcess;
  out = '';
  err = '';
  constructor(
    readonly args: string[],
    env: Record<string, string> = {},
    opts: { cwd?: string; exe?: string } = {},
  ) {
    this.child = spawn(opts.exe ?? EXE, args, {
      cwd: opts.cwd ?? path.dirname(EXE),
      env: userEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (c: Buffer) => {
      this.out += c.toString();
      if (process.env.OUTPOST_TEST_LOG) process.stderr.write(c);
    });
    this.child.stderr!.on('data', (c: Buffer) => {
      this.err += c.toString();
      if (process.env.OUTPOST_TEST_LOG) process.stderr.write(c);
    });
  }
  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  exited(): Promise<number> {
    if (!this.alive) return Promise.resolve(this.child.exitCode ?? 128);
    return new Promise((r) => this.child.once('exit', (code, sig) => r(code ?? (sig ? 128 : 1))));
  }
  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (!this.alive) return;
    const done = this.exited();
    this.child.kill(signal);
    await done;
  }
  /** The last lines of output, for a failure message. */
  tail(): string {
    return `${this.args.slice(0, 3).join(' ')}: stderr: ${this.err.slice(-1500)} stdout: ${this.out.slice(-1500)}`;
  }
}

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `outpost ARGS` to completion. */
export async function run(
  args: string[],
  env: Record<string, string> = {},
  opts: { cwd?: string; exe?: string } = {},
): Promise<Result> {
  const p = new Exe(args, env, opts);
  // 'close', not 'exit': it comes after the output pipes are drained.
  const code = await new Promise<number>((r) => p.child.once('close', (c, sig) => r(c ?? (sig ? 128 : 1))));
  return { code, stdout: p.out, stderr: p.err };
}

/** Like `run`, but a non-zero exit throws with the output. */
export async function ok(args: string[], env: Record<string, string> = {}): Promise<string> {
  const r = await run(args, env);
  if (r.code !== 0) throw new Error(`outpost ${args.join(' ')} exited ${r.code}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

export async function startHub(
  dataDir: string,
  port: number,
  extra: string[] = [],
): Promise<{ proc: Exe; url: string }> {
  const proc = new Exe(['hub', '--data', dataDir, '--listen', `127.0.0.1:${port}`, ...extra]);
  const url = await waitFor(
    () =>
      /listening on (\S+)/.exec(proc.err)?.[1] ??
      (proc.alive ? null : Promise.reject(new Error(`hub exited: ${proc.tail()}`))),
    { timeout: 30_000, what: 'hub to listen' },
  );
  return { proc, url };
}

export async function startEdge(dataDir: string, args: string[] = []): Promise<Exe> {
  const proc = new Exe(['edge', '--data', dataDir, ...args]);
  await waitFor(
    () =>
      /outpost edge \S+ running/.test(proc.err)
        ? true
        : proc.alive
          ? null
          : Promise.reject(new Error(`edge exited: ${proc.tail()}`)),
    { timeout: 30_000, what: 'edge agent to run' },
  );
  return proc;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
