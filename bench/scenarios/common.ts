/**
 * @module What every fleet scenario shares: a fresh hub and data directory (or, with `replicas`,
 * N hub replicas on a fresh PostgreSQL), the simulated fleet enrolled and connected, CPU
 * accounting of hubs, PostgreSQL and workers over a measured phase, and the notes that say whether
 * the hub or the simulator limited the run.
 */
import fs from 'node:fs';
import os from 'node:os';
import { HubApi, placement, workload } from '../lib/api.js';
import { Fleet } from '../lib/fleet.js';
import { HubCluster } from '../lib/hub-cluster.js';
import type { HubProcess } from '../lib/hub-process.js';
import type { RunResult, Target } from '../lib/results.js';
import { CpuMeter, systemCpuMs, threadCpuMs, until } from '../lib/sys.js';

export interface ScenarioContext {
  edges: number;
  workers: number;
  readyDelayMs: number;
  /** Where each simulator worker keeps its replica (in-memory SQLite or a file). */
  simStore: 'memory' | 'file';
  /** 0: one hub on SQLite; N: N hub replicas on one PostgreSQL the harness starts (`--replicas N`). */
  replicas: number;
  /** Absolute time (ms) by which the scenario must be done; waits derive their timeouts from it. */
  deadline: number;
  runDir: string;
  cpuProfDir?: string;
  /** The hub executable (dist/outpost); undefined: main.ts through tsx (`--hub-from-source`). */
  hubBinary?: string;
  log(msg: string): void;
}

export interface ScenarioOutput {
  metrics: Record<string, unknown>;
  targets: Target[];
  bottleneck: string[];
}

export type Scenario = (ctx: ScenarioContext, out: ScenarioOutput) => Promise<void>;

export function remaining(ctx: ScenarioContext): number {
  return Math.max(1_000, ctx.deadline - Date.now());
}

export interface Setup {
  /** The hub (SQLite), or the first replica: the one `api` talks to. */
  hub: HubProcess;
  cluster: HubCluster;
  api: HubApi;
  fleet: Fleet;
}

/**
 * Starts the hub (or replicas) and the worker processes, and enrolls every edge through the API
 * (not connected yet); with replicas each edge enrolls through, and connects first to, its own.
 */
export async function setupFleet(ctx: ScenarioContext, out: ScenarioOutput, edges = ctx.edges): Promise<Setup> {
  const cluster = new HubCluster({
    runDir: ctx.runDir,
    replicas: ctx.replicas,
    cpuProfDir: ctx.cpuProfDir,
    binary: ctx.hubBinary,
  });
  try {
    await cluster.start();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  const hub = cluster.hubs[0]!;
  const api = new HubApi(hub.url, hub.adminToken);
  const fleet = new Fleet({
    edges,
    workers: Math.min(ctx.workers, edges),
    dir: ctx.runDir,
    readyDelayMs: ctx.readyDelayMs,
    simStore: ctx.simStore,
  });
  try {
    await fleet.start(cluster.urls());
    const t0 = Date.now();
    if (ctx.replicas > 1) {
      // Each edge labelled with the replica that serves it (edge-worker.ts urlsOf: edge i of the
      // fleet's names, from 0, is served by replica i mod R), so fanout can change one replica's
      // edges at a time.
      await Promise.all(
        Array.from({ length: ctx.replicas }, async (_, r) => {
          const names = replicaEdges(fleet.names, ctx.replicas, r);
          await fleet.enroll(await api.joinToken(names.length, { bench: 'yes', [REPLICA_LABEL]: String(r) }), names);
        }),
      );
    } else await fleet.enroll(await api.joinToken(edges, { bench: 'yes' }));
    out.metrics.enrollMs = Date.now() - t0;
    ctx.log(`enrolled ${edges} edges in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } catch (err) {
    await teardown({ cluster, fleet });
    throw err;
  }
  return { hub, cluster, api, fleet };
}

/** The label of a bench edge naming the replica that serves it (with `--replicas` 2 or more). */
export const REPLICA_LABEL = 'bench.outpost.dev/replica';

/** The edges replica `r` of `replicas` serves (edge-worker.ts urlsOf), in fleet order. */
export function replicaEdges(names: string[], replicas: number, r: number): string[] {
  return names.filter((_, i) => i % replicas === r);
}

/**
 * Waits until every edge of `names` (the whole fleet when undefined) is in sync with its hub;
 * `what` says which edges and after what, for the message when it times out.
 */
export async function untilInSync(
  ctx: ScenarioContext,
  s: Setup,
  names: string[] | undefined,
  what: string,
): Promise<void> {
  const want = names?.length ?? s.fleet.names.length;
  let last = '';
  await until(
    async () => {
      const st = await s.fleet.syncStatus(false, names);
      last = `${st.connected} connected, ${st.synced} in sync`;
      return st.synced === want;
    },
    { timeoutMs: remaining(ctx), intervalMs: 250, what: () => `${what} (last: ${last})` },
  );
}

/** Waits until every edge has acknowledged its hub's heads: nothing in flight before `what` (a restart, a kill). */
export async function untilQuiet(ctx: ScenarioContext, s: Setup, what: string): Promise<void> {
  await s.fleet.all('mark', { requireNewConnection: false });
  await untilInSync(ctx, s, undefined, `the fleet to be quiet before ${what}`);
}

/** Connects every edge (ramped by the workers) and waits until each is in sync with the hub. */
export async function connectAll(
  ctx: ScenarioContext,
  s: Setup,
  window = 100,
): Promise<{ ms: number; syncedAt: number[] }> {
  await s.fleet.all('mark', { requireNewConnection: true });
  const t0 = Date.now();
  await s.fleet.each('connect', s.fleet.names, { window });
  await untilInSync(ctx, s, undefined, `all ${s.fleet.names.length} edges to connect and sync`);
  const st = await s.fleet.syncStatus(true);
  return { ms: Math.max(...st.syncedAt!) - t0, syncedAt: st.syncedAt! };
}

/** A placement of the bench's workload, and how many edges it selects. */
export interface BenchPlacement {
  name: string;
  edges: number;
  object: Record<string, unknown>;
}

/**
 * Places one workload on every edge and waits for READY N/N (so mailboxes are not empty): by one
 * placement of every edge, or by `placements` that share the edges out.
 */
export async function placeOnAll(
  ctx: ScenarioContext,
  s: Setup,
  name = 'bench-app',
  placements: BenchPlacement[] = [
    { name, edges: s.fleet.names.length, object: placement(name, [name], { labels: { bench: 'yes' } }) },
  ],
): Promise<number> {
  const t0 = Date.now();
  await s.api.apply([workload(name), ...placements.map((p) => p.object)]);
  // Ask the edges first (cheap for the hub): at 10,000 edges one summary GET costs the hub
  // ~0.2 s of CPU, and polling it every 200 ms throughout the rollout took most of its time.
  let ready = 0;
  await until(
    async () => {
      const r = await s.fleet.all<{ ready: number[] }>('readyTimes', { since: t0 });
      ready = r.reduce((n, x) => n + x.ready.length, 0);
      return ready >= s.fleet.names.length;
    },
    {
      timeoutMs: remaining(ctx),
      intervalMs: 250,
      what: () => `every edge to report Ready (${ready}/${s.fleet.names.length})`,
    },
  );
  for (const p of placements) await waitReady(ctx, s, p.name, p.edges);
  return Date.now() - t0;
}

/** Polls the placement's summary until READY N/N; returns when the API first showed it. */
/** `n` is the number of (edge, workload) entries; `edges` how many edges the placement selects. */
export async function waitReady(
  ctx: ScenarioContext,
  s: Setup,
  name: string,
  n: number,
  intervalMs = 200,
  edges = n,
): Promise<number> {
  let last = '';
  await until(
    async () => {
      const st = await s.api.placement(name);
      last = `READY ${st.summary.ready}/${st.summary.total}, selected ${st.selectedEdges}`;
      return st.selectedEdges === edges && st.summary.total === n && st.summary.ready === n;
    },
    { timeoutMs: remaining(ctx), intervalMs, what: () => `placement ${name} to show READY ${n}/${n} (last: ${last})` },
  );
  return Date.now();
}

/**
 * Measures CPU of the hub (the sum over every replica that ran at the start, and each one's) and
 * of the workers over a phase, and PostgreSQL's server separately; turns it into bottleneck notes.
 */
export class PhaseMeter {
  private readonly meter: CpuMeter;
  private readonly hubPids: number[];
  private readonly hubSystem0: number[];
  private readonly hubThreads0: Map<string, number>[];
  private readonly pg0: number | undefined;
  constructor(
    private readonly s: Setup,
    private readonly phase: string,
  ) {
    this.hubPids = s.cluster.alive().map((h) => h.pid);
    this.hubSystem0 = this.hubPids.map((p) => systemCpuMs(p) ?? 0);
    this.hubThreads0 = this.hubPids.map((p) => threadCpuMs(p));
    this.pg0 = s.cluster.postgresCpuMs();
    this.meter = new CpuMeter([...this.hubPids, ...s.fleet.pids]);
  }

  private threadDeltas(): Record<string, number> {
    const sum = new Map<string, number>();
    this.hubPids.forEach((p, i) => {
      for (const [name, ms] of threadCpuMs(p))
        sum.set(name, (sum.get(name) ?? 0) + Math.max(0, ms - (this.hubThreads0[i]!.get(name) ?? 0)));
    });
    return Object.fromEntries([...sum].filter(([, ms]) => ms > 0).map(([n, ms]) => [n, Math.round(ms)]));
  }

  finish(out: ScenarioOutput): {
    hubCpuMs: number;
    perReplicaCpuMs: number[];
    postgresCpuMs?: number;
    workerCpuMs: number[];
    wallMs: number;
  } {
    const { wallMs, cpu } = this.meter.read();
    const pg1 = this.s.cluster.postgresCpuMs();
    const postgresCpuMs = this.pg0 !== undefined && pg1 !== undefined ? Math.max(0, pg1 - this.pg0) : undefined;
    const perReplicaCpuMs = this.hubPids.map((p) => cpu.get(p) ?? 0);
    const hubCpuMs = perReplicaCpuMs.reduce((a, b) => a + b, 0);
    const workerCpuMs = this.s.fleet.pids.map((p) => cpu.get(p) ?? 0);
    const hubShare = hubCpuMs / Math.max(1, wallMs);
    const workerShares = workerCpuMs.map((c) => c / Math.max(1, wallMs));
    const simShare = workerShares.reduce((a, b) => a + b, 0);
    const cores = os.cpus().length;
    const others = this.meter.othersMs(hubCpuMs + (postgresCpuMs ?? 0) + workerCpuMs.reduce((a, b) => a + b, 0));
    const othersShare = others === undefined ? 0 : others / Math.max(1, wallMs);
    const pct = (x: number) => `${Math.round(x * 100)}%`;
    out.metrics[`${this.phase}Cpu`] = {
      wallMs,
      hubCpuMs: Math.round(hubCpuMs),
      hubCoreShare: +hubShare.toFixed(2),
      // Of hubCpuMs, the kernel's part (system calls: sockets, futex waits, thread wake-ups).
      hubSystemCpuMs: Math.round(
        this.hubPids.reduce(
          (n, p, i) => n + Math.max(0, (systemCpuMs(p) ?? this.hubSystem0[i]!) - this.hubSystem0[i]!),
          0,
        ),
      ),
      // Of hubCpuMs, each kind of thread's part (summed over the replicas): the main thread, the
      // PostgreSQL client's worker (WorkerThread), V8's helpers (V8Worker: GC, compiling)...
      hubThreadCpuMs: this.threadDeltas(),
      ...(this.s.cluster.replicas
        ? { replicaCpuMs: perReplicaCpuMs.map(Math.round), postgresCpuMs: Math.round(postgresCpuMs ?? 0) }
        : {}),
      workerCpuMs: workerCpuMs.map(Math.round),
      simulatorCoreShare: +simShare.toFixed(2),
      otherProcessesCoreShare: +othersShare.toFixed(2),
      loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
    };
    const pgNote = postgresCpuMs === undefined ? '' : `, PostgreSQL ${pct(postgresCpuMs / Math.max(1, wallMs))}`;
    const hubName = this.hubPids.length > 1 ? `${this.hubPids.length} hub replicas together` : 'hub';
    const note = `${this.phase}: ${hubName} ${pct(hubShare)} of a core${pgNote}, simulator ${pct(simShare)} over ${workerShares.length} workers (busiest ${pct(Math.max(...workerShares))}), other processes on the machine ${pct(othersShare)}, ${cores} cores`;
    if (othersShare > 0.5)
      out.bottleneck.push(
        `${note}: the machine was shared with other work that took ${pct(othersShare)} of a core on average; wall-clock times are inflated, and CPU times (hubCpuMs) too (contention costs CPU here: a SQLite hub beside two busy loops spent 1.5x its CPU per edge, docs/benchmarks.md)`,
      );
    if (Math.max(...workerShares) > 0.9)
      out.bottleneck.push(
        `${note}: a simulator worker was CPU-bound, so the simulator (not only the hub) limited this phase; add --workers or use a bigger machine`,
      );
    else if (hubShare + simShare > cores * 0.85)
      out.bottleneck.push(
        `${note}: the machine was saturated; hub and simulator shared the cores, so the hub's numbers include waiting for CPU`,
      );
    else if (Math.max(...perReplicaCpuMs) / Math.max(1, wallMs) > 0.85)
      out.bottleneck.push(`${note}: the hub was CPU-bound (one JS thread), it is the bottleneck of this phase`);
    else out.bottleneck.push(`${note}: neither side saturated`);
    return { hubCpuMs, perReplicaCpuMs, postgresCpuMs, workerCpuMs, wallMs };
  }
}

export async function teardown(s: Partial<Setup>): Promise<void> {
  await s.fleet?.stop().catch(() => undefined);
  await s.cluster?.stop().catch(() => undefined);
}

export function cleanRunDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

export type { RunResult };
