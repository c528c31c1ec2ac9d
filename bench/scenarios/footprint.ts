/**
 * @module footprint: the real edge agent (`outpost edge`, i.e. startEdgeAgent with the process
 * driver) running 20 workloads of one `sleep` process each, placed by a real hub; its VmRSS once
 * READY 20/20 (the workload processes are counted apart). Also the size of dist/outpost and the
 * start time of `--version` for the packaged binary and for `node --import tsx main.ts`.
 *
 * The agent runs from the sources (tsx) and, when dist/outpost exists, from the binary too. The
 * process driver's workloads outlive the agent by design, so they are found by their data
 * directory in /proc and their process groups ended by id afterwards.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { HubApi, placement, workload } from '../lib/api.js';
import { HubProcess, ROOT } from '../lib/hub-process.js';
import { mb, msf } from '../lib/results.js';
import { median, percentile, rssBytes, sleep, until } from '../lib/sys.js';
import { remaining, type Scenario, type ScenarioContext } from './common.js';

const WORKLOADS = 20;
const AGENT_LIMIT = 60 * 1024 ** 2;
const BINARY = path.join(ROOT, 'dist/outpost');

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

async function measureAgent(ctx: ScenarioContext, api: HubApi, hubUrl: string, label: string, argv0: string, args: string[]): Promise<Record<string, unknown>> {
  const name = `fp-${label}`;
  const dataDir = path.join(ctx.runDir, `edge-${label}`);
  const token = await api.joinToken(1, { footprint: label });
  const logFile = path.join(ctx.runDir, `edge-${label}.log`);
  const log = fs.openSync(logFile, 'a');
  const child: ChildProcess = spawn(argv0, [...args, 'edge', '--data', dataDir, '--hub', hubUrl, '--join-token', token, '--name', name, '--driver', 'process'], {
    cwd: ROOT,
    env: { ...process.env, OUTPOST_LOG_LEVEL: 'info' },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  const names = Array.from({ length: WORKLOADS }, (_, i) => `${label}-w${i}`);
  try {
    await api.apply([...names.map((n) => workload(n, 'none', ['sleep', '100000'])), placement(name, names, { edges: [name] })]);
    const t0 = Date.now();
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`the edge agent exited (${child.exitCode}); its log: ${logFile}`);
        const st = await api.placement(name);
        return st.summary.ready === WORKLOADS && st.summary.total === WORKLOADS;
      },
      { timeoutMs: Math.min(remaining(ctx), 120_000), intervalMs: 250, what: `READY ${WORKLOADS}/${WORKLOADS} on ${name}` },
    );
    const readyMs = Date.now() - t0;
    // Settle (the reconciler's periodic pass, GC), then sample.
    await sleep(5_000);
    const samples: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = rssBytes(child.pid!);
      if (r !== undefined) samples.push(r);
      await sleep(250);
    }
    const groups = new Set(processesUnder(dataDir).map((p) => p.pgid));
    const workloadRss = groupMembers(groups).reduce((a, p) => a + (rssBytes(p) ?? 0), 0);
    return { agentRssBytes: median(samples), agentRssMaxBytes: percentile(samples, 100), workloadProcessesRssBytes: workloadRss, workloadGroups: groups.size, readyMs };
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
  const hub = new HubProcess({ dataDir: path.join(ctx.runDir, 'hub'), logFile: path.join(ctx.runDir, 'hub.log') });
  await hub.start();
  try {
    const api = new HubApi(hub.url, hub.adminToken);
    const src = await measureAgent(ctx, api, hub.url, 'src', process.execPath, ['--import', 'tsx', path.join(ROOT, 'main.ts')]);
    out.metrics.agentFromSources = src;
    const rss = src.agentRssBytes as number;
    out.targets.push({ what: `edge agent RSS, ${WORKLOADS} workloads (tsx)`, target: '<= 60 MB', value: `${mb(rss)} (+${mb(src.workloadProcessesRssBytes as number)} in workload processes)`, met: rss <= AGENT_LIMIT });
    if (fs.existsSync(BINARY)) {
      const version = spawnSync(BINARY, ['--version'], { encoding: 'utf8' }).stdout.trim();
      out.metrics.binary = { path: 'dist/outpost', bytes: fs.statSync(BINARY).size, version };
      try {
        const bin = await measureAgent(ctx, api, hub.url, 'bin', BINARY, []);
        out.metrics.agentFromBinary = bin;
        out.targets.push({ what: `edge agent RSS, ${WORKLOADS} workloads (binary)`, target: '<= 60 MB', value: mb(bin.agentRssBytes as number), met: (bin.agentRssBytes as number) <= AGENT_LIMIT });
      } catch (err) {
        out.bottleneck.push(`the binary's agent could not be measured (${(err as Error).message}); rebuild it with npm run build`);
      }
      out.targets.push({ what: 'binary size', target: 'report', value: `${mb(fs.statSync(BINARY).size)} (${version})` });
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
