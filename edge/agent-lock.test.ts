/**
 * The data directory's lock (agent-lock.ts) with real processes: what flock(1) on an inherited
 * descriptor gives (held after the helper exits, refused to a second open file description, freed
 * by kill -9, not passed to the holder's children), and which holders a new `outpost edge` ends:
 * only a release on trial whose launcher is gone or is the new process itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, tempDir, waitFor } from '../test/helpers.js';
import { AgentLock, AgentLockBusy, isRunning, processRef, readLockHolder } from './agent-lock.js';

const HOLDER = path.join(ROOT, 'test', 'fakes', 'lock-holder.ts');
const started: number[] = [];

afterEach(() => {
  for (const pid of started.splice(0))
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
});

/** A process holding `dir`'s lock; resolves once it holds it, with its pid and its child's. */
async function holder(
  dir: string,
  launcher?: string,
  env: Record<string, string> = {},
): Promise<{ proc: ChildProcess; pid: number; child: number }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', HOLDER, dir, ...(launcher ? [launcher] : [])], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(proc.pid!);
  let out = '';
  let err = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const child = await waitFor(
    () =>
      /LOCKED (\d+)/.exec(out)?.[1] ??
      (proc.exitCode === null ? null : Promise.reject(new Error(`holder exited: ${err}`))),
    { timeout: 30_000, what: 'the holder to take the lock' },
  );
  started.push(Number(child));
  return { proc, pid: proc.pid!, child: Number(child) };
}

/** Whether `pid` is the `sleep` that `parent` (flock) started once it held the lock. */
function isSleepUnder(pid: number, parent: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.includes('(sleep)') && Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent;
  } catch {
    return false;
  }
}

const refused = async (lock: AgentLock): Promise<AgentLockBusy> => {
  const err = await lock.acquire().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentLockBusy);
  return err as AgentLockBusy;
};

describe('the data directory lock', () => {
  it('is refused to a second taker naming the holder pid, outlives the flock helper, is not passed to children, and a kill -9 frees it', async () => {
    const dir = tempDir('outpost-lock-');
    const h = await holder(dir);
    // flock(1) has exited long ago: the lock stays with the holder's open file description.
    const lock = new AgentLock(dir, { what: 'test' });
    const err = await refused(lock);
    expect(err.holder?.pid).toBe(h.pid);
    expect(err.message).toContain(`lock-holder (test double) (pid ${h.pid}`);
    expect(err.message).toContain(`kill ${h.pid}`);
    expect(readLockHolder(dir)?.pid).toBe(h.pid);
    expect(lock.held).toBe(false);

    h.proc.kill('SIGKILL');
    // Its child runs on (as a process driver's workloads outlive the agent) and holds nothing.
    await waitFor(() => !isRunning({ pid: h.pid }), { what: 'the holder gone' });
    expect(isRunning({ pid: h.child })).toBe(true);
    await lock.acquire();
    expect(lock.held).toBe(true);
    expect(readLockHolder(dir)).toMatchObject({ pid: process.pid, what: 'test' });
    // The lock is the open file description's: a second one, even in this process, is refused.
    await refused(new AgentLock(dir, { what: 'second', waitMs: 500 }));
    lock.release();
    const again = new AgentLock(dir, { what: 'third' });
    await again.acquire();
    again.release();
  }, 60_000);

  it('a release on trial is refused while its launcher runs, and ended once the launcher is gone', async () => {
    const dir = tempDir('outpost-lock-');
    const launcher = spawn('sleep', ['600'], { stdio: 'ignore' });
    started.push(launcher.pid!);
    const ref = processRef(launcher.pid!);
    expect(ref.start).toBeDefined();
    const h = await holder(dir, `${ref.pid}:${ref.start}`);
    const err = await refused(new AgentLock(dir, { what: 'test' }));
    expect(err.message).toContain(`pid ${h.pid}, started by the launcher pid ${ref.pid}`);
    expect(isRunning({ pid: h.pid })).toBe(true);

    launcher.kill('SIGKILL');
    await waitFor(() => !isRunning(ref), { what: 'the launcher gone' });
    const lock = new AgentLock(dir, { what: 'test' });
    await lock.acquire();
    expect(lock.held).toBe(true);
    expect(isRunning({ pid: h.pid })).toBe(false);
    lock.release();
  }, 60_000);

  it('a launcher taking the lock back ends its own trial agent, with SIGKILL after the grace when it ignores SIGTERM', async () => {
    const dir = tempDir('outpost-lock-');
    const me = processRef();
    const h = await holder(dir, `${me.pid}:${me.start}`, { OUTPOST_FAKE_IGNORE_TERM: '1' });
    const lock = new AgentLock(dir, { what: 'test', graceMs: 500 });
    await lock.acquire();
    expect(isRunning({ pid: h.pid })).toBe(false);
    expect(h.proc.signalCode).toBe('SIGKILL');
    lock.release();
  }, 60_000);

  it('a record naming a process that does not hold the lock (a reused pid, a wrong record) gets no signal; the refusal says nobody recorded itself', async () => {
    const dir = tempDir('outpost-lock-');
    const file = path.join(dir, 'agent.lock');
    const other = spawn('sleep', ['600'], { stdio: 'ignore' });
    started.push(other.pid!);
    // The lock held by a process that writes no record.
    const flock = spawn('flock', ['-o', '-x', file, 'sleep', '600'], { stdio: 'ignore' });
    started.push(flock.pid!);
    const sleeping = await waitFor(
      () => fs.readdirSync('/proc').find((p) => /^\d+$/.test(p) && isSleepUnder(Number(p), flock.pid!)),
      { what: 'flock holding the file' },
    );
    started.push(Number(sleeping));
    const real = processRef(other.pid!);
    // Records of a trial agent whose launcher is gone: its pid reused since (another start time),
    // and a record naming a live process that does not hold the lock.
    for (const start of ['1', real.start!]) {
      const record = { pid: other.pid, start, what: 'outpost edge', since: 'x', launcher: { pid: 1, start: '1' } };
      fs.writeFileSync(file, JSON.stringify(record));
      const err = await refused(new AgentLock(dir, { what: 'test', waitMs: 3_000 }));
      expect(err.holder).toBeUndefined();
      expect(err.message).toContain(`another process (none recorded its pid; see fuser -v ${file})`);
      expect(isRunning(real)).toBe(true);
    }
  }, 30_000);
});
