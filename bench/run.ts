/**
 * @module `npm run bench [-- --scenario NAME --edges N]`: runs benchmark scenarios against a real hub
 * process with simulated edges on loopback, writes bench/results/<scenario>-<date>.json and prints
 * a summary table. Without --scenario it runs every scenario at its default size and also writes
 * bench/results/summary-<date>.json.
 *
 * Options: --scenario connect|fanout|reconnect|offline|churn|footprint|fanout-peers|blobs|data-delivery|data-upload|prestage|interconnect|interconnect-many (repeatable or comma list),
 * --edges N, --workers W (simulator processes), --ready-delay MS (simulated time to Ready),
 * --budget-min M (per scenario, default 10), --profile-hub (V8 CPU profile of the hub),
 * --keep (keep the run directory with logs and databases), --results-dir DIR, --sim-store memory|file
 * (each simulator worker's replica: in-memory SQLite, the default, or a file in the run directory),
 * --replicas N (issue #22, below), --hub-from-source (the hubs run main.ts through tsx; by default
 * they run dist/outpost, the product, built first when older than its sources), --hub-binary FILE
 * (the hubs run that executable: an older build, for an A/B).
 *
 * Hub replicas (issue #22): `--replicas N` runs the scenario against N `outpost hub` processes on
 * one PostgreSQL instead of one hub on SQLite. The harness starts the PostgreSQL server itself
 * (test/fixtures/postgres.ts: initdb in a temp directory, loopback, fsync off; Debian's postgresql,
 * `npm run setup`), creates the database, starts each replica with `--database URL` and its own
 * --data (hub-1/, hub-2/, ... in the run directory), and stops and deletes the server afterwards.
 * Edge k is served by replica (k-1) mod N: it enrolls there and its SyncClient gets all N URLs,
 * its own first, so edges fail over like real agents. Hub CPU is the sum over the replicas (each
 * one's is in the results too) and the PostgreSQL server's CPU (postmaster and backends, from
 * /proc) is reported apart. Results go to `<scenario>-pg<N>-<date>.json`. Scenarios that support
 * it: fanout, reconnect (every replica restarts at once) and failover (replicas only, default 3,
 * 3,000 edges: the planning replica is killed -9; bench/scenarios/failover.ts).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DIST_EXECUTABLE } from '../build/build.js';
import { buildOnce } from '../test/e2e/binary.js';
import { formatTable, RESULTS_DIR, today, writeResult, type RunResult } from './lib/results.js';
import { BenchTimeout, checkLimits, machineInfo } from './lib/sys.js';
import { blobs } from './scenarios/blobs.js';
import { dataDelivery, dataUpload } from './scenarios/data.js';
import { churn } from './scenarios/churn.js';
import { cleanRunDir, type Scenario, type ScenarioContext, type ScenarioOutput } from './scenarios/common.js';
import { connect } from './scenarios/connect.js';
import { failover } from './scenarios/failover.js';
import { fanout } from './scenarios/fanout.js';
import { footprint } from './scenarios/footprint.js';
import { interconnect } from './scenarios/interconnect.js';
import { interconnectMany } from './scenarios/interconnect-many.js';
import { offline } from './scenarios/offline.js';
import { fanoutPeers } from './scenarios/peers.js';
import { prestage } from './scenarios/prestage.js';
import { reconnect } from './scenarios/reconnect.js';

export const SCENARIOS: Record<
  string,
  { run: Scenario; defaultEdges: number; replicas?: 'optional' | 'required'; defaultReplicas?: number }
> = {
  connect: { run: connect, defaultEdges: 1_000 },
  fanout: { run: fanout, defaultEdges: 1_000, replicas: 'optional' },
  reconnect: { run: reconnect, defaultEdges: 1_000, replicas: 'optional' },
  offline: { run: offline, defaultEdges: 1_000 },
  churn: { run: churn, defaultEdges: 1_000 },
  footprint: { run: footprint, defaultEdges: 1 },
  'fanout-peers': { run: fanoutPeers, defaultEdges: 1_000 },
  blobs: { run: blobs, defaultEdges: 100 },
  'data-delivery': { run: dataDelivery, defaultEdges: 100 },
  'data-upload': { run: dataUpload, defaultEdges: 100 },
  prestage: { run: prestage, defaultEdges: 100 },
  failover: { run: failover, defaultEdges: 3_000, replicas: 'required', defaultReplicas: 3 },
  interconnect: { run: interconnect, defaultEdges: 2 },
  'interconnect-many': { run: interconnectMany, defaultEdges: 100 },
};

export interface RunOptions {
  scenarios: string[];
  edges?: number;
  workers?: number;
  readyDelayMs: number;
  budgetMin: number;
  profileHub: boolean;
  keep: boolean;
  resultsDir: string;
  simStore: 'memory' | 'file';
  /** Hub replicas on PostgreSQL; undefined: one hub on SQLite (or the scenario's default). */
  replicas?: number;
  /** Run the hubs from main.ts through tsx instead of dist/outpost. */
  hubFromSource: boolean;
  /** Run the hubs from this executable instead of dist/outpost (an older build, for an A/B). */
  hubBinary?: string;
}

class UsageError extends Error {}

export function parseArgs(argv: string[]): RunOptions {
  const o: RunOptions = {
    scenarios: [],
    readyDelayMs: 100,
    budgetMin: 10,
    profileHub: false,
    keep: false,
    resultsDir: process.env.BENCH_RESULTS_DIR ?? RESULTS_DIR,
    simStore: 'memory',
    hubFromSource: false,
  };
  const num = (flag: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (v === undefined || !Number.isInteger(n) || n < min)
      throw new UsageError(`${flag} needs a whole number >= ${min} (got ${v ?? 'nothing'})`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--scenario') {
      const v = argv[++i] ?? '';
      for (const s of v.split(',').filter(Boolean)) {
        if (s !== 'all' && !SCENARIOS[s])
          throw new UsageError(`--scenario ${s}: unknown; use one of ${Object.keys(SCENARIOS).join(', ')} or all`);
        if (s === 'all') o.scenarios.push(...Object.keys(SCENARIOS));
        else o.scenarios.push(s);
      }
    } else if (a === '--edges') o.edges = num(a, argv[++i], 1);
    else if (a === '--workers') o.workers = num(a, argv[++i], 1);
    else if (a === '--ready-delay') o.readyDelayMs = num(a, argv[++i], 0);
    else if (a === '--replicas') o.replicas = num(a, argv[++i], 1);
    else if (a === '--budget-min') o.budgetMin = num(a, argv[++i], 1);
    else if (a === '--profile-hub') o.profileHub = true;
    else if (a === '--keep') o.keep = true;
    else if (a === '--hub-from-source') o.hubFromSource = true;
    else if (a === '--hub-binary') {
      const v = argv[++i];
      if (!v || !fs.existsSync(v))
        throw new UsageError(`--hub-binary ${v ?? ''}: no such file (give an outpost executable)`);
      o.hubBinary = path.resolve(v);
    } else if (a === '--sim-store') {
      const v = argv[++i];
      if (v !== 'memory' && v !== 'file') throw new UsageError(`--sim-store ${v ?? ''}: use memory or file`);
      o.simStore = v;
    } else if (a === '--results-dir') o.resultsDir = path.resolve(argv[++i] ?? '.');
    else
      throw new UsageError(
        `unknown argument ${a}: see the header of bench/run.ts (e.g. npm run bench -- --scenario connect --edges 1000)`,
      );
  }
  if (o.scenarios.length === 0)
    o.scenarios = Object.keys(SCENARIOS).filter((s) =>
      o.replicas ? SCENARIOS[s].replicas : SCENARIOS[s].replicas !== 'required',
    );
  if (o.replicas)
    for (const s of o.scenarios)
      if (!SCENARIOS[s].replicas)
        throw new UsageError(
          `--scenario ${s} runs against one hub on SQLite only; --replicas works with ${Object.keys(SCENARIOS)
            .filter((x) => SCENARIOS[x].replicas)
            .join(', ')}`,
        );
  return o;
}

function defaultWorkers(edges: number): number {
  return Math.max(2, Math.min(8, Math.ceil(edges / 1_250)));
}

const log = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

export async function runScenario(name: string, o: RunOptions): Promise<RunResult> {
  const edges = name === 'footprint' ? 1 : (o.edges ?? SCENARIOS[name].defaultEdges);
  const workers = o.workers ?? defaultWorkers(edges);
  const replicas = o.replicas ?? SCENARIOS[name].defaultReplicas ?? 0;
  const label = replicas ? `${name}-pg${replicas}` : name;
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), `outpost-bench-${label}-`));
  const cpuProfDir = o.profileHub
    ? path.join(os.tmpdir(), `outpost-bench-profile-${name}-${edges}-${Date.now()}`)
    : undefined;
  const started = Date.now();
  const ctx: ScenarioContext = {
    edges,
    workers,
    readyDelayMs: o.readyDelayMs,
    simStore: o.simStore,
    replicas,
    deadline: started + o.budgetMin * 60_000,
    runDir,
    cpuProfDir,
    hubBinary: hubBinaryOf(o),
    log: (m) => log(`${label}/${edges}: ${m}`),
  };
  const out: ScenarioOutput = { metrics: {}, targets: [], bottleneck: [] };
  const result: RunResult = {
    scenario: label,
    parameters: {
      edges,
      workers,
      readyDelayMs: o.readyDelayMs,
      budgetMin: o.budgetMin,
      simStore: o.simStore,
      hub: o.hubFromSource
        ? 'main.ts (tsx)'
        : `${path.relative(process.cwd(), hubBinaryOf(o)!)} ${buildInfoOf(hubBinaryOf(o)!)}`,
      ...(replicas ? { replicas, database: 'postgresql' } : {}),
    },
    startedAt: new Date(started).toISOString(),
    durationMs: 0,
    completed: false,
    metrics: out.metrics,
    targets: out.targets,
    bottleneck: out.bottleneck,
  };
  result.metrics.loadAverageAtStart = os.loadavg().map((x) => +x.toFixed(2));
  const problems = checkLimits(edges);
  if (problems.length) {
    result.error = problems.join('; ');
    log(`${label}/${edges}: not run: ${result.error}`);
    return result;
  }
  log(
    `${label}/${edges}: starting (${replicas ? `${replicas} hub replicas on PostgreSQL, ` : ''}${workers} simulator workers, run directory ${runDir})`,
  );
  try {
    await SCENARIOS[name].run(ctx, out);
    result.completed = true;
  } catch (err) {
    result.error = err instanceof BenchTimeout ? `stopped early: ${err.message}` : `${(err as Error).message}`;
    log(`${label}/${edges}: ${result.error}`);
  } finally {
    result.durationMs = Date.now() - started;
    if (cpuProfDir) {
      result.metrics.hubCpuProfileDir = cpuProfDir;
      log(`${label}/${edges}: hub CPU profile in ${cpuProfDir} (open in Chrome DevTools > Performance)`);
    }
    if (result.completed && !o.keep) cleanRunDir(runDir);
    else log(`${label}/${edges}: logs and databases kept in ${runDir}`);
  }
  return result;
}

async function main(argv: string[]): Promise<number> {
  let o: RunOptions;
  try {
    o = parseArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const m = machineInfo();
  log(
    `machine: ${m.cores} cores (${m.cpuModel}), ${Math.round(m.memoryBytes / 1024 ** 3)} GB, node ${m.node}, open-file limit ${m.fdLimit ?? 'unknown'}`,
  );
  if (o.hubFromSource && o.hubBinary) {
    process.stderr.write('error: --hub-from-source and --hub-binary exclude each other: give one\n');
    return 2;
  }
  if (!o.hubFromSource && !o.hubBinary) {
    // The hubs run the product: dist/outpost, built first when it is older than its sources.
    log('dist/outpost: building it if older than its sources (--hub-from-source runs main.ts through tsx instead)');
    await buildOnce();
    log(`dist/outpost: ${buildInfoOf(DIST_EXECUTABLE)}`);
  }
  const runs: RunResult[] = [];
  const command = `npm run bench -- ${argv.join(' ')}`.trim().replace(/ --$/, '');
  for (const name of o.scenarios) {
    const r = await runScenario(name, o);
    runs.push(r);
    const file = writeResult(r, o.resultsDir, command);
    log(`${name}: results in ${path.relative(process.cwd(), file)}`);
  }
  if (runs.length > 1) {
    fs.mkdirSync(o.resultsDir, { recursive: true });
    const file = path.join(o.resultsDir, `summary-${today()}.json`);
    fs.writeFileSync(
      file,
      `${JSON.stringify({ date: today(), machine: m, command, runs: runs.map((r) => ({ scenario: r.scenario, parameters: r.parameters, completed: r.completed, error: r.error, targets: r.targets })) }, null, 2)}\n`,
    );
    log(`combined summary in ${path.relative(process.cwd(), file)}`);
  }
  process.stdout.write(`\n${formatTable(runs)}\n`);
  for (const r of runs)
    for (const b of r.bottleneck) process.stdout.write(`  ${r.scenario}/${r.parameters.edges}: ${b}\n`);
  return runs.every((r) => r.completed) ? 0 : 1;
}

/** The executable the hubs run: --hub-binary, else dist/outpost; undefined: main.ts through tsx. */
function hubBinaryOf(o: RunOptions): string | undefined {
  return o.hubFromSource ? undefined : (o.hubBinary ?? DIST_EXECUTABLE);
}

/** What `dist/outpost --version` prints (the version and commit it was built from). */
function buildInfoOf(exe: string): string {
  return spawnSync(exe, ['--version'], { encoding: 'utf8' }).stdout.trim();
}

process.once('SIGINT', () => process.exit(130));
process.once('SIGTERM', () => process.exit(143));
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
