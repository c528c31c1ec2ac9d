/**
 * The reconciler against a real replica file and the real process driver: a workload whose apply
 * failed is applied again later, so a cause fixed on site (a binary installed, an image loaded)
 * heals without a change from the hub.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { edgeName, mailboxDocId } from '../core/ids.js';
import { initReport, initSpec, putSpecWorkload, readReport, type ReportDoc, type SpecDoc } from '../core/mailbox.js';
import type { Manifest } from '../core/resources.js';
import { ReplicaStore } from '../sync/store.js';
import { waitFor } from '../test/helpers.js';
import type { Driver } from './drivers/driver.js';
import { createProcessDriver } from './drivers/process/index.js';
import { killAll } from '../test/fixtures/process-workloads.js';
import { ApplyPacing } from './apply-pacing.js';
import { HeldStopped } from './held-stopped.js';
import { Reconciler } from './reconciler.js';

const edge = edgeName('e1');
const pod = (command: string[]): Manifest[] => [
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'app' },
    spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', command }] },
  } as Manifest,
];

describe('reconciler', () => {
  let dir: string;
  let store: ReplicaStore;
  let driver: Driver;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'outpost-reconciler-'));
    store = await ReplicaStore.open(join(dir, 'edge.db'));
    store.create<SpecDoc>(mailboxDocId(edge, 'spec'), { init: (d) => initSpec(d, edge) });
    store.create<ReportDoc>(mailboxDocId(edge, 'report'), { init: (d) => initReport(d, edge) });
    driver = createProcessDriver({ dataDir: join(dir, 'data'), pollMs: 100 });
    await driver.start();
  });

  afterEach(async () => {
    await driver.close();
    await killAll(join(dir, 'data'));
    store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const setSpec = (generation: number, manifests: Manifest[]): void => {
    store.change<SpecDoc>(mailboxDocId(edge, 'spec'), (d) => {
      putSpecWorkload(d, { name: 'app', generation, revision: generation, manifests });
    });
  };
  const reported = () => readReport(store.get<ReportDoc>(mailboxDocId(edge, 'report'))!).workloads.app;

  it('applies a Failed workload again later, and it runs once its cause is fixed on site', async () => {
    const r = new Reconciler(store, edge, driver, HeldStopped.inMemory(), 200);
    setSpec(1, pod(['/bin/sh', '-c', 'exec sleep 600']));
    await r.trigger();
    await waitFor(
      async () => {
        await r.trigger();
        return reported()?.phase === 'Ready';
      },
      { what: 'generation 1 Ready' },
    );

    const bin = join(dir, 'bin', 'app-v2');
    setSpec(2, pod([bin]));
    await r.trigger();
    expect(reported()).toMatchObject({ phase: 'Failed', observedGeneration: 2 });
    expect(reported()?.message).toContain(`${bin} does not exist`);

    // Installed on site; no change from the hub.
    await mkdir(join(dir, 'bin'));
    await writeFile(bin, '#!/bin/sh\nexec sleep 600\n');
    await chmod(bin, 0o755);
    await waitFor(
      async () => {
        await r.trigger();
        return reported()?.phase === 'Ready' && reported()?.observedGeneration === 2;
      },
      { what: 'generation 2 Ready after a retry' },
    );
  });

  it('starts a workload the driver keeps stopped when nothing holds it stopped any more, and keeps a held one stopped', async () => {
    const held = HeldStopped.inMemory();
    const r = new Reconciler(store, edge, driver, held, 200);
    setSpec(1, pod(['/bin/sh', '-c', 'exec sleep 600']));
    const ready = async () => {
      await r.trigger();
      return reported()?.phase === 'Ready';
    };
    await waitFor(ready, { what: 'generation 1 Ready' });

    // Held by a remote stop: stopped, and it stays so pass after pass.
    await held.add('app');
    await r.trigger();
    await r.trigger();
    expect(reported()?.phase).toBe('Paused');
    expect((await driver.list()).find((o) => o.name === 'app')).toMatchObject({ stopped: true });

    // Stopped in the driver with nothing holding it (a pause lost with a rebuilt replica, or a
    // hold lifted while the agent was down): a reconciler that did not stop it starts it.
    await held.delete('app');
    const fresh = new Reconciler(store, edge, driver, HeldStopped.inMemory(), 200);
    await waitFor(
      async () => {
        await fresh.trigger();
        return reported()?.phase === 'Ready';
      },
      { what: 'the stopped workload started again' },
    );
    expect((await driver.list()).find((o) => o.name === 'app')?.stopped).toBeFalsy();
  });

  it('applies a workload whose apply keeps failing less and less often, and says when it tries next', async () => {
    // The process driver refuses a workload name it cannot use as a directory, every time.
    const r = new Reconciler(store, edge, driver, HeldStopped.inMemory(), 200, undefined, new ApplyPacing(200, 800));
    store.change<SpecDoc>(mailboxDocId(edge, 'spec'), (d) => {
      putSpecWorkload(d, { name: 'Bad_Name', generation: 1, revision: 1, manifests: pod(['/bin/true']) });
    });
    const apply = vi.spyOn(driver, 'apply');
    const report = () => readReport(store.get<ReportDoc>(mailboxDocId(edge, 'report'))!).workloads.Bad_Name;
    await r.trigger();
    expect(report()?.message).toMatch(/^applying failed: invalid workload name "Bad_Name"/);
    // Passes one after another for 2 s: unpaced, every one of them applied (one a pass before).
    const until = Date.now() + 2_000;
    let passes = 1;
    while (Date.now() < until) {
      await r.trigger();
      passes++;
      await new Promise((res) => setTimeout(res, 10));
    }
    // Applied at 0, at the next pass, then 200, 400 and 800 ms apart: 5 or 6 in 2 s (7 at most on a slow run).
    expect(passes).toBeGreaterThan(20);
    expect(apply.mock.calls.length).toBeGreaterThanOrEqual(4);
    expect(apply.mock.calls.length).toBeLessThanOrEqual(7);
    expect(report()?.message).toMatch(
      /^applying failed: invalid workload name "Bad_Name".* \(attempt \d; the next in \d+ ms, twice as long each time up to 800 ms\)$/,
    );
  });
});

describe('a reconcile pass that fails', () => {
  it('is logged by check(), never an unhandled rejection (its callers are timers and events); trigger() still rejects', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'outpost-reconciler-'));
    const store = await ReplicaStore.open(join(dir, 'edge.db'));
    store.create<SpecDoc>(mailboxDocId(edge, 'spec'), { init: (d) => initSpec(d, edge) });
    store.create<ReportDoc>(mailboxDocId(edge, 'report'), { init: (d) => initReport(d, edge) });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const r = new Reconciler(store, edge, createProcessDriver({ dataDir: join(dir, 'data'), pollMs: 100 }));
      // The replica can no longer be read or written, as with a disk gone.
      store.close();
      await expect(r.trigger()).rejects.toThrow();
      r.check();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
      await r.stop();
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
