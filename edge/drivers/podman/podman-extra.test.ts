/**
 * Podman-specific behaviour on real pods: Deployments with ConfigMaps and Secrets (the podman 4.3
 * workarounds of plan.ts), missing images, readiness probes, owner isolation.
 */
import { describe, expect, it } from 'vitest';
import type { Manifest } from '../../../core/resources.js';
import { freePort } from '../../../test/fixtures/driver-suite.js';
import { observe } from '../../../test/fixtures/driver-suite.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver } from '../driver.js';
import { createPodmanDriver } from './index.js';
import {
  configuredDeployment,
  eachPodmanDriver,
  pod,
  podmanTestEnv,
  SKIP_PODMAN,
  TEST_IMAGE,
  unit,
  type PodmanTestEnv,
} from './harness.js';

describe.skipIf(SKIP_PODMAN)('podman driver specifics', () => {
  let env: PodmanTestEnv;
  let driver: Driver;

  eachPodmanDriver((e, d) => {
    env = e;
    driver = d;
  });

  it('runs a Deployment with ConfigMap and Secret env and volumes, and updates them on a new version', async () => {
    await driver.apply(unit('app', 1, configuredDeployment(`app-${env.suffix}`, 'v1')));
    const o = await waitFor(
      async () => ((await observe(driver, 'app'))?.phase === 'Ready' ? observe(driver, 'app') : undefined),
      { what: 'app Ready' },
    );
    expect(o!.objects[`Deployment/app-${env.suffix}`]).toEqual({ ready: true, message: '2/2 pods ready' });
    const read = async (): Promise<string> =>
      (
        await driver.exec(
          'app',
          [
            'sh',
            '-c',
            'echo "$GREETING $PASSWORD"; cat /etc/app/app.conf /run/creds/token; echo; cat /run/creds/PASSWORD',
          ],
          {},
        )
      ).stdout;
    expect(await read()).toBe('hello-v1 pw-v1\nversion=v1\ntok-v1\npw-v1');
    // Mounted config is read-only, as in Kubernetes.
    expect((await driver.exec('app', ['sh', '-c', 'echo x > /etc/app/app.conf'], {})).exitCode).not.toBe(0);

    await driver.apply(unit('app', 2, configuredDeployment(`app-${env.suffix}`, 'v2')));
    await waitFor(
      async () => {
        const w = await observe(driver, 'app');
        return w?.phase === 'Ready' && w.generation === 2;
      },
      { what: 'app Ready on v2' },
    );
    expect(await read()).toBe('hello-v2 pw-v2\nversion=v2\ntok-v2\npw-v2');

    // Secrets were only needed while playing; none is left in podman's store.
    const owner = await env.owner();
    const secrets = (await env.podman.ok(['secret', 'ls', '--format', '{{.Name}}'], 'secret ls')).split('\n');
    expect(secrets.filter((s) => s.includes(owner))).toEqual([]);
    // The containerPort is not published on the host (no collisions between workloads).
    const ports = await env.podman.ok(
      [
        'ps',
        '--filter',
        `label=outpost.dev/workload=app`,
        '--filter',
        `label=outpost.dev/owner=${await env.owner()}`,
        '--format',
        '{{.Ports}}',
      ],
      'ps',
    );
    expect(ports).not.toContain('8080');
  });

  it('reports a missing image as Failed, naming the image and how to provide it', async () => {
    const image = `localhost/outpost-missing-${env.suffix}:1`;
    await driver.apply(
      unit('noimg', 1, [pod(`noimg-${env.suffix}`, { containers: [{ name: 'c', image, command: ['sleep', '1'] }] })]),
    );
    const o = await waitFor(
      async () => {
        const w = await observe(driver, 'noimg');
        return w?.phase === 'Failed' ? w : undefined;
      },
      { what: 'noimg Failed' },
    );
    expect(o.message).toContain(image);
    expect(o.message).toContain('podman load');
    // The half-made pod of the failed play is gone.
    expect(await env.podman.ok(['pod', 'ps', '-q', '--filter', `name=noimg-${env.suffix}`], 'pod ps')).toBe('');
  });

  it('keeps the running version when an update names an image that does not exist, and reports why', async () => {
    const sleeper = (image: string, version: string): Manifest[] => [
      pod(`keep-${env.suffix}`, {
        containers: [{ name: 'c', image, command: ['sh', '-c', `echo ${version} > /tmp/v; exec sleep 600`] }],
      }),
    ];
    await driver.apply(unit('keep', 1, sleeper(TEST_IMAGE, 'v1')));
    await waitFor(async () => (await observe(driver, 'keep'))?.phase === 'Ready', { what: 'keep Ready' });
    const before = await env.identity('keep');
    const missing = `localhost/outpost-typo-${env.suffix}:2`;
    const bad = unit('keep', 2, sleeper(missing, 'v2'));
    await driver.apply(bad);
    const o = (await observe(driver, 'keep'))!;
    expect(o.phase).toBe('Failed');
    expect(o.hash).toBe(bad.hash);
    expect(o.message).toContain(missing);
    expect(o.message).toContain('keeps running');
    // The old pod was never touched: same container, same start, still serving.
    expect(await env.identity('keep')).toBe(before);
    expect((await driver.exec('keep', ['cat', '/tmp/v'], {})).stdout).toBe('v1\n');

    const good = unit('keep', 3, sleeper(TEST_IMAGE, 'v3'));
    await driver.apply(good);
    await waitFor(
      async () => {
        const w = await observe(driver, 'keep');
        return w?.phase === 'Ready' && w.hash === good.hash;
      },
      { what: 'keep Ready on v3' },
    );
    expect((await driver.exec('keep', ['cat', '/tmp/v'], {})).stdout).toBe('v3\n');
    // One pod left, named NAME-OWNER-VERSION, with the manifest's name as its hostname.
    const names = (
      await env.podman.ok(
        ['pod', 'ps', '--filter', `label=outpost.dev/owner=${await env.owner()}`, '--format', '{{.Name}}'],
        'pod ps',
      )
    )
      .split('\n')
      .filter(Boolean);
    expect(names).toEqual([`keep-${env.suffix}-${(await env.owner()).slice(0, 8)}-${good.hash.slice(0, 8)}`]);
    expect((await driver.exec('keep', ['hostname'], {})).stdout.trim()).toBe(`keep-${env.suffix}`);
  });

  it('updates a workload holding a hostPort, and keeps the old pod when the new one cannot start', async () => {
    const port = await freePort();
    const web = (version: string, command?: string[]): Manifest[] => [
      pod(`hp-${env.suffix}`, {
        containers: [
          {
            name: 'web',
            image: TEST_IMAGE,
            command: command ?? [
              'sh',
              '-c',
              `mkdir -p /srv && echo ${version} > /srv/index.html && exec httpd -f -p 8080 -h /srv`,
            ],
            ports: [{ containerPort: 8080, hostPort: port }],
          },
        ],
      }),
    ];
    const get = async (): Promise<string> =>
      (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2_000) })).text();
    await driver.apply(unit('hp', 1, web('v1')));
    await waitFor(async () => (await get().catch(() => '')) === 'v1\n', { what: 'v1 served on the host port' });
    // The new pod cannot bind the port beside the old one: the old one is stopped for it.
    const v2 = unit('hp', 2, web('v2'));
    await driver.apply(v2);
    await waitFor(async () => (await get().catch(() => '')) === 'v2\n', { what: 'v2 served' });
    expect((await observe(driver, 'hp'))?.hash).toBe(v2.hash);
    // A version that cannot start at all: the old one is started again and keeps serving.
    const v3 = unit('hp', 3, web('v3', ['/no/such/server']));
    await driver.apply(v3);
    const o = (await observe(driver, 'hp'))!;
    expect(o.phase).toBe('Failed');
    expect(o.hash).toBe(v3.hash);
    expect(o.message).toContain('did not start');
    expect(o.message).toContain(`hash ${v2.hash}, keeps running`);
    await waitFor(async () => (await get().catch(() => '')) === 'v2\n', { what: 'v2 served again' });
  });

  it('runs the same manifests on two edges of one host (pod and claim names are per edge)', async () => {
    const other = await podmanTestEnv();
    const otherDriver = createPodmanDriver({ dataDir: other.dir });
    const same: Manifest[] = [
      {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: `data-${env.suffix}` },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      } as Manifest,
      pod(`twin-${env.suffix}`, {
        containers: [
          {
            name: 'c',
            image: TEST_IMAGE,
            command: ['sh', '-c', 'hostname > /data/host; exec sleep 600'],
            volumeMounts: [{ name: 'd', mountPath: '/data' }],
          },
        ],
        volumes: [{ name: 'd', persistentVolumeClaim: { claimName: `data-${env.suffix}` } }],
      }),
    ];
    try {
      await otherDriver.start();
      await driver.apply(unit('twin', 1, same));
      await otherDriver.apply(unit('twin', 1, same));
      await waitFor(
        async () =>
          (await observe(driver, 'twin'))?.phase === 'Ready' && (await observe(otherDriver, 'twin'))?.phase === 'Ready',
        { what: 'both Ready' },
      );
      expect(Object.keys((await observe(otherDriver, 'twin'))!.objects).sort()).toEqual([
        `Pod/twin-${env.suffix}`,
        `Pod/twin-${env.suffix}/c`,
      ]);
      // Each edge has its own claim volume; a new version keeps using it.
      const volumes = (await env.podman.ok(['volume', 'ls', '--format', '{{.Name}}'], 'volume ls')).split('\n');
      expect(volumes).toContain(`data-${env.suffix}-${(await env.owner()).slice(0, 8)}`);
      expect(volumes).toContain(`data-${env.suffix}-${(await other.owner()).slice(0, 8)}`);
      await driver.exec('twin', ['sh', '-c', 'echo kept > /data/mark'], {});
      const v2 = unit('twin', 2, [
        same[0],
        { ...same[1], metadata: { ...same[1].metadata, labels: { v: '2' } } } as Manifest,
      ]);
      await driver.apply(v2);
      await waitFor(
        async () => {
          const w = await observe(driver, 'twin');
          return w?.phase === 'Ready' && w.hash === v2.hash;
        },
        { what: 'twin v2 Ready' },
      );
      expect((await driver.exec('twin', ['cat', '/data/mark'], {})).stdout).toBe('kept\n');
      await driver.remove('twin');
      expect((await observe(otherDriver, 'twin'))?.phase).toBe('Ready');
    } finally {
      await otherDriver.remove('twin').catch(() => undefined);
      await driver.remove('twin').catch(() => undefined);
      await other.cleanup();
    }
  });

  it('waits for the readiness probe before reporting Ready', async () => {
    await driver.apply(
      unit('probe', 1, [
        pod(`probe-${env.suffix}`, {
          containers: [
            {
              name: 'c',
              image: TEST_IMAGE,
              command: ['sleep', '600'],
              readinessProbe: { exec: { command: ['test', '-f', '/tmp/ready'] }, periodSeconds: 1 },
            },
          ],
        }),
      ]),
    );
    const waiting = await waitFor(
      async () => {
        const w = await observe(driver, 'probe');
        return w && w.objects[`Pod/probe-${env.suffix}/c`]?.message?.includes('readiness probe failed') ? w : undefined;
      },
      { what: 'probe running but not ready' },
    );
    expect(waiting.phase).toBe('Progressing');
    await driver.exec('probe', ['touch', '/tmp/ready'], {});
    await waitFor(async () => (await observe(driver, 'probe'))?.phase === 'Ready', { what: 'probe Ready' });
  });

  it('never lists or removes the pods of another agent on the same host', async () => {
    const other = await podmanTestEnv();
    const otherDriver = createPodmanDriver({ dataDir: other.dir });
    try {
      await otherDriver.start();
      const sleeper = (name: string): Manifest[] => [
        pod(name, { containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '600'] }] }),
      ];
      await otherDriver.apply(unit('shared', 1, sleeper(`shared-${other.suffix}`)));
      await driver.apply(unit('shared', 1, sleeper(`shared-${env.suffix}`)));
      await waitFor(
        async () =>
          (await observe(driver, 'shared'))?.phase === 'Ready' &&
          (await observe(otherDriver, 'shared'))?.phase === 'Ready',
        { what: 'both Ready' },
      );
      expect(Object.keys((await observe(driver, 'shared'))!.objects).sort()).toEqual([
        `Pod/shared-${env.suffix}`,
        `Pod/shared-${env.suffix}/c`,
      ]);
      await driver.remove('shared');
      expect((await observe(otherDriver, 'shared'))?.phase).toBe('Ready');
    } finally {
      await otherDriver.remove('shared').catch(() => undefined);
      await other.cleanup();
    }
  });
});
