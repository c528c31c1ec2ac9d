/**
 * Start and restart on request against real podman, with a container that goes down right after
 * the driver's `pod start`: what podman 4.3's stop/restart race does (start-watch.ts). The race
 * itself cannot be made to happen on demand, so the driver runs podman through a wrapper that,
 * once armed, kills a container as soon as `pod start` returns, before the driver looks again
 * (or after every start: a container that cannot be got running).
 * A killed container stays down under restartPolicy Always (podman kill counts as stopped by the
 * user): exit code 137, no restart, as in the failure seen in CI.
 */
import { chmod, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { observe } from '../../../test/fixtures/driver-suite.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver } from '../driver.js';
import { eachPodmanDriver, pod, SKIP_PODMAN, TEST_IMAGE, unit, type PodmanTestEnv } from './harness.js';
import { LEFT_DOWN_MS } from './status.js';

describe.skipIf(SKIP_PODMAN)('podman driver: a start that does not take', () => {
  let env: PodmanTestEnv;
  let driver: Driver;
  /** Holds the container the wrapper kills after the next `pod start` (gone once it did), or after every start. */
  let armFile: string;

  eachPodmanDriver(
    (e, d) => {
      env = e;
      driver = d;
    },
    async (env) => {
      armFile = join(env.dir, 'kill-after-pod-start');
      const wrapper = join(env.dir, 'podman-wrapper');
      await writeFile(
        wrapper,
        [
          '#!/bin/sh',
          'podman "$@"',
          'rc=$?',
          // ARM holds "ID" (once, after the next `pod start`) or "ID sticky" (after every start).
          `if [ -s '${armFile}' ] && { [ "$1 $2" = 'pod start' ] || [ "$1" = start ]; }; then`,
          `  set -- $(cat '${armFile}')`,
          `  [ "$2" = sticky ] || rm -f '${armFile}'`,
          '  podman kill "$1" >/dev/null',
          'fi',
          'exit $rc',
          '',
        ].join('\n'),
      );
      await chmod(wrapper, 0o755);
      return { dataDir: env.dir, podmanBin: wrapper };
    },
  );

  const twoSleepers = (name: string) =>
    unit(name, 1, [
      pod(`${name}-${env.suffix}`, {
        containers: [
          { name: 'a', image: TEST_IMAGE, command: ['sleep', '600'] },
          { name: 'b', image: TEST_IMAGE, command: ['sleep', '600'] },
        ],
      }),
    ]);

  /** The state of each container of the workload (podman's `State.Status`), by podman's name. */
  const containers = async (workload: string): Promise<Record<string, string>> => {
    const ids = (
      await env.podman.ok(
        [
          'ps',
          '-a',
          '-q',
          '--filter',
          `label=outpost.dev/owner=${await env.owner()}`,
          '--filter',
          `label=outpost.dev/workload=${workload}`,
        ],
        'ps',
      )
    )
      .split('\n')
      .filter(Boolean);
    const out = await env.podman.ok(['inspect', '--format', '{{.Name}} {{.State.Status}}', ...ids], 'inspect');
    return Object.fromEntries(
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ') as [string, string]),
    );
  };
  const containerB = async (workload: string): Promise<string> =>
    Object.keys(await containers(workload)).find((n) => n.endsWith('-b'))!;
  const armed = async (): Promise<boolean> => (await readFile(armFile, 'utf8').catch(() => '')) !== '';

  it('starts a container again that went down right after a start or a restart on request', async () => {
    const u = twoSleepers('race');
    await driver.apply(u);
    await waitFor(async () => (await observe(driver, 'race'))?.phase === 'Ready', { what: 'race Ready' });
    const b = await containerB('race');

    await driver.stopWorkload('race');
    await writeFile(armFile, b);
    await driver.startWorkload('race');
    expect(await armed(), 'the wrapper killed b after pod start').toBe(false);
    // Resolved means running: without the watch, b stays exited (code 137, 0 restarts).
    expect(await containers('race')).toEqual({ [b]: 'running', [b.replace(/-b$/, '-a')]: 'running' });

    await writeFile(armFile, b);
    await driver.restartWorkload('race');
    expect(await armed(), 'the wrapper killed b after pod start').toBe(false);
    expect(await containers('race')).toEqual({ [b]: 'running', [b.replace(/-b$/, '-a')]: 'running' });
    await waitFor(async () => (await observe(driver, 'race'))?.phase === 'Ready', { what: 'race Ready again' });
  });

  it('reports a container podman left down as drift, which an apply starts; one stopped on request stays stopped', async () => {
    const u = twoSleepers('drift');
    await driver.apply(u);
    await waitFor(async () => (await observe(driver, 'drift'))?.phase === 'Ready', { what: 'drift Ready' });
    const b = await containerB('drift');

    await env.podman.ok(['kill', b], 'podman kill');
    const o = await waitFor(
      async () => {
        const w = await observe(driver, 'drift');
        return w?.modified?.length ? w : undefined;
      },
      { what: 'b reported as drift' },
    );
    expect(o.modified).toEqual([`Pod/drift-${env.suffix}/b`]);
    expect(o.phase).toBe('Degraded'); // exit code 137 is worse than Modified
    expect(o.objects[`Pod/drift-${env.suffix}/b`]).toMatchObject({ ready: false });
    expect(o.objects[`Pod/drift-${env.suffix}/b`]?.message).toContain('the next apply does');

    // What the reconciler does on drift: apply the same unit again.
    await driver.apply(u);
    expect((await containers('drift'))[b]).toBe('running');
    await waitFor(
      async () => {
        const w = await observe(driver, 'drift');
        return w?.phase === 'Ready' && !w.modified;
      },
      { what: 'drift Ready after the apply' },
    );

    // Stopped on request is not drift, and an apply of the same unit leaves it stopped.
    await driver.stopWorkload('drift');
    // A negative: nothing to wait for but the time after which a container counts as left down.
    await new Promise((r) => setTimeout(r, LEFT_DOWN_MS + 500));
    const paused = (await observe(driver, 'drift'))!;
    expect(paused.phase).toBe('Paused');
    expect(paused.modified).toBeUndefined();
    await driver.apply(u);
    expect(Object.values(await containers('drift'))).toEqual(['exited', 'exited']);
    expect((await observe(driver, 'drift'))?.message).toContain('runs again on a start');
    // A new version replaces the stopped pods by running ones (the reconciler applies it after a start).
    const v2 = unit('drift', 2, [
      pod(`drift-${env.suffix}`, {
        containers: [{ name: 'a', image: TEST_IMAGE, command: ['sleep', '601'] }],
      }),
    ]);
    await driver.apply(v2);
    await waitFor(
      async () => {
        const w = await observe(driver, 'drift');
        return w?.phase === 'Ready' && w.hash === v2.hash;
      },
      { what: 'drift v2 Ready' },
    );
  });

  it('fails a restart whose container stays down after a second start, and reports it as drift, not Paused', async () => {
    const u = twoSleepers('down');
    await driver.apply(u);
    await waitFor(async () => (await observe(driver, 'down'))?.phase === 'Ready', { what: 'down Ready' });
    const b = await containerB('down');

    await writeFile(armFile, `${b} sticky`);
    await expect(driver.restartWorkload('down')).rejects.toThrow(
      `down-${env.suffix}/b (exited, exit code 137) stopped right after the start and stays down after a second one`,
    );
    await rm(armFile);
    const o = await waitFor(
      async () => {
        const w = await observe(driver, 'down');
        return w?.modified?.length ? w : undefined;
      },
      { what: 'b reported as drift' },
    );
    expect(o.modified).toEqual([`Pod/down-${env.suffix}/b`]);
    expect(o.phase).toBe('Degraded');
    // The reconciler's next pass applies the unit again, which starts it.
    await driver.apply(u);
    expect((await containers('down'))[b]).toBe('running');
  });
});
