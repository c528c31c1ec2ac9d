/**
 * @module Host process primitives for the process driver: identity from /proc, detached spawn,
 * and killing a process group. Linux only (the driver checks for /proc on start).
 *
 * A process is identified by (pid, start time): /proc/PID/stat field 22 is the start time in
 * clock ticks since boot, so a pid reused by another program after ours died (or after a reboot)
 * does not look like ours. The boot id guards against the rare same-pid-same-ticks after reboot.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';

export interface ProcIdentity {
  pid: number;
  /** /proc/PID/stat field 22, clock ticks since boot. */
  startTime: number;
}

interface ProcStat {
  state: string;
  pgid: number;
  startTime: number;
}

/** The pids in /proc now (none when /proc cannot be read). */
function livePids(): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  return entries.filter((e) => e.charCodeAt(0) >= 48 && e.charCodeAt(0) <= 57).map(Number);
}

/** Parses /proc/PID/stat; the comm field may contain spaces and parentheses, so split after the last ')'. */
export function readStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  // Fields after comm start at field 3 (state); field N is rest[N - 3].
  const rest = text.slice(close + 2).split(' ');
  return { state: rest[0], pgid: Number(rest[5 - 3]), startTime: Number(rest[22 - 3]) };
}

export function startTimeOf(pid: number): number | null {
  return readStat(pid)?.startTime ?? null;
}

/** True when the process with this identity still runs (a zombie counts as gone: it has exited). */
export function isAlive(id: ProcIdentity): boolean {
  const st = readStat(id.pid);
  return st !== null && st.startTime === id.startTime && st.state !== 'Z' && st.state !== 'X';
}

let cachedBootId: string | undefined;
export function bootId(): string {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      cachedBootId = '';
    }
  }
  return cachedBootId;
}

/**
 * Live members of the process group led by `leader`. Members started no earlier than the leader;
 * that, and the kernel keeping a group's number reserved while any member lives, keeps us from
 * matching a stranger's group that reused the number after ours was empty.
 */
export function groupMembers(leader: ProcIdentity): number[] {
  const out: number[] = [];
  if (leader.pid <= 0) return out;
  // The kernel does not hand out a pid while it is still some live group's id; so if another
  // program holds the leader's pid now, our group is empty and that group is a stranger's.
  const holder = readStat(leader.pid);
  if (holder && holder.startTime !== leader.startTime) return out;
  for (const pid of livePids()) {
    const st = readStat(pid);
    if (!st || st.pgid !== leader.pid || st.state === 'Z' || st.state === 'X') continue;
    if (pid === leader.pid ? st.startTime !== leader.startTime : st.startTime < leader.startTime) continue;
    out.push(pid);
  }
  return out;
}

/** Sends `signal` to every live member of the group; returns how many were signalled. */
export function signalGroup(leader: ProcIdentity, signal: NodeJS.Signals): number {
  const members = groupMembers(leader);
  if (members.length === 0) return 0;
  if (members.includes(leader.pid)) {
    try {
      process.kill(-leader.pid, signal);
      return members.length;
    } catch {
      // Fall through: signal members one by one.
    }
  }
  let n = 0;
  for (const pid of members) {
    try {
      process.kill(pid, signal);
      n++;
    } catch {
      // Already gone.
    }
  }
  return n;
}

/** SIGTERM the group, wait up to `graceMs` for it to empty, then SIGKILL what is left. */
export async function terminateGroup(leader: ProcIdentity, graceMs: number, pollMs = 50): Promise<void> {
  if (signalGroup(leader, 'SIGTERM') === 0) return;
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, pollMs));
    if (groupMembers(leader).length === 0) return;
  }
  signalGroup(leader, 'SIGKILL');
  const killDeadline = Date.now() + 5_000;
  while (groupMembers(leader).length > 0 && Date.now() < killDeadline) await new Promise((r) => setTimeout(r, pollMs));
}

/**
 * The wrapper records the exit code in a file: once the agent has died and a new one adopted the
 * process, it is no longer our child and nobody can `wait` for it, yet restartPolicy OnFailure and
 * Never need the code. `$0` names the wrapper in `ps`; the exit file is `$1`.
 */
const WRAPPER = 'f=$1; shift; "$@"; c=$?; echo "$c" > "$f.tmp" && mv "$f.tmp" "$f"; exit "$c"';

const WRAPPER_NAME = 'outpost-run';

export interface Wrapper extends ProcIdentity {
  /** The exit file the wrapper writes (its `$1`): names the workload's run directory and the process key. */
  exitFile: string;
  nonce?: string;
}

/**
 * Every live spawn wrapper whose exit file is in `runDir` (found in /proc by its command line,
 * which anyone may read), so a new agent finds the processes an old one started but did not live
 * to record (a kill -9 between spawn and state write): the driver adopts the one whose nonce is
 * the recorded intent and reaps the others.
 */
export function findWrappers(runDir: string): Wrapper[] {
  const out: Wrapper[] = [];
  const prefix = runDir.endsWith('/') ? runDir : `${runDir}/`;
  for (const pid of livePids()) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (argv[0] !== '/bin/sh' || argv[1] !== '-c' || argv[2] !== WRAPPER) continue;
    const name = argv[3] ?? '';
    if (name !== WRAPPER_NAME && !name.startsWith(`${WRAPPER_NAME}:`)) continue;
    if (!argv[4]?.startsWith(prefix)) continue;
    const st = readStat(pid);
    if (!st || st.pgid !== pid || st.state === 'Z' || st.state === 'X') continue;
    const nonce = name.slice(WRAPPER_NAME.length + 1);
    out.push({ pid, startTime: st.startTime, exitFile: argv[4], ...(nonce ? { nonce } : {}) });
  }
  return out;
}

export interface SpawnSpec {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  logPath: string;
  exitFile: string;
  /** The intent this spawn carries out (see `findWrappers`): the wrapper's `$0` is `outpost-run:NONCE`. */
  nonce?: string;
}

export interface Spawned extends ProcIdentity {
  /** Resolves with the wrapper's exit code (or null when killed by a signal) while we are its parent. */
  exited: Promise<number | null>;
}

/**
 * Starts a process in its own session (so its group can be signalled as one and a kill of the agent
 * does not reach it), with stdout and stderr appended to the log file (a pipe would break, or block
 * the process, once the agent is gone).
 */
export async function spawnDetached(spec: SpawnSpec): Promise<Spawned> {
  const fd = openSync(spec.logPath, 'a', 0o640);
  try {
    const name = spec.nonce ? `${WRAPPER_NAME}:${spec.nonce}` : WRAPPER_NAME;
    const child = spawn('/bin/sh', ['-c', WRAPPER, name, spec.exitFile, ...spec.argv], {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', () => resolve(null));
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => reject(new Error(`spawning /bin/sh for ${spec.argv[0]}`, { cause: err })));
    });
    child.unref();
    const pid = child.pid!;
    const startTime = startTimeOf(pid);
    if (startTime === null) {
      // It already exited and was reaped; report an identity that is never alive.
      return { pid, startTime: -1, exited };
    }
    return { pid, startTime, exited };
  } finally {
    closeSync(fd);
  }
}
