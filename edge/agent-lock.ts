/**
 * @module One agent per data directory: an exclusive flock(2) on `DATA/agent.lock`, taken by
 * `outpost edge` before it reads anything of the directory and held for the process's life. The
 * kernel releases it when the holder dies, however it dies (kill -9, OOM, power loss leaves no
 * lock behind), so a lock never goes stale. A second `outpost edge --data DIR` (by hand, a second
 * unit, an agent upgrade's orphan) is refused with the holder's pid, which the holder writes into
 * the file. `outpost edge uninstall` takes it too, so no agent starts while it removes workloads.
 *
 * How, without a native addon (the single executable ships one, better-sqlite3, and no other):
 * Node has no flock(2), so the file is opened here and `flock -xn 3` (util-linux; busybox has one
 * too) is run with that descriptor as its fd 3. A flock lock belongs to the *open file
 * description*, not to the process that called flock: the helper exits and the lock stays with
 * the description, held by this process's descriptor. Checked in edge/agent-lock.test.ts: the
 * lock outlives the helper, a second description is refused, a kill -9 of the holder frees it.
 *
 * Why not share it with the release on trial (edge/upgrade/launcher.ts) by inheritance: Node opens
 * every file close-on-exec, so a child gets the descriptor only by being handed it, and a child
 * holding it would pass it, not close-on-exec any more, to every workload it starts (the process
 * driver's workloads outlive the agent: the lock would never be released). And a shared lock
 * cannot tell the launcher when the last process of its trial is gone (a release that is a wrapper
 * script leaves the real binary running when the script is killed). So the lock is handed over
 * instead: the launcher releases it just before it starts the release on trial, the trial agent
 * takes it like any agent (recording its launcher), and the launcher takes it back when the trial
 * ends; a trial agent still holding it then is its own (the record names it as the launcher) and
 * is ended first. A launcher restarted after it was killed (systemd's `Restart=always`) finds the
 * lock held by a trial agent whose launcher is gone: nobody can commit that trial any more, so it
 * ends it too, takes the lock and rolls back (edge/upgrade/launcher.ts). Either way at most one agent runs.
 *
 * A pid names a process only with its start time (`/proc/PID/stat`), and a process is ended only
 * if the kernel lists the lock among its descriptors' (`/proc/PID/fdinfo`): a recorded pid that was
 * reused by another program, or a record that is wrong, never gets a signal.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { AGENT_LOCK_GRACE_MS, AGENT_LOCK_WAIT_MS } from '../core/durations.js';

export const AGENT_LOCK_FILE = 'agent.lock';
/** The record is padded to this size and written in place: the file is never replaced or truncated. */
const RECORD_BYTES = 512;
const POLL_MS = 200;

/** A process, named by its pid and its start time (clock ticks after boot), so a reused pid is not it. */
export interface ProcessRef {
  pid: number;
  start?: string;
}

/** What the holder writes into the lock file. */
export interface LockHolder extends ProcessRef {
  /** What holds it: `outpost edge`, `outpost edge (a release on trial)`, `outpost edge uninstall`. */
  what: string;
  since: string;
  /** Set by a release on trial: the launcher that started it and commits or rolls it back. */
  launcher?: ProcessRef;
}

export interface AgentLockLog {
  info(o: object, msg: string): void;
}

/** Another process holds the data directory; the message names it and the fix. */
export class AgentLockBusy extends Error {
  constructor(
    message: string,
    readonly holder: LockHolder | undefined,
  ) {
    super(message);
    this.name = 'AgentLockBusy';
  }
}

export const agentLockPath = (dataDir: string): string => path.join(dataDir, AGENT_LOCK_FILE);

/** This process (or `pid`) with its start time; the start is absent where /proc cannot be read. */
export function processRef(pid: number = process.pid): ProcessRef {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces and parentheses): state is field 3, starttime 22.
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return start ? { pid, start } : { pid };
  } catch {
    return { pid };
  }
}

/** Whether `ref` still runs: the pid exists (not a zombie) and, when known, started at the same time. */
export function isRunning(ref: ProcessRef): boolean {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${ref.pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return false;
  return ref.start === undefined || fields[19] === ref.start;
}

const sameProcess = (a: ProcessRef, b: ProcessRef): boolean =>
  a.pid === b.pid && (a.start === undefined || b.start === undefined || a.start === b.start);

/** `what` (pid N, ...) for messages. */
export function describeHolder(h: LockHolder): string {
  const trial = h.launcher ? `, started by the launcher pid ${h.launcher.pid}` : '';
  return `${h.what} (pid ${h.pid}${trial}, since ${h.since})`;
}

/** The holder recorded in the lock file; undefined when there is none or it cannot be read yet. */
export function readLockHolder(dataDir: string): LockHolder | undefined {
  try {
    const h = JSON.parse(fs.readFileSync(agentLockPath(dataDir), 'utf8')) as LockHolder;
    return typeof h?.pid === 'number' ? h : undefined;
  } catch {
    return undefined;
  }
}

/** Runs flock(1) on `fd`: true when this description now holds the lock, false when another does. */
function tryFlock(fd: number, file: string): boolean {
  let last: Error | undefined;
  for (const bin of ['flock', '/usr/bin/flock', '/bin/flock']) {
    const r = spawnSync(bin, ['-x', '-n', '3'], { stdio: ['ignore', 'ignore', 'pipe', fd] });
    if (r.error) {
      last = r.error;
      if ((r.error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      break;
    }
    if (r.status === 0) return true;
    if (r.status === 1) return false;
    throw new Error(`locking ${file}: flock exited with ${r.status ?? r.signal}: ${String(r.stderr).trim()}`);
  }
  throw new Error(
    `locking ${file} needs flock(1) (util-linux, or busybox's flock) on PATH or in /usr/bin: install util-linux (${last?.message})`,
  );
}

export interface AgentLockOptions {
  /** What the holder is, for the refusal another process prints. */
  what: string;
  /** Set in a release on trial: its launcher (edge/upgrade/switch.ts `trialLauncher`). */
  launcher?: ProcessRef;
  log?: AgentLockLog;
  /** Tests: shorter waits. */
  graceMs?: number;
  waitMs?: number;
}

/**
 * The exclusive lock of one data directory. `acquire()` takes it or throws AgentLockBusy naming
 * the holder; `release()` lets it go (the launcher, for the release on trial). A process that
 * exits or execs drops it with its descriptor (Node opens files close-on-exec).
 */
export class AgentLock {
  private fd: number | undefined;
  readonly file: string;
  private readonly me = processRef();

  constructor(
    readonly dataDir: string,
    private readonly o: AgentLockOptions,
  ) {
    this.file = agentLockPath(dataDir);
  }

  get held(): boolean {
    return this.fd !== undefined;
  }

  /**
   * Takes the lock. A holder that is a release on trial whose launcher is gone (the launcher was
   * killed) or is this process (its trial ended, a wrapper's child may linger) is an agent nobody
   * will commit: it is sent SIGTERM, SIGKILL after the grace, and the lock is waited for. Any other
   * holder: AgentLockBusy at once, naming its pid.
   */
  async acquire(): Promise<void> {
    if (this.fd !== undefined) return;
    fs.mkdirSync(this.dataDir, { recursive: true, mode: 0o700 });
    // Read-write, created if absent, never truncated: the holder's record must survive our open.
    const fd = fs.openSync(this.file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
    try {
      await this.take(fd);
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
    this.fd = fd;
    const record: LockHolder = {
      ...this.me,
      what: this.o.what,
      since: new Date().toISOString(),
      ...(this.o.launcher ? { launcher: this.o.launcher } : {}),
    };
    // One write at offset 0 of a fixed size: a reader sees the old record, the new one, or (rarely,
    // mid-write) text that does not parse and reads again.
    const buf = Buffer.from(`${JSON.stringify(record).padEnd(RECORD_BYTES - 1)}\n`);
    fs.writeSync(fd, buf, 0, buf.length, 0);
  }

  /** Lets the lock go (the descriptor closed); another process may take it from now on. */
  release(): void {
    if (this.fd === undefined) return;
    fs.closeSync(this.fd);
    this.fd = undefined;
  }

  private async take(fd: number): Promise<void> {
    const graceMs = this.o.graceMs ?? AGENT_LOCK_GRACE_MS;
    const until = Date.now() + (this.o.waitMs ?? AGENT_LOCK_WAIT_MS);
    let ending: { holder: LockHolder; termAt: number; killed: boolean } | undefined;
    // A holder that has just taken the lock may not have written its record yet: a few polls.
    let unknownSince: number | undefined;
    for (;;) {
      if (tryFlock(fd, this.file)) return;
      const holder = readLockHolder(this.dataDir);
      // The record is a file's word: it counts only for a running process (not this one, whose
      // record an exec left behind) that the kernel does not deny holds the lock.
      const holds =
        holder && isRunning(holder) && !sameProcess(holder, this.me) ? holdsLock(holder.pid, this.file) : false;
      if (!ending) {
        if (holds === false || !holder) {
          unknownSince ??= Date.now();
          if (Date.now() - unknownSince < 2_000) {
            await sleep(POLL_MS);
            continue;
          }
          throw this.busy(undefined);
        }
        if (!this.abandoned(holder)) throw this.busy(holder);
        // Signalled only when the kernel lists the lock among its descriptors.
        if (holds !== true) throw this.busy(holder, 'its descriptors cannot be read to end it');
        this.o.log?.info(
          { pid: holder.pid, launcher: holder.launcher },
          'ending the agent left on trial by a switch that will not complete (its launcher is gone or is this process)',
        );
        signal(holder, 'SIGTERM');
        ending = { holder, termAt: Date.now(), killed: false };
      }
      if (ending && !ending.killed && Date.now() - ending.termAt > graceMs) {
        signal(ending.holder, 'SIGKILL');
        ending.killed = true;
      }
      if (Date.now() > until)
        throw this.busy(holder ?? ending?.holder, ending ? 'an ended trial agent that has not let go' : undefined);
      await sleep(POLL_MS);
    }
  }

  /** A release on trial that no launcher will commit any more. */
  private abandoned(h: LockHolder): boolean {
    if (!h.launcher) return false;
    return sameProcess(h.launcher, this.me) || !isRunning(h.launcher);
  }

  private busy(h: LockHolder | undefined, note?: string): AgentLockBusy {
    // No running holder recorded: a process that took the lock without writing its pid (an agent of
    // another build); fuser names every process with the file open.
    const who = h ? describeHolder(h) : `another process (none recorded its pid; see fuser -v ${this.file})`;
    const kill = h ? `, or kill ${h.pid}` : '';
    return new AgentLockBusy(
      `${this.dataDir} is in use by ${who}${note ? ` (${note})` : ''}: one edge agent per data directory (${this.file} is locked). Stop it first (systemctl stop outpost-edge${kill}), or give this one another --data`,
      h,
    );
  }
}

/**
 * Whether process `pid` holds a flock lock through a descriptor of `file`: its /proc fdinfo lists
 * the locks of that descriptor's open file description. Undefined when its descriptors cannot be read.
 */
export function holdsLock(pid: number, file: string): boolean | undefined {
  let target: string;
  let fds: string[];
  try {
    target = fs.realpathSync(file);
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return undefined;
  }
  for (const fd of fds) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) !== target) continue;
      if (/^lock:.*\bFLOCK\b/m.test(fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))) return true;
    } catch {
      // closed meanwhile
    }
  }
  return false;
}

function signal(ref: ProcessRef, sig: NodeJS.Signals): void {
  // Checked right before: a pid that now names another program is left alone.
  if (!isRunning(ref)) return;
  try {
    process.kill(ref.pid, sig);
  } catch {
    /* gone meanwhile */
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
