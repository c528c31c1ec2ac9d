/**
 * @module One workload of the process driver: its plan, its supervisors (one per container
 * replica), its state file, and the phase it reports.
 *
 * Layout under `dataDir/workloads/NAME/`: `state.json`, `logs/KEY.log[.N]`, `run/KEY.exit`
 * (exit codes written by the spawn wrapper), `volumes/VOLUME/`, `work/` (default workingDir).
 */
import { mkdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from '../../../core/logger.js';
import type { ObjectStatus } from '../../../core/mailbox.js';
import { stoppedOnRequest, type WorkloadObservation, type WorkloadUnit } from '../driver.js';
import { materializeVolume } from './config.js';
import { planWorkload, type WorkloadPlan } from './plan.js';
import { bootId, findWrappers, isAlive, terminateGroup } from './proc.js';
import { writeState, workloadDir, type WorkloadState } from './state.js';
import {
  ensureDir,
  intentFile,
  newRecord,
  ProcessSupervisor,
  readIntent,
  type BackoffOptions,
  type ProcessObservation,
} from './supervisor.js';
import type { RotateOptions } from './logs.js';

export interface WorkloadContext {
  dataDir: string;
  pollMs: number;
  backoff: BackoffOptions;
  rotate: RotateOptions;
  log: Logger;
}

/** An update that was refused before it touched the running version (see ProcessDriver.apply). */
export interface FailedUpdate {
  hash: string;
  generation: number;
  message: string;
}

export class ManagedWorkload {
  plan: WorkloadPlan;
  /** Set while the hub wants a version that cannot start here; the running version keeps running. */
  failedUpdate: FailedUpdate | undefined;
  private supervisors = new Map<string, ProcessSupervisor>();
  private writes: Promise<void> = Promise.resolve();
  private detached = false;
  readonly dir: string;

  constructor(
    private readonly ctx: WorkloadContext,
    readonly state: WorkloadState,
  ) {
    this.dir = workloadDir(ctx.dataDir, state.unit.name);
    this.plan = planWorkload(state.unit, { workloadDir: this.dir, agentEnv: process.env });
  }

  get name(): string {
    return this.state.unit.name;
  }

  static fresh(ctx: WorkloadContext, unit: WorkloadUnit): ManagedWorkload {
    return new ManagedWorkload(ctx, { version: 1, unit, stopped: false, bootId: bootId(), processes: {} });
  }

  logPath(key: string): string {
    return join(this.dir, 'logs', `${key}.log`);
  }

  /** Writes the state file; writes are chained so the last one on disk is the latest state. */
  persist(): Promise<void> {
    if (this.detached) return this.writes;
    const snapshot = structuredClone(this.state);
    this.writes = this.writes
      .then(() => writeState(this.ctx.dataDir, snapshot))
      .catch((err: unknown) =>
        this.ctx.log.error(
          { err, workload: this.name },
          'could not write the state file; a restarted agent may not adopt this workload',
        ),
      );
    return this.writes;
  }

  /** Prepares directories and volumes, then starts every process from scratch. */
  async startFresh(): Promise<void> {
    this.state.stopped = false;
    this.state.processes = {};
    this.supervisors.clear();
    await mkdir(join(this.dir, 'logs'), { recursive: true, mode: 0o750 });
    await mkdir(join(this.dir, 'run'), { recursive: true, mode: 0o700 });
    await this.persist();
    if (this.plan.error) return;
    await ensureDir(join(this.dir, 'work'));
    // A new version (or a restart) is a new pod: no volume of the previous one carries over.
    await rm(join(this.dir, 'volumes'), { recursive: true, force: true });
    for (const v of this.plan.volumes) await materializeVolume(v, this.dir);
    for (const p of this.plan.processes) {
      const sup = this.supervisor(p.key);
      await sup.start();
    }
    await this.persist();
  }

  /** Resumes supervising after an agent restart; nothing that still runs is touched. */
  async adopt(): Promise<void> {
    const sameBoot = this.state.bootId === bootId();
    const takenOver = await this.reapStrays(sameBoot);
    if (this.plan.error || this.state.stopped) return;
    this.state.bootId = bootId();
    for (const p of this.plan.processes) {
      const sup = this.supervisor(p.key);
      const w = takenOver.get(p.key);
      if (w) {
        await sup.takeOver(w);
        await sup.adopt(true);
      } else if (this.state.processes[p.key] === undefined || this.state.processes[p.key].status === 'stopped') {
        await sup.start();
      } else {
        await sup.adopt(sameBoot);
      }
    }
    await this.persist();
  }

  /**
   * The spawn wrappers running under this workload's run directory that the state file does not
   * record. The one carrying a process's recorded intent (the previous agent spawned it, then died
   * before writing its pid) is returned, to be taken over; every other one is a stray (a duplicate,
   * a process of a version or key no longer wanted) and is stopped, so a crash never leaves two copies.
   */
  private async reapStrays(
    sameBoot: boolean,
  ): Promise<Map<string, { pid: number; startTime: number; exitFile: string }>> {
    const taken = new Map<string, { pid: number; startTime: number; exitFile: string }>();
    const runDir = join(this.dir, 'run');
    for (const w of findWrappers(runDir)) {
      const key = basename(w.exitFile).replace(/\.exit$/, '');
      const wanted = this.plan.error || this.state.stopped ? undefined : this.plan.processes.find((p) => p.key === key);
      const rec = this.state.processes[key];
      const recorded =
        rec !== undefined &&
        rec.status === 'running' &&
        sameBoot &&
        rec.pid > 0 &&
        isAlive({ pid: rec.pid, startTime: rec.startTime });
      if (wanted && recorded && rec.pid === w.pid && rec.startTime === w.startTime) continue;
      if (wanted && !recorded && !taken.has(key) && w.nonce && w.nonce === (await readIntent(intentFile(w.exitFile)))) {
        this.ctx.log.warn(
          { workload: this.name, process: key, pid: w.pid },
          'adopting a process the previous agent started but did not live to record',
        );
        taken.set(key, w);
        continue;
      }
      this.ctx.log.warn(
        { workload: this.name, process: key, pid: w.pid },
        'stopping a stray process of this workload (a duplicate, or no longer wanted)',
      );
      await terminateGroup(w, wanted?.graceMs ?? 10_000);
    }
    return taken;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.supervisors.values()].map((s) => s.stop()));
    await this.persist();
  }

  async stop(): Promise<void> {
    this.state.stopped = true;
    await this.stopAll();
  }

  /** Stops the processes and deletes every file of the workload. */
  async remove(): Promise<void> {
    await this.stopAll();
    this.detach();
    await this.writes;
    await rm(this.dir, { recursive: true, force: true });
  }

  detach(): void {
    this.detached = true;
    for (const s of this.supervisors.values()) s.detach();
  }

  private supervisor(key: string): ProcessSupervisor {
    let sup = this.supervisors.get(key);
    if (sup) return sup;
    const plan = this.plan.processes.find((p) => p.key === key)!;
    const record = (this.state.processes[key] ??= newRecord());
    sup = new ProcessSupervisor(plan, record, {
      logPath: this.logPath(key),
      exitFile: join(this.dir, 'run', `${key}.exit`),
      pollMs: this.ctx.pollMs,
      backoff: this.ctx.backoff,
      rotate: this.ctx.rotate,
      onChange: () => void this.persist(),
      log: this.ctx.log,
    });
    this.supervisors.set(key, sup);
    return sup;
  }

  observe(): WorkloadObservation {
    const o = this.observeRunning();
    const f = this.failedUpdate;
    if (!f) return o;
    return {
      ...o,
      hash: f.hash,
      generation: f.generation,
      phase: 'Failed',
      message: `${f.message} (the previous version, hash ${this.state.unit.hash}, keeps running)`,
    };
  }

  private observeRunning(): WorkloadObservation {
    const unit = this.state.unit;
    const base = { name: unit.name, generation: unit.generation, hash: unit.hash };
    const restarts = Object.values(this.state.processes).reduce((n, r) => n + r.restarts, 0);
    if (this.plan.error) {
      const objects: Record<string, ObjectStatus> = {};
      for (const m of unit.manifests)
        if (m.kind !== 'ConfigMap' && m.kind !== 'Secret' && m.kind !== 'Service')
          objects[`${m.kind}/${m.metadata?.name}`] = { ready: false, message: this.plan.error };
      return { ...base, phase: 'Failed', message: this.plan.error, restarts, objects };
    }
    const perObject = new Map<string, { key: string; obs: ProcessObservation }[]>();
    for (const o of this.plan.objects) perObject.set(o.key, []);
    for (const p of this.plan.processes) {
      const sup = this.supervisors.get(p.key);
      const obs: ProcessObservation = sup
        ? sup.observe()
        : { ready: false, degraded: false, failed: false, succeeded: false, stopped: false, message: 'not started' };
      perObject.get(p.object)!.push({ key: p.key, obs });
    }
    const objects: Record<string, ObjectStatus> = {};
    const problems: string[] = [];
    let failed = false;
    let degraded = false;
    let allReady = true;
    for (const o of this.plan.objects) {
      const procs = perObject.get(o.key)!;
      const done = (x: ProcessObservation): boolean => x.ready || x.succeeded;
      const ready = procs.filter((x) => done(x.obs)).length;
      const notes = procs
        .filter((x) => x.obs.message)
        .map((x) => (procs.length > 1 || o.kind === 'Deployment' ? `${x.key}: ${x.obs.message}` : x.obs.message!));
      const objReady = ready === procs.length && !this.state.stopped;
      const summary =
        o.kind === 'Deployment' ? `${procs.filter((x) => x.obs.ready).length}/${o.replicas} replicas ready` : undefined;
      const message = this.state.stopped ? 'stopped' : [summary, ...notes].filter(Boolean).join('; ') || undefined;
      objects[o.key] = message ? { ready: objReady, message } : { ready: objReady };
      failed ||= procs.some((x) => x.obs.failed);
      degraded ||= procs.some((x) => x.obs.degraded);
      allReady &&= objReady;
      // A process running again after a crash is ready yet Degraded: its exit must reach the message too.
      if ((!objReady || procs.some((x) => x.obs.degraded)) && notes.length)
        problems.push(`${o.key}: ${notes.join('; ')}`);
    }
    // Problems first: they are why the workload is not Ready; the notices hold whatever its phase.
    const message = [...problems, ...this.plan.notices].join('; ') || undefined;
    if (this.state.stopped)
      return { ...base, phase: 'Paused', message: stoppedOnRequest(this.name), restarts, objects, stopped: true };
    if (failed) return { ...base, phase: 'Failed', message, restarts, objects };
    if (degraded) return { ...base, phase: 'Degraded', message, restarts, objects };
    if (allReady) return { ...base, phase: 'Ready', ...(message ? { message } : {}), restarts, objects };
    return { ...base, phase: this.supervisors.size === 0 ? 'Pending' : 'Progressing', message, restarts, objects };
  }

  /** Environment and working directory of a container replica, for exec. */
  target(container?: string): { env: Record<string, string>; cwd: string; key: string } | null {
    const p =
      container === undefined
        ? this.plan.processes[0]
        : (this.plan.processes.find((x) => x.key === container) ??
          this.plan.processes.find((x) => x.container === container && x.replica === 0));
    return p ? { env: p.env, cwd: p.workingDir, key: p.key } : null;
  }
}
