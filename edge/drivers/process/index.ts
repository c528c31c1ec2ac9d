/**
 * @module The process runtime driver: for small devices without a container runtime, each
 * container of a Pod or Deployment becomes a supervised host process.
 *
 * - `command` + `args` are run as given (required; `image` is only recorded), with `env`/`envFrom`
 *   from the workload's ConfigMaps and Secrets, in `workingDir` (default `workloads/NAME/work`).
 * - Volumes cannot be mounted for a host process: configMap, secret and emptyDir volumes are
 *   written under `workloads/NAME/volumes/` and announced as `OUTPOST_VOLUME_<NAME>`; `mountPath`
 *   is ignored and nothing is ever written outside the data directory (see config.ts).
 * - Processes run detached (own session, output appended to log files) so they survive the agent,
 *   even a kill -9. `start()` adopts them from the state files; see supervisor.ts and state.ts.
 * - Processes share the host network: a port is reached at 127.0.0.1, and a Deployment with
 *   replicas > 1 cannot declare one.
 * - `exec` and `execInteractive` run the command as a host process with the container's env and
 *   workingDir. There is no terminal for `-t`: allocating a pty needs a native module, which the
 *   single-binary agent does not ship, so `-t` runs with pipes (docs/tunnel.md).
 *
 * @example
 * ```ts
 * const driver = createProcessDriver({ dataDir: '/var/lib/outpost' });
 * await driver.start();
 * await driver.apply(unit);
 * ```
 */
import { spawn } from 'node:child_process';
import { access, constants, mkdir } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { isValidName } from '../../../core/ids.js';
import { createLogger } from '../../../core/logger.js';
import {
  DriverError,
  type Driver,
  type Endpoint,
  type ExecOptions,
  type ExecResult,
  type InteractiveExec,
  type InteractiveExecOptions,
  type LogOptions,
  type WorkloadObservation,
  type WorkloadUnit,
} from '../driver.js';
import { childSession } from '../interactive.js';
import { readLog } from './logs.js';
import { preflight } from './preflight.js';
import { readAllStates } from './state.js';
import { ManagedWorkload, type WorkloadContext } from './workload.js';

export interface ProcessDriverOptions {
  dataDir: string;
  /** Rotate a log file when it passes this size (default 10 MiB). */
  logMaxBytes?: number;
  /** Rotated log files kept per process (default 3). */
  logKeep?: number;
  /** How often exits are looked for in /proc (default 500 ms). */
  pollMs?: number;
  /** Restart back-off: first delay (default 1 s), doubling up to maxMs (default 30 s). */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** A run this long resets the back-off (default 10 s). */
  stableMs?: number;
}

export function createProcessDriver(opts: ProcessDriverOptions): Driver {
  return new ProcessDriver(opts);
}

class ProcessDriver implements Driver {
  readonly name = 'process' as const;
  private readonly ctx: WorkloadContext;
  private readonly workloads = new Map<string, ManagedWorkload>();
  /** One operation at a time per workload: an apply and a remove of one name must not interleave. */
  private readonly locks = new Map<string, Promise<unknown>>();
  private started = false;
  private readonly log = createLogger('edge:driver:process');

  constructor(private readonly opts: ProcessDriverOptions) {
    this.ctx = {
      dataDir: opts.dataDir,
      pollMs: opts.pollMs ?? 500,
      backoff: {
        baseMs: opts.backoffBaseMs ?? 1_000,
        maxMs: opts.backoffMaxMs ?? 30_000,
        stableMs: opts.stableMs ?? 10_000,
      },
      rotate: { maxBytes: opts.logMaxBytes ?? 10 * 1024 * 1024, keep: opts.logKeep ?? 3 },
      log: this.log,
    };
  }

  async start(): Promise<void> {
    if (this.started) return;
    for (const [path, why] of [
      ['/proc/self/stat', 'the process driver needs Linux /proc to identify and watch processes'],
      ['/bin/sh', 'the process driver starts processes through /bin/sh; install a shell (e.g. busybox)'],
    ] as const) {
      try {
        await access(path, constants.R_OK);
      } catch (err) {
        throw new DriverError(`${path} is not available: ${why}`, { cause: err });
      }
    }
    try {
      await mkdir(join(this.opts.dataDir, 'workloads'), { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new DriverError(`cannot create ${this.opts.dataDir}/workloads; check that the data directory is writable`, {
        cause: err,
      });
    }
    const { states, errors } = await readAllStates(this.opts.dataDir);
    for (const e of errors)
      this.log.error(
        { err: e.error, file: e.file },
        'skipping an unreadable state file; its processes are not supervised',
      );
    for (const st of states) {
      const w = new ManagedWorkload(this.ctx, st);
      this.workloads.set(w.name, w);
      await this.locked(w.name, () => w.adopt());
      this.log.info({ workload: w.name, hash: st.unit.hash }, 'adopted workload');
    }
    this.started = true;
  }

  async apply(unit: WorkloadUnit): Promise<void> {
    this.assertStarted();
    if (!isValidName(unit.name))
      throw new DriverError(`invalid workload name "${unit.name}": use 1-63 lower-case letters, digits and '-'`);
    await this.locked(unit.name, async () => {
      const cur = this.workloads.get(unit.name);
      if (cur && cur.state.unit.hash === unit.hash) {
        cur.failedUpdate = undefined;
        let changed = false;
        if (cur.state.unit.generation !== unit.generation) {
          cur.state.unit.generation = unit.generation;
          changed = true;
        }
        if (cur.state.stopped) {
          await cur.startFresh();
        } else if (changed) {
          await cur.persist();
        }
        return;
      }
      const w = ManagedWorkload.fresh(this.ctx, structuredClone(unit));
      if (cur && !cur.state.stopped && !cur.plan.error) {
        // A failed update never leaves less running than before: what can be checked is, first.
        const why = w.plan.error ?? (await preflight(w.plan, join(w.dir, 'work')));
        if (why) {
          cur.failedUpdate = { hash: unit.hash, generation: unit.generation, message: why };
          this.log.warn(
            { workload: unit.name, hash: unit.hash, err: why },
            'the new version cannot start; the running one is kept',
          );
          return;
        }
      }
      if (cur) {
        this.log.info({ workload: unit.name, from: cur.state.unit.hash, to: unit.hash }, 'replacing workload');
        await cur.stopAll();
        cur.detach();
      }
      this.workloads.set(unit.name, w);
      if (w.plan.error)
        this.log.warn({ workload: unit.name, error: w.plan.error }, 'workload cannot run on the process driver');
      await w.startFresh();
    });
  }

  async remove(name: string): Promise<void> {
    this.assertStarted();
    await this.locked(name, async () => {
      const w = this.workloads.get(name);
      if (!w) return;
      await w.remove();
      this.workloads.delete(name);
    });
  }

  async list(): Promise<WorkloadObservation[]> {
    this.assertStarted();
    return [...this.workloads.values()].map((w) => w.observe());
  }

  async stopWorkload(name: string): Promise<void> {
    await this.locked(name, () => this.get(name).stop());
  }

  async startWorkload(name: string): Promise<void> {
    await this.locked(name, async () => {
      const w = this.get(name);
      if (w.state.stopped) await w.startFresh();
    });
  }

  async restartWorkload(name: string): Promise<void> {
    await this.locked(name, async () => {
      const w = this.get(name);
      await w.stopAll();
      w.detach();
      const fresh = new ManagedWorkload(this.ctx, { ...w.state, processes: {}, stopped: false });
      this.workloads.set(name, fresh);
      await fresh.startFresh();
    });
  }

  async *logs(name: string, opts: LogOptions): AsyncIterable<string> {
    const w = this.get(name);
    const t = w.target(opts.container);
    if (!t)
      throw new DriverError(
        `workload ${name} has no container ${opts.container ?? ''}; containers: ${w.plan.processes.map((p) => p.key).join(', ') || 'none'}`,
      );
    yield* readLog(w.logPath(t.key), {
      tail: opts.tail,
      follow: opts.follow,
      signal: opts.signal,
      keep: this.ctx.rotate.keep,
      sinceMs: opts.sinceMs,
      timestamps: opts.timestamps,
      stillExists: () => this.workloads.get(name) !== undefined,
    });
  }

  async exec(name: string, command: string[], opts: ExecOptions): Promise<ExecResult> {
    const t = await this.execTarget(name, command, opts.container);
    return runCommand(command, t.env, t.cwd, opts.signal);
  }

  async execInteractive(name: string, command: string[], opts: InteractiveExecOptions): Promise<InteractiveExec> {
    const t = await this.execTarget(name, command, opts.container);
    // Its own process group, so ending the session also ends what the command started (a shell's children).
    const child = spawn(command[0], command.slice(1), {
      env: t.env,
      cwd: t.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const kill = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    return childSession(child, command[0], kill, opts.signal);
  }

  private async execTarget(
    name: string,
    command: string[],
    container: string | undefined,
  ): Promise<{ env: Record<string, string>; cwd: string }> {
    const w = this.get(name);
    const t = w.target(container);
    if (!t)
      throw new DriverError(
        `workload ${name} has no container ${container ?? ''}; containers: ${w.plan.processes.map((p) => p.key).join(', ') || 'none'}`,
      );
    if (command.length === 0) throw new DriverError('exec needs a command, e.g. ["sh", "-c", "ls"]');
    try {
      await access(t.cwd);
    } catch (err) {
      throw new DriverError(
        `workingDir ${t.cwd} of workload ${name} does not exist; create it on the device or change workingDir`,
        { cause: err },
      );
    }
    return t;
  }

  async endpoint(name: string, port: number): Promise<Endpoint | null> {
    const w = this.workloads.get(name);
    if (!w || w.plan.error) return null;
    return w.plan.processes.some((p) => p.ports.includes(port)) ? { host: '127.0.0.1', port } : null;
  }

  async close(): Promise<void> {
    // Let in-flight operations finish so their state is on disk, then stop watching.
    await Promise.allSettled([...this.locks.values()]);
    for (const w of this.workloads.values()) {
      w.detach();
      await w.persist();
    }
    this.workloads.clear();
    this.started = false;
  }

  private get(name: string): ManagedWorkload {
    this.assertStarted();
    const w = this.workloads.get(name);
    if (!w)
      throw new DriverError(`no workload "${name}" on this edge; list() shows the workloads the process driver runs`);
    return w;
  }

  private assertStarted(): void {
    if (!this.started) throw new DriverError('the process driver is not started; call start() first');
  }

  private locked<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(name) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.locks.set(name, settled);
    void settled.then(() => {
      if (this.locks.get(name) === settled) this.locks.delete(name);
    });
    return next;
  }
}

function runCommand(
  argv: string[],
  env: Record<string, string>,
  cwd: string,
  signal?: AbortSignal,
): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], signal });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT')
        resolve({
          exitCode: 127,
          stdout: '',
          stderr: `${argv[0]}: command not found (in ${cwd} with PATH=${env.PATH ?? ''})\n`,
        });
      else if (e.name === 'AbortError') reject(new DriverError(`exec of ${argv[0]} was aborted`, { cause: e }));
      else reject(new DriverError(`exec of ${argv[0]} failed`, { cause: e }));
    });
    child.once('close', (code, sig) => {
      resolve({
        exitCode: code ?? 128 + (sig ? osConstants.signals[sig] : 0),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}
