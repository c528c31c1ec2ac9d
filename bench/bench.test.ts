/**
 * Smoke test of the benchmark harness: the connect scenario with 20 edges against a real hub
 * process completes and writes a well-formed results file; the data scenarios with 3 edges; the
 * hub-replica fail-over (issue #22) with 2 replicas on a real PostgreSQL and 20 edges. No timing is asserted: the machine is
 * shared and numbers are for docs/benchmarks.md, not for pass/fail.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../test/e2e/binary.js';
import { ROOT } from './lib/hub-process.js';
import type { ResultFile } from './lib/results.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function runBench(
  args: string[],
  resultsDir: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'bench/run.ts'), ...args, '--results-dir', resultsDir],
      {
        cwd: ROOT,
        // Short settle pauses (bench/lib/sys.ts `settle`): no figure is asserted here.
        env: { ...process.env, BENCH_SETTLE_MS: '500', ...env, VITEST: undefined },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => child.kill('SIGINT'), 170_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

// The harness runs the hubs from dist/outpost (the product): built here first, when older than its
// sources, so no run below spends its time limit on the build.
beforeAll(() => buildOnce(), 600_000);

describe('bench harness', () => {
  it(
    'runs the connect scenario with 20 edges and writes a well-formed results file',
    { timeout: 180_000 },
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-bench-test-'));
      dirs.push(dir);
      const { code, output } = await runBench(['--scenario', 'connect', '--edges', '20', '--workers', '2'], dir);
      expect(code, output).toBe(0);
      const files = fs.readdirSync(dir).filter((f) => /^connect-\d{4}-\d{2}-\d{2}\.json$/.test(f));
      expect(files).toHaveLength(1);
      const data = JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8')) as ResultFile;
      expect(data.scenario).toBe('connect');
      expect(data.machine.cores).toBeGreaterThan(0);
      expect(data.machine.node).toBe(process.version);
      expect(data.runs).toHaveLength(1);
      const run = data.runs[0];
      expect(run).toMatchObject({ scenario: 'connect', completed: true, parameters: { edges: 20, workers: 2 } });
      expect(run.parameters.hub).toMatch(/^dist\/outpost \S+/);
      expect(run.error).toBeUndefined();
      // Every edge was connected and in sync, and the memory figures are real readings.
      expect(run.targets.find((t) => t.what === 'edges connected and in sync')?.value).toMatch(/^20\/20 in /);
      expect(typeof run.metrics.hubRssBaselineBytes).toBe('number');
      expect(run.metrics.hubRssBaselineBytes as number).toBeGreaterThan(0);
      expect(typeof run.metrics.hubRssPerEdgeBytes).toBe('number');
      expect(Array.isArray(run.bottleneck) && run.bottleneck.length).toBeTruthy();
      // The table went to stdout.
      expect(output).toContain('hub RSS per idle edge');
    },
  );

  it(
    'runs the data scenarios with 3 edges: every edge holds the object, every file reaches the hub',
    { timeout: 180_000 },
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-bench-test-'));
      dirs.push(dir);
      const { code, output } = await runBench(
        ['--scenario', 'data-delivery,data-upload', '--edges', '3', '--workers', '1'],
        dir,
        { BENCH_DATA_MB: '2', BENCH_UPLOAD_FILES: '2', BENCH_UPLOAD_KB: '256' },
      );
      expect(code, output).toBe(0);
      for (const [scenario, bytesPerEdge] of [
        ['data-delivery', 2 * 1024 * 1024],
        ['data-upload', 2 * 256 * 1024],
      ] as const) {
        const file = fs.readdirSync(dir).find((f) => f.startsWith(`${scenario}-`))!;
        const run = (JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as ResultFile).runs[0]!;
        expect(run.error, output).toBeUndefined();
        expect(run.metrics).toMatchObject({ failed: 0, bytesPerEdge, movedBytes: 3 * bytesPerEdge });
        expect(run.metrics.socketBytes as number).toBeGreaterThanOrEqual(3 * bytesPerEdge);
      }
    },
  );

  it(
    "runs the fail-over scenario on 2 hub replicas with 20 edges: the killed replica's edges come back, a later change reaches all",
    { timeout: 180_000 },
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-bench-test-'));
      dirs.push(dir);
      const { code, output } = await runBench(
        ['--scenario', 'failover', '--replicas', '2', '--edges', '20', '--workers', '2'],
        dir,
        // The killed replica's edges move after 2 s of dialling it, not the agent's default 10 s.
        { BENCH_HOME_REDIAL_MS: '2000' },
      );
      expect(code, output).toBe(0);
      const file = fs.readdirSync(dir).find((f) => /^failover-pg2-\d{4}-\d{2}-\d{2}\.json$/.test(f));
      expect(file, fs.readdirSync(dir).join(', ')).toBeDefined();
      const run = (JSON.parse(fs.readFileSync(path.join(dir, file!), 'utf8')) as ResultFile).runs[0]!;
      expect(run.error, output).toBeUndefined();
      expect(run).toMatchObject({
        scenario: 'failover-pg2',
        completed: true,
        parameters: { edges: 20, replicas: 2, database: 'postgresql' },
      });
      const m = run.metrics as Record<string, any>;
      // Edges k = 1..20 were spread evenly; the killed replica's 10 moved to the survivor.
      expect(m.edgesPerReplicaBefore).toEqual([10, 10]);
      expect(m.killed.edges).toBe(10);
      const survivor = m.killed.replica === 1 ? 1 : 0;
      expect(m.edgesPerReplicaAfter[survivor]).toBe(20);
      expect(m.backInSyncAfterKillMs.max).toBeGreaterThan(0);
      expect(m.syncBytesPerMovedEdge.mean).toBeGreaterThan(0);
      expect(m.syncBytesPerMovedEdge.max).toBeGreaterThanOrEqual(m.syncBytesPerMovedEdge.mean);
      expect(typeof m.failoverCpu.postgresCpuMs).toBe('number');
      expect(m.failoverCpu.replicaCpuMs).toHaveLength(1);
      expect(m.changeAfterKillToReadyNNMs).toBeGreaterThan(0);
      expect(output).toContain('back in sync');
    },
  );
});
