/**
 * Pods removed on site (`podman pod rm -f`, outside the driver) against real podman: status reports
 * them as drift, an apply of the same unit plays them again beside the pods that run (which are
 * not touched), and the edge's reconciler does that apply on its next pass. Before, a removed pod
 * was only Degraded ("applying the workload again recreates them"), which nothing applied.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { edgeMailbox } from '../../../test/fixtures/edge-mailbox.js';
import { observe } from '../../../test/fixtures/driver-suite.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver } from '../driver.js';
import {
  configuredDeployment,
  eachPodmanDriver,
  pod,
  SKIP_PODMAN,
  TEST_IMAGE,
  unit,
  type PodmanTestEnv,
} from './harness.js';

const MISSING = 'missing (removed outside Outpost?); the next apply recreates it';

describe.skipIf(SKIP_PODMAN)('podman driver: pods removed on site', () => {
  let env: PodmanTestEnv;
  let driver: Driver;

  eachPodmanDriver((e, d) => {
    env = e;
    driver = d;
  });

  const sleeper = (name: string) =>
    pod(name, { containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '600'] }] });

  /** The workload's pods as podman names them, with their state (`podman pod ps` Status). */
  const pods = async (workload: string): Promise<Record<string, string>> => {
    const out = await env.podman.ok(
      [
        'pod',
        'ps',
        '--filter',
        `label=outpost.dev/owner=${await env.owner()}`,
        '--filter',
        `label=outpost.dev/workload=${workload}`,
        '--format',
        '{{.Name}} {{.Status}}',
      ],
      'pod ps',
    );
    return Object.fromEntries(
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ') as [string, string]),
    );
  };
  /**
   * `podman pod rm -f` on site, as `pod stop -t 0` first: podman 4.3's `pod rm -f` of a running pod
   * took 3-7 s, stop then rm well under one; the pods are gone either way.
   */
  const removeOnSite = async (...names: string[]): Promise<void> => {
    await env.podman.ok(['pod', 'stop', '-t', '0', ...names], 'podman pod stop');
    await env.podman.ok(['pod', 'rm', '-f', '-t', '0', ...names], 'podman pod rm');
  };
  /** Podman's name of the pod whose name begins with `prefix` (the manifest name: plan.ts `podName`). */
  const podmanName = async (workload: string, prefix: string, replica = ''): Promise<string> => {
    const names = Object.keys(await pods(workload)).filter(
      (n) => n.startsWith(`${prefix}-`) && (replica ? n.endsWith(`-pod-${replica}`) : !/-pod-\d+$/.test(n)),
    );
    expect(names, `one pod ${prefix}${replica ? ` replica ${replica}` : ''}`).toHaveLength(1);
    return names[0];
  };
  /** Ids, start times and states of a pod's containers: what a restart or a replace changes. */
  const identity = async (podName: string): Promise<string> => {
    const ids = (await env.podman.ok(['ps', '-a', '-q', '--filter', `pod=${podName}`], 'ps'))
      .split('\n')
      .filter(Boolean);
    expect(ids.length, `containers of ${podName}`).toBeGreaterThan(0);
    return env.podman.ok(
      ['inspect', '--format', '{{.Id}} {{.Name}} {{.State.Status}} {{.State.StartedAt}} {{.RestartCount}}', ...ids],
      'inspect',
    );
  };
  const drift = (workload: string) =>
    waitFor(
      async () => {
        const w = await observe(driver, workload);
        return w?.modified?.length ? w : undefined;
      },
      { what: `${workload} reported as drift` },
    );
  const ready = (workload: string, what: string) =>
    waitFor(
      async () => {
        const w = await observe(driver, workload);
        return w?.phase === 'Ready' && !w.modified ? w : undefined;
      },
      { what },
    );

  it('reports a removed pod as drift, and an apply of the same unit plays it again beside the one that runs', async () => {
    const a = `a-${env.suffix}`;
    const b = `b-${env.suffix}`;
    const u = unit('gone', 1, [sleeper(a), sleeper(b)]);
    await driver.apply(u);
    await ready('gone', 'gone Ready');
    const podA = await podmanName('gone', a);
    const before = await identity(podA);

    await removeOnSite(await podmanName('gone', b));
    const o = await drift('gone');
    expect(o.modified).toEqual([`Pod/${b}`]);
    expect(o.phase).toBe('Modified');
    expect(o.objects[`Pod/${b}`]).toEqual({ ready: false, message: MISSING });
    expect(o.objects[`Pod/${a}`]).toEqual({ ready: true });
    expect(o.message).toBe(`1 pod(s) missing (removed outside Outpost?): ${b}; the next apply recreates them`);

    // What the reconciler does on drift: apply the same unit again.
    await driver.apply(u);
    expect(Object.values(await pods('gone'))).toEqual(['Running', 'Running']);
    expect(await identity(podA), 'the pod that ran is not touched').toBe(before);
    await ready('gone', 'gone Ready after the apply');
  });

  it("plays a Deployment's removed pod again as podman made it, with its env and files, beside the other", async () => {
    const app = `app-${env.suffix}`;
    const u = unit('dep', 1, configuredDeployment(app, 'v1'));
    await driver.apply(u);
    await ready('dep', 'dep Ready');
    const pod0 = await podmanName('dep', app, '0');
    const pod1 = await podmanName('dep', app, '1');
    const before = await identity(pod0);
    const looks = async (p: string): Promise<string> =>
      [
        await env.podman.ok(['pod', 'inspect', '--format', '{{json .Labels}}', p], 'pod inspect'),
        await env.podman.ok(
          ['exec', `${p}-main`, 'sh', '-c', 'hostname; echo "$GREETING $PASSWORD"; cat /etc/app/app.conf'],
          'exec',
        ),
      ].join('');
    const asPlayed = await looks(pod1);

    await removeOnSite(pod1);
    const o = await drift('dep');
    expect(o.modified).toEqual([`Pod/${app}-pod-1`]);
    expect(o.phase).toBe('Modified');
    expect(o.objects[`Deployment/${app}`]).toEqual({ ready: false, message: '1/2 pods ready' });

    await driver.apply(u);
    expect(await pods('dep')).toEqual({ [pod0]: 'Running', [pod1]: 'Running' });
    expect(await identity(pod0), 'the pod that ran is not touched').toBe(before);
    // The same labels (owner, workload, hash, template), hostname, env from ConfigMap and Secret, and files.
    expect(await looks(pod1)).toBe(asPlayed);
    expect(asPlayed).toContain(`${app}\nhello-v1 pw-v1\nversion=v1`);
    await ready('dep', 'dep Ready after the apply');
  });

  it('reports every pod gone as drift, and none while the workload is stopped on request', async () => {
    const a = `a-${env.suffix}`;
    const b = `b-${env.suffix}`;
    const u = unit('all', 1, [sleeper(a), sleeper(b)]);
    await driver.apply(u);
    await ready('all', 'all Ready');

    await removeOnSite(...Object.keys(await pods('all')));
    const o = await drift('all');
    expect(o.modified).toEqual([`Pod/${a}`, `Pod/${b}`]);
    expect(o.phase).toBe('Modified');
    expect(o.message).toBe('no pods exist (removed outside Outpost?); the next apply recreates them');
    await driver.apply(u);
    await ready('all', 'all Ready after the apply');

    // Stopped on request: a removed pod is not drift (the reconciler applies nothing to a stopped
    // workload); an apply makes it again, stopped like the other, and a start runs both.
    await driver.stopWorkload('all');
    await removeOnSite(await podmanName('all', b));
    const paused = (await observe(driver, 'all'))!;
    expect(paused.phase).toBe('Paused');
    expect(paused.modified).toBeUndefined();
    await driver.apply(u);
    expect(Object.keys(await pods('all'))).toHaveLength(2);
    expect(Object.values(await pods('all'))).not.toContain('Running');
    expect((await observe(driver, 'all'))?.phase).toBe('Paused');
    await driver.startWorkload('all');
    expect(Object.values(await pods('all'))).toEqual(['Running', 'Running']);
    await ready('all', 'all Ready after the start');

    // Stopped, then every pod removed: a start cannot run what is gone, but it is then drift, which
    // the next apply recreates (it was a Paused workload no start could run).
    await driver.stopWorkload('all');
    await removeOnSite(...Object.keys(await pods('all')));
    await expect(driver.startWorkload('all')).rejects.toThrow(
      'workload all has no pods on this edge (removed outside Outpost?); the next apply recreates them',
    );
    expect((await drift('all')).modified).toEqual([`Pod/${a}`, `Pod/${b}`]);
    await driver.apply(u);
    await ready('all', 'all Ready after the apply that followed the start');
  });

  it("the edge's reconciler applies the workload again on its next pass and the pod runs again", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'outpost-podman-recon-'));
    const web = `web-${env.suffix}`;
    const m = await edgeMailbox(dir, driver, { name: 'recon', manifests: [sleeper(web)] });
    try {
      await m.untilReady('recon Ready');

      await removeOnSite(await podmanName('recon', web));
      await drift('recon');
      await m.reconciler.trigger();
      expect(m.reconciler.lastResult.applied).toEqual(['recon']);
      expect(Object.values(await pods('recon'))).toEqual(['Running']);
      await m.untilReady('recon reported Ready again');
    } finally {
      m.store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reports a pod of another version beside the running one as left over, and an apply removes it alone', async () => {
    const a = `lo-${env.suffix}`;
    const u = unit('leftover', 1, [sleeper(a)]);
    await driver.apply(u);
    await ready('leftover', 'leftover Ready');
    const running = await podmanName('leftover', a);
    const before = await identity(running);

    // A pod of an older version with Outpost's labels, as an update interrupted after its new pods
    // ran would leave it (played here by hand).
    const owner = await env.owner();
    const stale = `${a}-${owner.slice(0, 8)}-deadbeef`;
    const file = join(env.dir, `${stale}.yaml`);
    const labels = {
      'outpost.dev/owner': owner,
      'outpost.dev/workload': 'leftover',
      'outpost.dev/hash': 'deadbeef00000000',
      'outpost.dev/generation': '0',
      'outpost.dev/template': a,
    };
    await writeFile(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: stale, labels },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '600'] }],
        },
      }),
    );
    await env.podman.ok(['kube', 'play', file], 'playing a left-over pod');

    const o = await drift('leftover');
    expect(o.modified).toEqual([`Pod/${a}@deadbeef`]);
    expect(o.phase).toBe('Modified');
    expect(o.objects[`Pod/${a}@deadbeef`]).toEqual({
      ready: false,
      message: `left over from version deadbeef00000000 beside the running ${u.hash} (an update interrupted?); the next apply removes it`,
    });
    // The running pod's status is its own, not the left-over one's of the same name.
    expect(o.objects[`Pod/${a}`]).toEqual({ ready: true });
    expect(o.objects[`Pod/${a}/c`]).toEqual({ ready: true });
    expect(o.message).toBe(`1 pod(s) of another version left over: ${a}; the next apply removes them`);

    // What the reconciler does on drift: apply the same unit again.
    await driver.apply(u);
    expect(Object.keys(await pods('leftover'))).toEqual([running]);
    expect(await identity(running), 'the pod that ran is not touched').toBe(before);
    await ready('leftover', 'leftover Ready after the apply');
  });
});
