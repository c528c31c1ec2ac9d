/**
 * A failed update never leaves less running than before, and a crash of the agent never leaves two
 * copies of a process (issue 15, items 2 and 3), on real host processes.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { observe } from '../../../test/fixtures/driver-suite.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver, WorkloadObservation } from '../driver.js';
import { createProcessDriver } from './index.js';
import { isAlive, readStat } from './proc.js';
import { killAll, shWorkload, unit } from '../../../test/fixtures/process-workloads.js';

describe('process driver update and crash safety', () => {
  let dataDir: string;
  let drivers: Driver[];

  const make = async (): Promise<Driver> => {
    const d = createProcessDriver({ dataDir, pollMs: 100, backoffBaseMs: 200 });
    drivers.push(d);
    await d.start();
    return d;
  };
  const stateFile = (name: string): string => join(dataDir, 'workloads', name, 'state.json');
  const recorded = async (name: string): Promise<{ pid: number; startTime: number }> =>
    (
      JSON.parse(await readFile(stateFile(name), 'utf8')) as {
        processes: Record<string, { pid: number; startTime: number }>;
      }
    ).processes.main;
  /** The pids the workload's runs wrote, those still alive. */
  const livePids = async (file: string): Promise<number[]> =>
    (await readFile(file, 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .filter((pid) => {
        const st = readStat(pid);
        return st !== null && st.state !== 'Z';
      });

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'outpost-process-safety-'));
    drivers = [];
  });

  afterEach(async () => {
    for (const d of drivers) await d.close().catch(() => undefined);
    await killAll(dataDir);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps the running version when the new one names a command that does not exist', async () => {
    const d = await make();
    const v1 = shWorkload('app', 'echo v1 > v; exec sleep 600');
    await d.apply(v1);
    await waitFor(async () => (await observe(d, 'app'))?.phase === 'Ready', { what: 'app Ready' });
    const before = await recorded('app');

    const v2 = unit('app', [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'app' },
        spec: { containers: [{ name: 'main', command: ['/opt/nowhere/app-v2'] }] },
      },
    ]);
    await d.apply(v2);
    const o = (await observe(d, 'app'))!;
    expect(o.phase).toBe('Failed');
    expect(o.hash).toBe(v2.hash);
    expect(o.message).toContain('/opt/nowhere/app-v2 does not exist');
    expect(o.message).toContain(`the previous version, hash ${v1.hash}, keeps running`);
    expect(isAlive(before)).toBe(true);
    expect(await recorded('app')).toEqual(before);

    // Rolling back to the running version is instant and touches nothing.
    await d.apply(v1);
    expect((await observe(d, 'app'))?.phase).toBe('Ready');
    expect(await recorded('app')).toEqual(before);
  });

  it('adopts the process an agent spawned but died before recording, instead of starting a second', async () => {
    const pids = join(dataDir, 'pids');
    const w = shWorkload('dup', `echo $$$$ >> ${pids}; exec sleep 600`);
    const d1 = await make();
    await d1.apply(w);
    await waitFor(async () => (await livePids(pids)).length === 1, { what: 'dup running' });
    const first = await recorded('dup');
    const firstCommand = await livePids(pids);
    await d1.close();
    // What a kill -9 between the spawn and the state write leaves: the state as written before the spawn.
    const st = JSON.parse(await readFile(stateFile('dup'), 'utf8')) as { processes: Record<string, unknown> };
    st.processes = {};
    await writeFile(stateFile('dup'), JSON.stringify(st));

    // Every spawn writes a new intent nonce before it starts the process (supervisor.ts): the
    // nonce left unchanged once the new driver has adopted (start() awaits it) and reports Ready
    // means no second copy was started, whenever it would have written its pid.
    const intent = join(dataDir, 'workloads', 'dup', 'run', 'main.intent');
    const nonce = await readFile(intent, 'utf8');
    const d2 = await make();
    await waitFor(async () => (await observe(d2, 'dup'))?.phase === 'Ready', { what: 'dup Ready after adoption' });
    expect(await readFile(intent, 'utf8')).toBe(nonce);
    expect(await livePids(pids)).toEqual(firstCommand);
    expect((await recorded('dup')).pid).toBe(first.pid);
    expect((await observe(d2, 'dup'))?.restarts).toBe(0);
  });

  it('reaps a stray process under the workload (not the recorded intent) and runs exactly one', async () => {
    const pids = join(dataDir, 'pids');
    const w = shWorkload('stray', `echo $$$$ >> ${pids}; exec sleep 600`);
    const d1 = await make();
    await d1.apply(w);
    await waitFor(async () => (await livePids(pids)).length === 1, { what: 'stray running' });
    const first = await recorded('stray');
    const [firstCommand] = await livePids(pids);
    await d1.close();
    const st = JSON.parse(await readFile(stateFile('stray'), 'utf8')) as { processes: Record<string, unknown> };
    st.processes = {};
    await writeFile(stateFile('stray'), JSON.stringify(st));
    // (`$$$$`: Kubernetes expands `$$` to `$` in commands.)
    // A later intent than the process that runs: that process is nobody's now.
    await writeFile(join(dataDir, 'workloads', 'stray', 'run', 'main.intent'), 'another-spawn');

    const d2 = await make();
    await waitFor(
      async () => {
        const live = await livePids(pids);
        if ((await observe(d2, 'stray'))?.phase === 'Ready' && live.length === 1 && live[0] !== firstCommand)
          return true;
        throw new Error(`live ${live.join(',')} (first ${firstCommand})`);
      },
      { what: 'stray Ready with one process' },
    );
    expect(isAlive(first)).toBe(false);
    expect(isAlive(await recorded('stray'))).toBe(true);
    expect((await recorded('stray')).pid).not.toBe(first.pid);
  });

  it('reports a crash loop as Degraded with the exit code at every moment, also while it runs again', async () => {
    const d = await make();
    await d.apply(shWorkload('loop', 'echo up; sleep 0.3; exit 3', { restartPolicy: 'Always' }));
    const seen: WorkloadObservation[] = [];
    await waitFor(
      async () => {
        const o = await observe(d, 'loop');
        if (o) seen.push(o);
        return (o?.restarts ?? 0) >= 3;
      },
      { what: 'three restarts', timeout: 30_000, interval: 20 },
    );
    const degraded = seen.filter((o) => o.phase === 'Degraded');
    expect(degraded.length).toBeGreaterThan(0);
    for (const o of degraded) expect(o.message).toMatch(/exited with code 3/);
  });
});
