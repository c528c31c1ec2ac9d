/**
 * @module What the harness reads from the operating system: RSS and CPU time of a process from
 * /proc, the machine description written into every result, resource limits that decide how many
 * edges a run can hold, and small statistics helpers.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

/** Kernel clock ticks per second for /proc/PID/stat utime+stime (100 on every Linux we ship to). */
let clkTck: number | undefined;
function ticksPerSecond(): number {
  if (clkTck === undefined) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

/** Resident set size in bytes (VmRSS), or undefined when the process is gone or /proc is missing. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Kernel (system) CPU time consumed so far, in milliseconds: stime alone. */
export function systemCpuMs(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[12]) * 1000) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

/**
 * User + system CPU time of each thread of a process so far, in milliseconds, summed by thread
 * name (/proc/PID/task/TID/comm: `MainThread`, `WorkerThread` for a worker_threads worker such as
 * the hub's PostgreSQL client, `V8Worker` for V8's helpers, `libuv-worker`...). Threads that
 * ended are not counted.
 */
export function threadCpuMs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids)
    try {
      const { name, cpuMs: ms } = readStat(`/proc/${pid}/task/${tid}/stat`);
      out.set(name, (out.get(name) ?? 0) + ms);
    } catch {
      /* the thread ended meanwhile */
    }
  return out;
}

/** The command name and user + system CPU milliseconds of a /proc stat file (the name may contain spaces). */
function readStat(file: string): { name: string; cpuMs: number } {
  const stat = fs.readFileSync(file, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    cpuMs: ((Number(rest[11]) + Number(rest[12])) * 1000) / ticksPerSecond(),
  };
}

/** User + system CPU time consumed so far, in milliseconds. */
export function cpuMs(pid: number): number | undefined {
  try {
    return readStat(`/proc/${pid}/stat`).cpuMs;
  } catch {
    return undefined;
  }
}

/**
 * CPU time of a process and all its children, in milliseconds: its own, its waited-for children's
 * (cutime + cstime, where a child's time goes when it exits), and its live children's. For a
 * PostgreSQL postmaster, whose backends come and go with connections. A child reaped between
 * reading the parent and finding the child would be counted nowhere (at a replica's kill, its
 * backends' whole lifetime): the read is taken again until the parent's cutime did not move.
 */
export function treeCpuMs(pid: number): number | undefined {
  const fields = (p: number | string): string[] | undefined => {
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    } catch {
      return undefined;
    }
  };
  // After the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
  const reaped = (f: string[]) => Number(f[13]) + Number(f[14]);
  for (let attempt = 0; attempt < 10; attempt++) {
    const before = fields(pid);
    if (!before) return undefined;
    let live = 0;
    for (const d of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      const f = fields(d);
      if (f && Number(f[1]) === pid) live += Number(f[11]) + Number(f[12]);
    }
    const after = fields(pid);
    if (!after) return undefined;
    if (reaped(after) === reaped(before))
      return ((Number(after[11]) + Number(after[12]) + reaped(after) + live) * 1000) / ticksPerSecond();
  }
  return undefined;
}

/** Tracks CPU use of a set of processes between two points in time. */
export class CpuMeter {
  private readonly start = new Map<number, number>();
  private readonly t0 = Date.now();
  private readonly busy0 = machineBusyMs();
  private readonly self0 = process.cpuUsage();
  constructor(private readonly pids: number[]) {
    for (const p of pids) this.start.set(p, cpuMs(p) ?? 0);
  }
  /**
   * CPU the rest of the machine used meanwhile (other users' processes on a shared box): busy
   * time of all cores minus ours (measured processes and this harness).
   */
  othersMs(ours: number): number | undefined {
    const b = machineBusyMs();
    if (b === undefined || this.busy0 === undefined) return undefined;
    const self = process.cpuUsage(this.self0);
    return Math.max(0, b - this.busy0 - ours - (self.user + self.system) / 1000);
  }
  /** CPU milliseconds per pid since construction, and the wall time elapsed. */
  read(): { wallMs: number; cpu: Map<number, number> } {
    const cpu = new Map<number, number>();
    for (const p of this.pids) cpu.set(p, Math.max(0, (cpuMs(p) ?? this.start.get(p)!) - this.start.get(p)!));
    return { wallMs: Date.now() - this.t0, cpu };
  }
}

/** CPU milliseconds the whole machine spent busy (all processes, all cores), from /proc/stat. */
export function machineBusyMs(): number | undefined {
  try {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
    const busy = f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] ?? 0);
    return (busy * 1000) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

export interface MachineInfo {
  cores: number;
  cpuModel: string;
  memoryBytes: number;
  node: string;
  /** 1, 5 and 15 minute load averages when the results were written (the machine is shared). */
  loadAverage: number[];
  os: string;
  fdLimit?: number;
}

export function machineInfo(): MachineInfo {
  return {
    cores: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryBytes: os.totalmem(),
    node: process.version,
    loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    fdLimit: openFileLimit(),
  };
}

/** The soft limit on open files of this process (children inherit it), from /proc/self/limits. */
export function openFileLimit(): number | undefined {
  try {
    const m = /Max open files\s+(\d+|unlimited)/.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    if (!m) return undefined;
    return m[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(m[1]);
  } catch {
    return undefined;
  }
}

/** How many local ports the kernel hands out to outgoing connections. */
export function ephemeralPorts(): number | undefined {
  try {
    const [lo, hi] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    return hi - lo + 1;
  } catch {
    return undefined;
  }
}

/**
 * Refuses a run the machine cannot hold, with the fix. The hub needs one descriptor per edge (plus
 * SQLite, listeners); a restart storm needs twice N local ports (old ones linger in TIME_WAIT).
 */
export function checkLimits(edges: number): string[] {
  const problems: string[] = [];
  const fds = openFileLimit();
  if (fds !== undefined && fds < edges + 1024) {
    problems.push(
      `the open-file limit is ${fds}, the hub needs at least ${edges + 1024} for ${edges} edges: run \`ulimit -n ${Math.max(65536, edges * 2)}\` in this shell (or raise nofile in /etc/security/limits.conf) and start again`,
    );
  }
  const ports = ephemeralPorts();
  if (ports !== undefined && ports < edges * 2 + 1000) {
    problems.push(
      `only ${ports} local ports (net.ipv4.ip_local_port_range) for ${edges} edges: a reconnect storm needs about ${edges * 2}; widen the range with sysctl -w net.ipv4.ip_local_port_range="1024 65000"`,
    );
  }
  const free = os.freemem();
  // Measured: ~0.3 MB per simulated edge in the workers plus the hub's share; keep a safety margin.
  const need = edges * 600 * 1024 + 1024 ** 3;
  if (free < need)
    problems.push(
      `${Math.round(free / 1024 ** 2)} MiB free memory, a run with ${edges} edges may need ${Math.round(need / 1024 ** 2)} MiB: use fewer --edges`,
    );
  return problems;
}

export function percentile(values: number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const s = [...values].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i];
}

export function median(values: number[]): number | undefined {
  return percentile(values, 50);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * A pause that lets the system under test settle before a measurement (garbage after a burst,
 * status reports still arriving): `ms`, or at most BENCH_SETTLE_MS. The smoke test
 * (bench/bench.test.ts) sets that low: it checks the harness, not the figures, which a short
 * settle makes noisier.
 */
export function settle(ms: number): Promise<void> {
  const cap = process.env.BENCH_SETTLE_MS;
  return sleep(cap === undefined ? ms : Math.min(ms, Number(cap)));
}

/** Polls fn until it returns a truthy value; throws with `what` when the deadline passes. */
export async function until<T>(
  fn: () => T | Promise<T>,
  o: { timeoutMs: number; intervalMs?: number; what: string | (() => string) },
): Promise<NonNullable<T>> {
  const deadline = Date.now() + o.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      last = await fn();
      if (last) return last as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new BenchTimeout(
        `gave up after ${Math.round(o.timeoutMs / 1000)} s waiting for ${typeof o.what === 'function' ? o.what() : o.what}${last instanceof Error ? ` (last error: ${last.message})` : ''}`,
      );
    }
    await sleep(o.intervalMs ?? 100);
  }
}

/** A run that would exceed its time budget stops with this error; the result records it. */
export class BenchTimeout extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BenchTimeout';
  }
}
