/**
 * @module Supervises one host process (one container replica): spawn, notice its exit, restart per
 * restartPolicy with exponential backoff, run its probes, rotate its log.
 *
 * Exit is noticed by polling /proc, not by `wait`: after an agent restart the process is no
 * longer our child. The exit code comes from the file the spawn wrapper writes (see proc.ts).
 * All state transitions run one at a time on `queue`, so a poll tick, a probe failure and a stop
 * request never interleave.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { Logger } from '../../../core/logger.js';
import { rotateIfNeeded, type RotateOptions } from './logs.js';
import { LogTimes } from './log-times.js';
import type { ProcessPlan } from './plan.js';
import { heldElsewhereReason, WorkloadPorts } from './port-owner.js';
import { ProcessProbes } from './probes.js';
import {
  groupMembers,
  isAlive,
  signalGroup,
  spawnDetached,
  terminateGroup,
  type ProcIdentity,
  type Wrapper,
} from './proc.js';
import type { ProcessRecord } from './state.js';

/** How often a supervised process's log is looked at (rotation, the time index). */
const LOG_CHECK_MS = 1_000;

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** A run this long without exiting resets the backoff (and ends "restarting"). */
  stableMs: number;
}

export interface SupervisorDeps {
  logPath: string;
  exitFile: string;
  pollMs: number;
  backoff: BackoffOptions;
  rotate: RotateOptions;
  /** Called after every change of `record`, to persist it. */
  onChange: () => void;
  log: Logger;
}

export interface ProcessObservation {
  ready: boolean;
  /** In backoff, running again after a failure and not yet stable, or lost readiness it had: the workload is Degraded. */
  degraded: boolean;
  failed: boolean;
  succeeded: boolean;
  stopped: boolean;
  message?: string;
}

export function newRecord(): ProcessRecord {
  return { pid: 0, startTime: 0, startedAt: 0, status: 'stopped', restarts: 0, consecutiveFailures: 0 };
}

export class ProcessSupervisor {
  private timer: NodeJS.Timeout | undefined;
  /** The probes of the current run (kept after they stop: what they said stays in the status). */
  private probes: ProcessProbes | undefined;
  private childExit: { code: number | null } | undefined;
  private queue: Promise<void> = Promise.resolve();
  private queued = false;
  /** When the log was last looked at (LOG_CHECK_MS). */
  private logCheckedAt = 0;
  private detached = false;
  private startError: string | undefined;
  private timesIndex: LogTimes | undefined;

  constructor(
    readonly plan: ProcessPlan,
    readonly record: ProcessRecord,
    private readonly deps: SupervisorDeps,
  ) {}

  private get times(): LogTimes {
    return (this.timesIndex ??= new LogTimes(this.deps.logPath));
  }

  get identity(): ProcIdentity {
    return { pid: this.record.pid, startTime: this.record.startTime };
  }

  /** Starts a fresh process (new workload, startWorkload). */
  start(): Promise<void> {
    return this.enqueue(async () => {
      this.record.consecutiveFailures = 0;
      await this.spawn();
      this.ensureTimer();
    });
  }

  /**
   * Takes over from a previous agent: a live process is kept as it is; one that died while no
   * agent watched is handled like any exit (restart per policy); backoff resumes where it was.
   */
  adopt(sameBoot: boolean): Promise<void> {
    return this.enqueue(async () => {
      const r = this.record;
      if (r.status === 'running') {
        if (sameBoot && isAlive(this.identity)) {
          this.startProbes();
        } else {
          // After a reboot the pid means nothing: never signal whatever holds it now.
          if (!sameBoot) r.pid = 0;
          await this.handleExit(
            sameBoot ? 'exited while the agent was not running' : 'gone after a reboot of the device',
          );
        }
      }
      if (r.status === 'running' || r.status === 'backoff') this.ensureTimer();
    });
  }

  /**
   * Takes over a process the previous agent spawned for this record's intent but died before
   * recording (ManagedWorkload.adopt found it by its nonce): recorded now, watched from here on.
   */
  takeOver(w: Wrapper): Promise<void> {
    return this.enqueue(async () => {
      const r = this.record;
      r.pid = w.pid;
      r.startTime = w.startTime;
      r.startedAt = Date.now();
      r.status = 'running';
      r.nextStartAt = undefined;
      this.deps.onChange();
    });
  }

  /** Stops the process for good (stopWorkload, remove, replacement): SIGTERM, grace, SIGKILL. */
  stop(): Promise<void> {
    return this.enqueue(async () => {
      this.stopProbes();
      this.clearTimer();
      if (this.record.status === 'running') await terminateGroup(this.identity, this.plan.graceMs);
      this.record.status = 'stopped';
      this.record.nextStartAt = undefined;
      this.deps.onChange();
    });
  }

  /** Stops watching and leaves the process running (agent shutdown). */
  detach(): void {
    this.detached = true;
    this.clearTimer();
    this.stopProbes();
  }

  observe(): ProcessObservation {
    const r = this.record;
    const exit = r.lastExit ? describeExit(r.lastExit) : undefined;
    const base = { ready: false, degraded: false, failed: false, succeeded: false, stopped: false };
    switch (r.status) {
      case 'running': {
        const probes = this.probes?.view ?? {
          ready: false,
          lostReadiness: false,
          waiting: 'waiting for the startup probe',
        };
        const recovering =
          r.consecutiveFailures > 0 ? `running again after ${exit ?? 'a failure'} (${r.restarts} restarts)` : undefined;
        return {
          ...base,
          ready: probes.ready,
          degraded: recovering !== undefined || probes.lostReadiness,
          message: [recovering, probes.waiting].filter(Boolean).join('; ') || undefined,
        };
      }
      case 'backoff': {
        const secs = Math.max(0, Math.ceil(((r.nextStartAt ?? 0) - Date.now()) / 1000));
        return {
          ...base,
          degraded: true,
          message: `${exit ?? 'exited'}; restarting in ${secs}s (back-off, ${r.restarts} restarts)`,
        };
      }
      case 'failed':
        return {
          ...base,
          failed: true,
          message: `${exit ?? 'exited'} and restartPolicy is ${this.plan.restartPolicy}`,
        };
      case 'succeeded':
        return { ...base, succeeded: true, message: 'completed (exit code 0)' };
      case 'stopped':
        return { ...base, stopped: true, message: 'stopped' };
    }
  }

  private enqueue(fn: () => Promise<void>): Promise<void> {
    const p = this.queue.then(fn);
    this.queue = p.catch((err: unknown) =>
      this.deps.log.error({ err, process: this.plan.key }, 'supervisor step failed'),
    );
    return p;
  }

  private ensureTimer(): void {
    if (this.timer || this.detached) return;
    this.timer = setInterval(() => {
      if (this.queued) return;
      this.queued = true;
      // A failed tick is logged by the queue (enqueue); caught here too, or it is an unhandled rejection.
      void this.enqueue(() => this.tick())
        .catch(() => undefined)
        .finally(() => (this.queued = false));
    }, this.deps.pollMs);
    // The agent's own loops keep it alive; a forgotten driver must not hold a test process open.
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async tick(): Promise<void> {
    if (this.detached) return;
    const r = this.record;
    if (r.status === 'running') {
      if (this.childExit || !isAlive(this.identity)) {
        await this.handleExit();
      } else if (r.consecutiveFailures > 0 && Date.now() - r.startedAt >= this.deps.backoff.stableMs) {
        r.consecutiveFailures = 0;
        this.deps.onChange();
      }
    } else if (r.status === 'backoff' && Date.now() >= (r.nextStartAt ?? 0)) {
      await this.spawn();
    }
    // The log's housekeeping at most once a second (the time index records one entry a second at
    // most): with a tick every 500 ms it was two `stat`s a tick per process, half of an idle agent's
    // CPU with 20 workloads (docs/benchmarks.md, issue #17).
    const now = Date.now();
    if (now - this.logCheckedAt < LOG_CHECK_MS) return;
    this.logCheckedAt = now;
    try {
      const size = await rotateIfNeeded(this.deps.logPath, this.deps.rotate);
      if (size !== undefined) await this.times.mark(now, size);
    } catch (err) {
      this.deps.log.warn({ err, file: this.deps.logPath }, 'log rotation or time index failed');
    }
  }

  private async spawn(): Promise<void> {
    const r = this.record;
    this.childExit = undefined;
    this.startError = undefined;
    await rm(this.deps.exitFile, { force: true });
    try {
      const st = await stat(this.plan.workingDir).catch(() => null);
      if (!st?.isDirectory()) {
        throw new Error(
          `workingDir ${this.plan.workingDir} does not exist; create it on the device or change workingDir`,
        );
      }
      // The intent goes to disk before the spawn: an agent killed before it records the pid leaves
      // a process the next agent can tell from a stray (ManagedWorkload.adopt).
      // What the log holds already was written before this start (logs --since).
      await this.times.mark().catch(() => undefined);
      const nonce = randomBytes(8).toString('hex');
      await writeIntent(intentFile(this.deps.exitFile), nonce);
      const spawned = await spawnDetached({
        argv: this.plan.argv,
        env: this.plan.env,
        cwd: this.plan.workingDir,
        logPath: this.deps.logPath,
        exitFile: this.deps.exitFile,
        nonce,
      });
      r.pid = spawned.pid;
      r.startTime = spawned.startTime;
      r.startedAt = Date.now();
      r.status = 'running';
      r.nextStartAt = undefined;
      const pid = spawned.pid;
      void spawned.exited.then((code) => {
        if (this.record.pid === pid) this.childExit = { code };
      });
      this.deps.log.info({ process: this.plan.key, pid, argv: this.plan.argv }, 'process started');
      this.startProbes();
      this.deps.onChange();
    } catch (err) {
      this.startError = err instanceof Error ? err.message : String(err);
      r.status = 'running';
      r.pid = 0;
      r.startTime = -1;
      r.startedAt = Date.now();
      await this.handleExit(`could not start: ${this.startError}`);
    }
  }

  private async handleExit(reason?: string, killed?: string): Promise<void> {
    const r = this.record;
    this.stopProbes();
    // A port it declares that another program holds is the likely reason it exited (it could not
    // bind): said with the exit. Looked at before its group is killed, whose members are its own.
    const taken = r.pid > 0 ? await this.portTakenElsewhere() : undefined;
    // The wrapper is gone; anything it left in its group (a daemonized child) goes too, or a
    // restarted process would find its port taken.
    if (r.pid > 0) signalGroup(this.identity, 'SIGKILL');
    const code = await this.exitCode();
    const now = Date.now();
    const exited = code !== null ? `exited with code ${code}${code !== 0 && taken ? ` (${taken})` : ''}` : undefined;
    r.lastExit = { code, at: now, reason: killed ?? exited ?? reason ?? 'exited (exit code unknown)' };
    const restart = this.plan.restartPolicy === 'Always' || (this.plan.restartPolicy === 'OnFailure' && code !== 0);
    if (!restart) {
      r.status = code === 0 ? 'succeeded' : 'failed';
      this.clearTimer();
      this.deps.log.info({ process: this.plan.key, code, reason: r.lastExit.reason }, 'process finished');
    } else {
      r.restarts++;
      r.consecutiveFailures++;
      const { baseMs, maxMs } = this.deps.backoff;
      const delay = Math.min(maxMs, baseMs * 2 ** Math.min(r.consecutiveFailures - 1, 20));
      r.status = 'backoff';
      r.nextStartAt = now + delay;
      this.deps.log.warn(
        { process: this.plan.key, code, reason: r.lastExit.reason, delayMs: delay, restarts: r.restarts },
        'process exited, restarting after back-off',
      );
    }
    this.deps.onChange();
  }

  /** The first port the process declares that a program outside its group listens on, said as the probes say it. */
  private async portTakenElsewhere(): Promise<string | undefined> {
    const ports = new WorkloadPorts(() => groupMembers(this.identity));
    for (const port of this.plan.ports) {
      const holder = await ports.heldElsewhere(port);
      if (holder) return heldElsewhereReason(port, holder);
    }
    return undefined;
  }

  private async exitCode(): Promise<number | null> {
    try {
      const text = await readFile(this.deps.exitFile, 'utf8');
      const n = Number(text.trim());
      if (Number.isInteger(n)) return n;
    } catch {
      // No exit file: killed by a signal, the wrapper was killed, or the host rebooted.
    }
    return this.childExit?.code ?? null;
  }

  private startProbes(): void {
    this.stopProbes();
    const target = {
      env: this.plan.env,
      cwd: this.plan.workingDir,
      ports: new WorkloadPorts(() => groupMembers(this.identity)),
    };
    this.probes = new ProcessProbes(this.plan, target, (which) => this.killForProbe(which));
    this.probes.start();
  }

  private killForProbe(which: 'liveness' | 'startup'): void {
    const pid = this.record.pid;
    void this.enqueue(async () => {
      if (this.record.status !== 'running' || this.record.pid !== pid) return;
      this.deps.log.warn({ process: this.plan.key, pid }, `${which} probe failed, killing the process`);
      this.stopProbes();
      await terminateGroup(this.identity, this.plan.graceMs);
      await this.handleExit(
        undefined,
        `killed after the ${which} probe failed ${this.plan[which]!.failureThreshold} times`,
      );
    });
  }

  private stopProbes(): void {
    this.probes?.stop();
  }
}

function describeExit(e: { code: number | null; reason: string }): string {
  if (e.code === null || e.reason.startsWith('killed') || e.reason.startsWith('could not')) return e.reason;
  if (e.code === 127) return `${e.reason} (command not found)`;
  if (e.code > 128) return `${e.reason} (signal ${e.code - 128})`;
  return e.reason;
}

/** Makes sure a default working directory exists; an explicit one is the operator's to create. */
export async function ensureDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
}

/** `run/KEY.intent` next to `run/KEY.exit`: the nonce of the last spawn of the process. */
export function intentFile(exitFile: string): string {
  return exitFile.replace(/\.exit$/, '') + '.intent';
}

async function writeIntent(file: string, nonce: string): Promise<void> {
  const tmp = `${file}.tmp`;
  await writeFile(tmp, nonce, { mode: 0o600 });
  await rename(tmp, file);
}

export async function readIntent(file: string): Promise<string | undefined> {
  try {
    return (await readFile(file, 'utf8')).trim() || undefined;
  } catch {
    return undefined;
  }
}
