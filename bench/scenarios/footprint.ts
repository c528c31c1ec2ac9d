/**
 * @module footprint: the real edge agent (`outpost edge`, i.e. startEdgeAgent with the process
 * driver) running 20 workloads of one `sleep` process each, placed by a real hub; its VmRSS once
 * READY 20/20 (the workload processes are counted apart), split into RssAnon and RssFile, and the
 * same once connected with no workloads (idle), and the agent's own CPU time over 30 quiet seconds
 * with the 20 running (`idleCpuMsPerMinute`). The binary is measured twice: as it runs (with the
 * V8 and malloc settings the agent gives itself, edge/process-settings.ts) and with
 * OUTPOST_EDGE_TUNING=off (Node's defaults), so both sides of that change are in every run. Also the
 * size of dist/outpost and the start time of `--version` for the binary and for `node --import tsx main.ts`.
 *
 * The agent runs from the sources (tsx) and, when dist/outpost exists, from the binary too. The
 * process driver's workloads outlive the agent by design, so they are found by their data
 * directory in /proc and their process groups ended by id afterwards.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { TUNING_ENV } from '../../edge/process-settings.js';
import { HubApi, placement, workload } from '../lib/api.js';
import { HubProcess, ROOT } from '../lib/hub-process.js';
import { mb, msf } from '../lib/results.js';
import { cpuMs, median, percentile, rssBytes, sleep, until } from '../lib/sys.js';
import { remaining, type Scenario, type ScenarioContext } from './common.js';

const WORKLOADS = 20;
/** The quiet window over which the agent's CPU is read once its workloads run. */
const IDLE_CPU_WINDOW_MS = 30_000;
/** Issue #17's targets for the binary agent with 20 workloads. */
const AGENT_RSS_LIMIT = 100 * 1024 ** 2;
const AGENT_ANON_LIMIT = 45 * 1024 ** 2;
const BINARY = path.join(ROOT, 'dist/outpost');

/** VmRSS split as the kernel reports it: RssAnon (heaps, malloc, wasm memory) and RssFile (mapped executable and libraries). */
interface Mem {
  rss: number;
  anon: number;
  file: number;
}

function memOf(pid: number): Mem | undefined {
  try {
    const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(s)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
  } catch {
    return undefined;
  }
}

/** Median of each field over `n` samples `everyMs` apart. */
async function sampleMem(pid: number, n: number, everyMs: number): Promise<{ median: Mem; maxRss: number }> {
  const got: Mem[] = [];
  for (let i = 0; i < n; i++) {
    const m = memOf(pid);
    if (m) got.push(m);
    await sleep(everyMs);
  }
  if (got.length === 0) throw new Error(`process ${pid} is gone: no memory sample`);
  // got is not empty, so every statistic exists.
  const med = (f: (m: Mem) => number): number => median(got.map(f))!;
  return {
    median: { rss: med((m) => m.rss), anon: med((m) => m.anon), file: med((m) => m.file) },
    maxRss: percentile(
      got.map((m) => m.rss),
      100,
    )!,
  };
}

function pgidOf(pid: number | 'self'): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

/**
 * Processes whose command line names `dir` (the driver's wrappers run detached, each in its own
 * group), with their process group. The agent itself shares our group and is never included.
 */
function processesUnder(dir: string): { pid: number; pgid: number }[] {
  const own = pgidOf('self');
  const out: { pid: number; pgid: number }[] = [];
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (!cmd.includes(dir)) continue;
      const pgid = pgidOf(Number(p));
      if (pgid !== own) out.push({ pid: Number(p), pgid });
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

function groupMembers(pgids: Set<number>): number[] {
  const pids: number[] = [];
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      if (pgids.has(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]))) pids.push(Number(p));
    } catch {
      /* gone */
    }
  }
  return pids;
}

async function measureAgent(
  ctx: ScenarioContext,
  api: HubApi,
  hubUrl: string,
  label: string,
  argv0: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  const name = `fp-${label}`;
  const dataDir = path.join(ctx.runDir, `edge-${label}`);
  const token = await api.joinToken(1, { footprint: label });
  const logFile = path.join(ctx.runDir, `edge-${label}.log`);
  const log = fs.openSync(logFile, 'a');
  const child: ChildProcess = spawn(
    argv0,
    [...args, 'edge', '--data', dataDir, '--hub', hubUrl, '--join-token', token, '--name', name, '--driver', 'process'],
    {
      cwd: ROOT,
      env: { ...process.env, OUTPOST_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', log, log],
    },
  );
  fs.closeSync(log);
  const names = Array.from({ length: WORKLOADS }, (_, i) => `${label}-w${i}`);
  try {
    // Idle: enrolled, connected and in sync with an empty spec.
    await until(
      () => {
        if (child.exitCode !== null) throw new Error(`the edge agent exited (${child.exitCode}); its log: ${logFile}`);
        return fs.readFileSync(logFile, 'utf8').includes('"state":"connected"');
      },
      { timeoutMs: Math.min(remaining(ctx), 60_000), intervalMs: 250, what: `${name} connected` },
    );
    await sleep(5_000);
    const idle = await sampleMem(child.pid!, 8, 250);
    await api.apply([
      ...names.map((n) => workload(n, 'none', ['sleep', '100000'])),
      placement(name, names, { edges: [name] }),
    ]);
    const t0 = Date.now();
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`the edge agent exited (${child.exitCode}); its log: ${logFile}`);
        const st = await api.placement(name);
        return st.summary.ready === WORKLOADS && st.summary.total === WORKLOADS;
      },
      {
        timeoutMs: Math.min(remaining(ctx), 120_000),
        intervalMs: 250,
        what: `READY ${WORKLOADS}/${WORKLOADS} on ${name}`,
      },
    );
    const readyMs = Date.now() - t0;
    // Settle (the reconciler's periodic pass, GC), then sample.
    await sleep(5_000);
    const ready = await sampleMem(child.pid!, 20, 250);
    // What the running agent costs a site's CPU with nothing to do but keep its workloads: its own
    // CPU time (the workloads' processes apart) over a quiet window, reconciler passes included.
    const cpu0 = cpuMs(child.pid!);
    await sleep(IDLE_CPU_WINDOW_MS);
    const cpu1 = cpuMs(child.pid!);
    const idleCpuMsPerMinute =
      cpu0 === undefined || cpu1 === undefined ? undefined : Math.round(((cpu1 - cpu0) * 60_000) / IDLE_CPU_WINDOW_MS);
    const groups = new Set(processesUnder(dataDir).map((p) => p.pgid));
    const workloadRss = groupMembers(groups).reduce((a, p) => a + (rssBytes(p) ?? 0), 0);
    return {
      ...(Object.keys(env).length > 0 ? { env } : {}),
      agentRssBytes: ready.median.rss,
      agentRssAnonBytes: ready.median.anon,
      agentRssFileBytes: ready.median.file,
      agentRssMaxBytes: ready.maxRss,
      idleRssBytes: idle.median.rss,
      idleRssAnonBytes: idle.median.anon,
      idleRssFileBytes: idle.median.file,
      workloadProcessesRssBytes: workloadRss,
      workloadGroups: groups.size,
      readyMs,
      idleCpuMsPerMinute,
    };
  } finally {
    const exited = new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000)]);
    if (child.exitCode === null) child.kill('SIGKILL');
    // The workloads outlive the agent by design; end the groups this run created, by id.
    for (const g of new Set(processesUnder(dataDir).map((p) => p.pgid))) {
      try {
        process.kill(-g, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
}

/**
 * Drops a file's pages from the page cache (GNU dd: `iflag=nocache count=0`), so the next start
 * reads it as after a boot. Why it matters: the executable the build has just written sits in the
 * page cache as the build wrote it, and the kernel then maps far more of it into a process around
 * each page fault: 70-79 MB RssFile instead of 52-57 MB for the same agent (docs/benchmarks.md,
 * footprint; a copy made with cp or fs.copyFile, as `outpost edge install` does, is not affected).
 * Pages another process has mapped stay; the resident bytes left are returned (fincore), or
 * undefined when that cannot be told.
 */
function dropFromPageCache(file: string): number | undefined {
  spawnSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
  const r = spawnSync('fincore', ['--bytes', '--noheadings', '--raw', '--output', 'RES', file], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return r.status === 0 && Number.isFinite(n) ? n : undefined;
}

function startTime(argv0: string, args: string[], runs = 7): number | undefined {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    const r = spawnSync(argv0, [...args, '--version'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0) return undefined;
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return median(times);
}

export const footprint: Scenario = async (ctx, out) => {
  const hub = new HubProcess({
    dataDir: path.join(ctx.runDir, 'hub'),
    logFile: path.join(ctx.runDir, 'hub.log'),
    binary: ctx.hubBinary,
  });
  await hub.start();
  try {
    const api = new HubApi(hub.url, hub.adminToken);
    const src = await measureAgent(ctx, api, hub.url, 'src', process.execPath, [
      '--import',
      'tsx',
      path.join(ROOT, 'main.ts'),
    ]);
    out.metrics.agentFromSources = src;
    out.targets.push({
      what: `edge agent RSS, ${WORKLOADS} workloads (tsx)`,
      target: 'report',
      value: `${mb(src.agentRssBytes as number)} (anon ${mb(src.agentRssAnonBytes as number)}; +${mb(src.workloadProcessesRssBytes as number)} in workload processes)`,
    });
    if (fs.existsSync(BINARY)) {
      const version = spawnSync(BINARY, ['--version'], { encoding: 'utf8' }).stdout.trim();
      out.metrics.binary = { path: 'dist/outpost', bytes: fs.statSync(BINARY).size, version };
      const describe = (m: Record<string, unknown>): string =>
        `${mb(m.agentRssBytes as number)} (anon ${mb(m.agentRssAnonBytes as number)}, file ${mb(m.agentRssFileBytes as number)}; idle ${mb(m.idleRssBytes as number)}, anon ${mb(m.idleRssAnonBytes as number)})`;
      try {
        // As installed: the agent re-executes itself with its V8 and malloc settings. The binary is
        // first dropped from the page cache (see dropFromPageCache), as after a boot.
        // BENCH_AGENT_NODE_OPTIONS adds options of one's own to try (after the agent's, so they win).
        const extra = process.env.BENCH_AGENT_NODE_OPTIONS;
        const cachedBefore = dropFromPageCache(BINARY);
        const bin = await measureAgent(ctx, api, hub.url, 'bin', BINARY, [], extra ? { NODE_OPTIONS: extra } : {});
        out.metrics.agentFromBinary = { ...bin, binaryCachedBytesAtStart: cachedBefore };
        if (cachedBefore === undefined || cachedBefore > 1024 ** 2)
          out.bottleneck.push(
            `dist/outpost could not be dropped from the page cache (${cachedBefore === undefined ? 'no dd/fincore' : `${mb(cachedBefore)} stayed: another process maps it`}): RssFile may be inflated`,
          );
        out.targets.push({
          what: `edge agent RSS, ${WORKLOADS} workloads (binary)`,
          target: '<= 100 MB',
          value: describe(bin),
          met: (bin.agentRssBytes as number) <= AGENT_RSS_LIMIT,
        });
        out.targets.push({
          what: `edge agent CPU, ${WORKLOADS} workloads running, nothing to do (binary)`,
          target: 'report',
          value: `${bin.idleCpuMsPerMinute ?? '?'} ms per minute`,
        });
        out.targets.push({
          what: `edge agent RssAnon, ${WORKLOADS} workloads (binary)`,
          target: '<= 45 MB',
          value: mb(bin.agentRssAnonBytes as number),
          met: (bin.agentRssAnonBytes as number) <= AGENT_ANON_LIMIT,
        });
        // The same binary with Node's defaults: what the settings are worth, in the same run.
        dropFromPageCache(BINARY);
        const untuned = await measureAgent(ctx, api, hub.url, 'bin-untuned', BINARY, [], { [TUNING_ENV]: 'off' });
        out.metrics.agentFromBinaryUntuned = untuned;
        out.targets.push({
          what: `edge agent RSS, ${WORKLOADS} workloads (binary, ${TUNING_ENV}=off)`,
          target: 'report',
          value: describe(untuned),
        });
      } catch (err) {
        out.bottleneck.push(
          `the binary's agent could not be measured (${(err as Error).message}); rebuild it with npm run build`,
        );
      }
      out.targets.push({
        what: 'binary size',
        target: 'report',
        value: `${mb(fs.statSync(BINARY).size)} (${version})`,
      });
      const binStart = startTime(BINARY, []);
      out.metrics.binaryVersionStartMs = binStart;
      out.targets.push({ what: 'binary --version start', target: 'report', value: msf(binStart) });
    } else {
      out.bottleneck.push('dist/outpost does not exist: run npm run build to measure the binary');
    }
    const tsxStart = startTime(process.execPath, ['--import', 'tsx', path.join(ROOT, 'main.ts')]);
    out.metrics.tsxVersionStartMs = tsxStart;
    out.targets.push({ what: 'node --import tsx main.ts --version', target: 'report', value: msf(tsxStart) });
  } finally {
    await hub.stop();
  }
};
