/**
 * @module The acceptance suite every runtime driver runs (process, podman, kubernetes). It checks
 * the contract written at the top of `driver.ts` against a real runtime: real processes or
 * containers, real HTTP on real ports.
 *
 * It lives in `driver.case.ts`, not `driver.case.test.ts`: vitest would collect a `*.test.ts`
 * file on its own and fail it for having no tests. Each driver's test file calls `driverSuite`.
 *
 * @example
 * ```ts
 * // edge/drivers/podman/podman.test.ts
 * driverSuite('podman', async () => {
 *   const dir = await mkdtemp(join(tmpdir(), 'outpost-podman-'));
 *   return {
 *     driver: createPodmanDriver({ dataDir: dir }),
 *     restart: async () => createPodmanDriver({ dataDir: dir }),
 *     workload: (name, opts) => ({ name, generation: 1, hash: ..., manifests: [...] }),
 *     crashing: (name) => ...,
 *     invalid: (name) => ...,
 *     ticker: (name) => ...,
 *     identity: async (name) => ...container id + StartedAt...,
 *     capabilities: { exec: true },
 *     cleanup: async () => { ...remove leftovers, rm -rf dir... },
 *   };
 * });
 * ```
 *
 * The harness contract (what `setup` returns):
 * - `driver` and `restart()` return drivers that are NOT started yet: the suite calls `start()`,
 *   because adoption on `start()` is part of what it checks. `restart()` makes a fresh driver
 *   instance on the same state (same data dir / same runtime), as an agent restart would; the
 *   suite closes the previous instance first (`close()` must leave workloads running).
 * - `workload(name, { port, version })` is one Pod or Deployment (replicas 1) that serves HTTP on
 *   `port` (declared as its containerPort) with a response body containing `version`, and has the
 *   env variable `OUTPOST_TEST_VERSION=<version>`. Its `hash` must change with `version` and be
 *   the same for the same arguments. A readiness probe is welcome but not required.
 * - `crashing(name)` exits non-zero shortly after it starts, with restartPolicy Always.
 * - `invalid(name)` is a unit this driver cannot run (e.g. a container without a command for the
 *   process driver, an unsupported kind for all); the suite expects phase Failed and a message.
 * - `ticker(name)` prints a line `tick <n>` (n counting up from 0) every ~200 ms on stdout.
 * - `identity(name)` returns a string that changes whenever the runtime (re)starts any process
 *   or container of the workload (pid + start time, container id + StartedAt, pod uid + ...).
 * - `foreign?(name)` creates something in the runtime that Outpost does not own but that looks
 *   close (a stray directory, an unlabelled container); `list()` must not report it.
 * - `capabilities.exec: false` skips the exec case, for a runtime that cannot run a command in a
 *   workload's context (say why in the harness).
 * - `cleanup()` removes everything the test made (processes, containers, temp dirs), even if the
 *   test failed half-way. The suite calls `remove` on what it applied before `cleanup`.
 * - `timeouts.ready` (ms, default 30 s): how long to wait for a workload to become Ready; a
 *   runtime that pulls images or schedules pods may need more.
 */
import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers.js';
import { freePort } from '../../test/ports.js';
import type { Driver, WorkloadObservation, WorkloadUnit } from './driver.js';

export interface DriverHarness {
  driver: Driver;
  restart: () => Promise<Driver>;
  workload: (name: string, opts: { port: number; version: string }) => WorkloadUnit;
  crashing: (name: string) => WorkloadUnit;
  invalid: (name: string) => WorkloadUnit;
  ticker: (name: string) => WorkloadUnit;
  identity: (name: string) => Promise<string>;
  foreign?: (name: string) => Promise<void>;
  capabilities: { exec: boolean };
  timeouts?: { ready?: number };
  cleanup: () => Promise<void>;
}

export { freePort };

async function httpBody(host: string, port: number): Promise<string> {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), 2_000);
  try {
    const res = await fetch(`http://${host}:${port}/`, { signal: ctl.signal });
    return await res.text();
  } finally {
    clearTimeout(t);
  }
}

async function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (ok: boolean): void => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(1_000, () => done(false));
    s.on('connect', () => done(true));
    s.on('error', () => done(false));
  });
}

async function observe(driver: Driver, name: string): Promise<WorkloadObservation | undefined> {
  return (await driver.list()).find((w) => w.name === name);
}

export function driverSuite(driverName: string, setup: () => Promise<DriverHarness>): void {
  describe(`driver acceptance: ${driverName}`, () => {
    let h: DriverHarness;
    let driver: Driver;
    const applied = new Set<string>();
    let readyMs = 30_000;

    const apply = async (unit: WorkloadUnit): Promise<void> => {
      applied.add(unit.name);
      await driver.apply(unit);
    };
    const waitPhase = (
      name: string,
      pred: (o: WorkloadObservation) => boolean,
      what: string,
      ms = readyMs,
    ): Promise<WorkloadObservation> =>
      waitFor(
        async () => {
          const o = await observe(driver, name);
          return o && pred(o) ? o : undefined;
        },
        { what: `${name} ${what}`, timeout: ms },
      );
    const waitReady = (name: string): Promise<WorkloadObservation> =>
      waitPhase(name, (o) => o.phase === 'Ready', 'to be Ready');
    const waitServes = async (name: string, port: number, version: string): Promise<void> => {
      const ep = await driver.endpoint(name, port);
      expect(ep, `endpoint(${name}, ${port})`).not.toBeNull();
      await waitFor(async () => (await httpBody(ep!.host, ep!.port)).includes(version), {
        what: `${name} to serve ${version} on ${ep!.host}:${ep!.port}`,
        timeout: readyMs,
      });
    };

    beforeEach(async () => {
      h = await setup();
      readyMs = h.timeouts?.ready ?? 30_000;
      driver = h.driver;
      applied.clear();
      await driver.start();
    });

    afterEach(async () => {
      try {
        for (const name of applied) await driver.remove(name).catch(() => undefined);
        await driver.close().catch(() => undefined);
      } finally {
        await h.cleanup();
      }
    });

    it('applies a workload that becomes Ready and answers on its endpoint', async () => {
      const port = await freePort();
      const unit = h.workload('web', { port, version: 'v1' });
      await apply(unit);
      const o = await waitReady('web');
      expect(o.hash).toBe(unit.hash);
      expect(o.generation).toBe(unit.generation);
      expect(Object.keys(o.objects).length).toBeGreaterThan(0);
      await waitServes('web', port, 'v1');
    });

    it('does not restart anything when the same hash is applied again', async () => {
      const port = await freePort();
      const unit = h.workload('same', { port, version: 'v1' });
      await apply(unit);
      await waitReady('same');
      const before = await h.identity('same');
      await apply(unit);
      await apply({ ...unit, manifests: structuredClone(unit.manifests) });
      const o = await waitReady('same');
      expect(await h.identity('same')).toBe(before);
      expect(o.restarts).toBe(0);
      await waitServes('same', port, 'v1');
    });

    it('replaces the workload when a new version is applied', async () => {
      const port = await freePort();
      await apply(h.workload('upgrade', { port, version: 'v1' }));
      await waitReady('upgrade');
      await waitServes('upgrade', port, 'v1');
      const before = await h.identity('upgrade');
      const v2 = { ...h.workload('upgrade', { port, version: 'v2' }), generation: 2 };
      await apply(v2);
      await waitPhase(
        'upgrade',
        (o) => o.phase === 'Ready' && o.hash === v2.hash && o.generation === 2,
        'to be Ready on v2',
      );
      await waitServes('upgrade', port, 'v2');
      expect(await h.identity('upgrade')).not.toBe(before);
    });

    it('adopts running workloads after the driver restarts, without restarting them', async () => {
      const port = await freePort();
      const unit = h.workload('adopt', { port, version: 'v1' });
      await apply(unit);
      await waitReady('adopt');
      const before = await h.identity('adopt');
      await driver.close();
      driver = await h.restart();
      await driver.start();
      const o = await waitReady('adopt');
      expect(o.hash).toBe(unit.hash);
      expect(o.generation).toBe(unit.generation);
      expect(o.restarts).toBe(0);
      expect(await h.identity('adopt')).toBe(before);
      await driver.apply(unit);
      expect(await h.identity('adopt')).toBe(before);
      await waitServes('adopt', port, 'v1');
    });

    it('removes a workload: it leaves list() and its port closes; removing again or an unknown name is fine', async () => {
      const port = await freePort();
      await apply(h.workload('gone', { port, version: 'v1' }));
      await waitReady('gone');
      const ep = await driver.endpoint('gone', port);
      await waitServes('gone', port, 'v1');
      await driver.remove('gone');
      expect(await observe(driver, 'gone')).toBeUndefined();
      await waitFor(async () => !(await portOpen(ep!.host, ep!.port)), {
        what: `port ${ep!.port} to close`,
        timeout: readyMs,
      });
      await driver.remove('gone');
      await driver.remove('never-applied');
    });

    it('stops, starts and restarts a workload on request', async () => {
      const port = await freePort();
      const unit = h.workload('cycle', { port, version: 'v1' });
      await apply(unit);
      await waitReady('cycle');
      const ep = await driver.endpoint('cycle', port);
      await waitServes('cycle', port, 'v1');

      await driver.stopWorkload('cycle');
      await waitFor(async () => !(await portOpen(ep!.host, ep!.port)), {
        what: `port ${ep!.port} to close after stop`,
        timeout: readyMs,
      });
      const stopped = await waitPhase('cycle', (o) => o.phase !== 'Ready', 'to leave Ready after stop');
      expect(stopped.hash).toBe(unit.hash);

      await driver.startWorkload('cycle');
      await waitReady('cycle');
      await waitServes('cycle', port, 'v1');

      const before = await h.identity('cycle');
      await driver.restartWorkload('cycle');
      await waitFor(async () => (await h.identity('cycle')) !== before, {
        what: 'a new identity after restart',
        timeout: readyMs,
      });
      await waitReady('cycle');
      await waitServes('cycle', port, 'v1');
    });

    it('shows the tail of the logs and follows new lines until aborted', async () => {
      await apply(h.ticker('ticker'));
      await waitFor(
        async () => {
          const lines: string[] = [];
          for await (const l of driver.logs('ticker', { tail: 100 })) lines.push(l);
          return lines.filter((l) => /tick \d+/.test(l)).length >= 3;
        },
        { what: 'a few ticks in the logs', timeout: readyMs },
      );
      const tail: string[] = [];
      for await (const l of driver.logs('ticker', { tail: 2 })) tail.push(l);
      expect(tail.length).toBe(2);
      expect(tail.every((l) => /tick \d+/.test(l))).toBe(true);
      const lastSeen = Number(/tick (\d+)/.exec(tail[1])![1]);

      const ctl = new AbortController();
      const followed: number[] = [];
      const guard = setTimeout(() => ctl.abort(), readyMs);
      try {
        for await (const l of driver.logs('ticker', { tail: 1, follow: true, signal: ctl.signal })) {
          const m = /tick (\d+)/.exec(l);
          if (m) followed.push(Number(m[1]));
          if (followed.some((n) => n > lastSeen + 2)) ctl.abort();
        }
      } finally {
        clearTimeout(guard);
      }
      expect(
        followed.some((n) => n > lastSeen + 2),
        `followed ticks: ${followed.join(',')}`,
      ).toBe(true);
    });

    it('runs a command inside the workload with its environment', async (ctx) => {
      if (!h.capabilities.exec) ctx.skip();
      const port = await freePort();
      await apply(h.workload('exec', { port, version: 'v7' }));
      await waitReady('exec');
      const ok = await driver.exec('exec', ['sh', '-c', 'echo "version=$OUTPOST_TEST_VERSION"; echo oops >&2'], {});
      expect(ok.exitCode).toBe(0);
      expect(ok.stdout).toContain('version=v7');
      expect(ok.stderr).toContain('oops');
      const bad = await driver.exec('exec', ['sh', '-c', 'exit 3'], {});
      expect(bad.exitCode).toBe(3);
    });

    it('reports a crashing workload with growing restarts and a phase that is not Ready', async () => {
      await apply(h.crashing('crash'));
      const o = await waitPhase(
        'crash',
        (w) => w.restarts >= 2,
        'to restart at least twice',
        Math.max(readyMs, 45_000),
      );
      expect(o.phase).not.toBe('Ready');
      expect(['Degraded', 'Progressing', 'Failed']).toContain(o.phase);
    });

    it('marks an invalid workload Failed with a message, without throwing from apply', async () => {
      await apply(h.invalid('broken'));
      const o = await waitPhase('broken', (w) => w.phase === 'Failed', 'to be Failed');
      expect(o.message ?? '').not.toBe('');
    });

    it('lists only the workloads it applied', async () => {
      if (h.foreign) await h.foreign('stranger');
      await apply(h.ticker('mine-a'));
      await apply(h.ticker('mine-b'));
      await waitFor(async () => (await driver.list()).length >= 2, { what: 'both workloads listed', timeout: readyMs });
      const names = (await driver.list()).map((w) => w.name).sort();
      expect(names).toEqual(['mine-a', 'mine-b']);
    });
  });
}
