/**
 * @module The processes of a cluster node (docs/clusters.md, "On the site"): each component runs
 * detached from the agent (its own process group, its output in `logs/NAME.log`), and its pid is
 * kept in `run/NAME.pid`. The components outlive the agent: a kill -9 of the agent leaves them
 * running, and the next agent finds each by its pid file and its command line (`/proc/PID/cmdline`
 * must be the one the order gives), so it neither starts a second nor takes a stranger for one.
 *
 * Stopping sends SIGTERM to the component's process group, then SIGKILL after a grace period.
 * What containerd started lives on after containerd (its shims and their containers, by design):
 * `strays` finds them by the node's directory in their command lines, and `unmountUnder` releases
 * the mounts the kubelet and containerd left under the node's directory.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ComponentCommand } from './configs.js';

const run = promisify(execFile);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A process's command line, or undefined when it is gone (or a zombie, whose cmdline is empty). */
export function cmdlineOf(pid: number): string[] | undefined {
  try {
    const raw = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (!raw) return undefined;
    return raw.replace(/\0$/, '').split('\0');
  } catch {
    return undefined;
  }
}

export function alive(pid: number): boolean {
  return cmdlineOf(pid) !== undefined;
}

/** The line each start writes into the component's log before its output. */
export const START_MARK = '--- outpost: started at ';

const pidFile = (runDir: string, name: string) => path.join(runDir, `${name}.pid`);

/** The pid of a component that runs now with exactly this command line; undefined otherwise. */
export function findComponent(runDir: string, c: ComponentCommand): number | undefined {
  const pid = readPid(runDir, c.name);
  if (pid === undefined) return undefined;
  const cmd = cmdlineOf(pid);
  return cmd && JSON.stringify(cmd) === JSON.stringify(c.argv) ? pid : undefined;
}

/** The pid the pid file names, whatever runs there (undefined without a file). */
export function readPid(runDir: string, name: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(pidFile(runDir, name), 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Starts a component detached (it outlives the agent) and records its pid. */
export function startComponent(runDir: string, logDir: string, c: ComponentCommand): number {
  fs.mkdirSync(runDir, { recursive: true, mode: 0o700 });
  fs.mkdirSync(logDir, { recursive: true, mode: 0o700 });
  const out = fs.openSync(path.join(logDir, `${c.name}.log`), 'a', 0o600);
  try {
    // Where this start's output begins (node-state.ts `tail` reads from the last one).
    fs.writeSync(out, `${START_MARK}${new Date().toISOString()} ${c.argv[0]}\n`);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: [...(c.path ?? []), process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'].join(':'),
    };
    // NODE_OPTIONS and the agent's own settings mean nothing to the components.
    delete env.NODE_OPTIONS;
    const child = spawn(c.argv[0]!, c.argv.slice(1), { detached: true, stdio: ['ignore', out, out], env });
    child.on('error', () => undefined);
    child.unref();
    if (!child.pid) throw new Error(`could not start ${c.name} (${c.argv[0]})`);
    const tmp = `${pidFile(runDir, c.name)}.tmp`;
    fs.writeFileSync(tmp, `${child.pid}\n`, { mode: 0o600 });
    fs.renameSync(tmp, pidFile(runDir, c.name));
    return child.pid;
  } finally {
    fs.closeSync(out);
  }
}

/** Stops a process group: SIGTERM, then SIGKILL after `graceMs`; resolves once the leader is gone. */
export async function stopGroup(pid: number, graceMs = 10_000): Promise<void> {
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-pid, s);
    } catch {
      try {
        process.kill(pid, s);
      } catch {
        /* gone */
      }
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (alive(pid) && Date.now() < deadline) await sleep(100);
  if (alive(pid)) {
    signal('SIGKILL');
    const hard = Date.now() + 5_000;
    while (alive(pid) && Date.now() < hard) await sleep(100);
  }
}

/** Stops the component the pid file names if it is the one we started (by its command line's binary under `root`). */
export async function stopComponent(runDir: string, name: string, root: string, graceMs?: number): Promise<void> {
  const pid = readPid(runDir, name);
  if (pid !== undefined) {
    const cmd = cmdlineOf(pid);
    if (cmd && cmd[0]!.startsWith(root + path.sep)) await stopGroup(pid, graceMs);
  }
  fs.rmSync(pidFile(runDir, name), { force: true });
}

/** Every process whose command line names a path under `root` (shims, containers' pause, leftovers). */
export function strays(root: string): number[] {
  const found: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const pid = Number(e);
    if (pid === process.pid) continue;
    const cmd = cmdlineOf(pid);
    if (cmd?.some((a) => a.startsWith(root + path.sep) || a.includes(`=${root}${path.sep}`))) found.push(pid);
  }
  return found;
}

/** The children of these processes, recursively (a shim's containers). */
export function descendants(pids: number[]): number[] {
  const parents = new Map<number, number[]>();
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      (parents.get(ppid) ?? parents.set(ppid, []).get(ppid)!).push(Number(e));
    } catch {
      /* gone */
    }
  }
  const out: number[] = [];
  const queue = [...pids];
  while (queue.length) {
    const p = queue.shift()!;
    for (const c of parents.get(p) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

/** SIGKILLs these processes and waits (up to 10 s) for them to go. */
export async function killAll(pids: number[]): Promise<void> {
  for (const p of pids)
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* gone */
    }
  const deadline = Date.now() + 10_000;
  while (pids.some(alive) && Date.now() < deadline) await sleep(100);
}

/** The mount points under `root`, deepest first (from /proc/self/mountinfo). */
export function mountsUnder(root: string): string[] {
  let text = '';
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const unescape = (s: string) => s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return [
    ...new Set(
      text
        .split('\n')
        .map((l) => l.split(' ')[4])
        .filter((m): m is string => !!m)
        .map(unescape)
        .filter((m) => m === root || m.startsWith(root + path.sep)),
    ),
  ].sort((a, b) => b.length - a.length);
}

/** Unmounts (lazily) every mount under `root`; returns those that would not go. */
export async function unmountUnder(root: string): Promise<string[]> {
  const left: string[] = [];
  for (const m of mountsUnder(root)) {
    try {
      await run('umount', ['-l', m]);
    } catch {
      left.push(m);
    }
  }
  return left;
}

/** Deletes a network interface by name (the cluster's bridge); nothing when there is none. */
export async function deleteLink(name: string): Promise<void> {
  try {
    await run('ip', ['link', 'delete', name]);
  } catch {
    /* none, or already gone */
  }
}
