/**
 * @module Test helpers for the podman driver: the busybox workloads the acceptance suite needs and
 * cleanup of everything a test run made. Pod names carry a random suffix and every driver gets its
 * own data directory (hence its own owner label), so concurrent runs on one host never collide.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { Manifest } from '../../../core/resources.js';
import type { Driver, WorkloadUnit } from '../driver.js';
import { createPodman, type Podman } from './cli.js';
import { createPodmanDriver, type PodmanDriverOptions } from './index.js';

export const TEST_IMAGE = process.env.OUTPOST_TEST_IMAGE ?? 'localhost/outpost-busybox:latest';

/** `OUTPOST_SKIP_PODMAN=1` skips podman tests on machines without podman; CI never sets it. */
export const SKIP_PODMAN = process.env.OUTPOST_SKIP_PODMAN === '1';
if (SKIP_PODMAN) console.warn('\n*** OUTPOST_SKIP_PODMAN=1: SKIPPING ALL PODMAN DRIVER TESTS ***\n');

/**
 * Drops one name a test gave an image, never the image itself when it has others: a pull by digest
 * (`HOST/REPO@sha256:...`) names the image it resolves to, often the shared test image, and
 * `podman rmi` of a digest reference removes that whole image; `podman untag` removes the name.
 */
export async function dropImageName(podman: Podman, ref: string): Promise<void> {
  await podman.run(ref.includes('@') ? ['untag', ref, ref] : ['rmi', ref]);
}

/**
 * An image no other test has: the test image plus a file unique to this call (built offline with
 * `podman build`). Pulling it by digest really pulls: a digest already on the host is not pulled
 * again (podman finds the image by its digest under any name). Remove it with `podman rmi -f ID`.
 */
export async function buildUniqueImage(podman: Podman, dir: string, ref: string): Promise<{ ref: string; id: string }> {
  const ctx = await mkdtemp(join(dir, 'image-'));
  await writeFile(join(ctx, 'unique.txt'), `${ref} ${randomBytes(8).toString('hex')}\n`);
  await writeFile(join(ctx, 'Containerfile'), `FROM ${TEST_IMAGE}\nCOPY unique.txt /unique.txt\n`);
  await podman.ok(['build', '-q', '-t', ref, ctx], `podman build ${ref}`);
  await rm(ctx, { recursive: true, force: true });
  const id = (await podman.ok(['image', 'inspect', ref, '--format', '{{.Id}}'], 'podman image inspect')).trim();
  return { ref, id };
}

export function unit(name: string, generation: number, manifests: Manifest[]): WorkloadUnit {
  const hash = createHash('sha256').update(JSON.stringify(manifests)).digest('hex').slice(0, 16);
  return { name, generation, hash, manifests };
}

/**
 * A Pod of the tests. Its containers share the pod's process namespace, so podman's catatonit is
 * PID 1 and a test's `sleep` or `httpd` is not: the kernel ignores SIGTERM for a PID 1 that set no
 * handler, and every stop or removal then waited out the grace period before SIGKILL (1-2 s each,
 * most of the podman tests' time). Shared, the process ends on SIGTERM, as a real workload does.
 */
export function pod(name: string, spec: Record<string, unknown>): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { terminationGracePeriodSeconds: 1, shareProcessNamespace: true, ...spec },
  } as Manifest;
}

/**
 * A Deployment `name` of two replicas with a ConfigMap `cfg` and a Secret `creds` (`data` and
 * `stringData`), each given to its container both as env and as files: GREETING=hello-VERSION and
 * PASSWORD=pw-VERSION in the env, /etc/app/app.conf (`version=VERSION`), /run/creds/token
 * (`tok-VERSION`) and /run/creds/PASSWORD; and a containerPort 8080, which podman must not publish.
 */
export function configuredDeployment(name: string, version: string): Manifest[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cfg' },
      data: { GREETING: `hello-${version}`, 'app.conf': `version=${version}\n` },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds' },
      data: { PASSWORD: Buffer.from(`pw-${version}`).toString('base64') },
      stringData: { token: `tok-${version}` },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'app' } },
        template: {
          metadata: { labels: { app: 'app' } },
          spec: {
            terminationGracePeriodSeconds: 1,
            shareProcessNamespace: true,
            containers: [
              {
                name: 'main',
                image: TEST_IMAGE,
                command: ['sleep', '600'],
                envFrom: [{ configMapRef: { name: 'cfg' } }],
                env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'PASSWORD' } } }],
                ports: [{ containerPort: 8080 }],
                volumeMounts: [
                  { name: 'conf', mountPath: '/etc/app' },
                  { name: 'secret', mountPath: '/run/creds' },
                ],
              },
            ],
            volumes: [
              { name: 'conf', configMap: { name: 'cfg', items: [{ key: 'app.conf', path: 'app.conf' }] } },
              { name: 'secret', secret: { secretName: 'creds' } },
            ],
          },
        },
      },
    } as Manifest,
  ];
}

export interface PodmanTestEnv {
  dir: string;
  suffix: string;
  podman: Podman;
  owner: () => Promise<string>;
  /** Container ids and start times of a workload's containers. */
  identity: (workload: string) => Promise<string>;
  /** Plays a pod that looks like ours (same workload label) but has no owner label. */
  foreign: (workload: string) => Promise<void>;
  cleanup: () => Promise<void>;
}

/**
 * Kills and removes pods: `pod stop -t 0` first, since podman 4.3's `pod rm -f` of a running pod
 * took 3-5 s where stop then rm takes well under one (as the driver's removePods does).
 */
export async function removeNow(podman: Podman, pods: string[]): Promise<void> {
  await podman.run(['pod', 'stop', '-t', '0', ...pods]);
  await podman.run(['pod', 'rm', '-f', '-t', '0', ...pods]);
}

export async function podmanTestEnv(): Promise<PodmanTestEnv> {
  const dir = await mkdtemp(join(tmpdir(), 'outpost-podman-'));
  const suffix = randomBytes(3).toString('hex');
  const podman = createPodman();
  const foreignPods: string[] = [];
  const owner = async (): Promise<string> =>
    (await readFile(join(dir, 'podman', 'owner'), 'utf8').catch(() => '')).trim();

  return {
    dir,
    suffix,
    podman,
    owner,
    async identity(workload) {
      const o = await owner();
      const ids = (
        await podman.ok(
          [
            'ps',
            '-a',
            '-q',
            '--no-trunc',
            '--filter',
            `label=outpost.dev/owner=${o}`,
            '--filter',
            `label=outpost.dev/workload=${workload}`,
          ],
          'ps',
        )
      )
        .split('\n')
        .filter(Boolean);
      if (ids.length === 0) return '';
      const out = await podman.ok(
        ['container', 'inspect', '--format', '{{.Id}}@{{.State.StartedAt}}', ...ids],
        'inspect',
      );
      return out.split('\n').filter(Boolean).sort().join(' ');
    },
    async foreign(workload) {
      const name = `${workload}-foreign-${suffix}`;
      const file = join(dir, `${name}.yaml`);
      await writeFile(
        file,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name, labels: { 'outpost.dev/workload': workload } },
          spec: {
            terminationGracePeriodSeconds: 0,
            containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '600'] }],
          },
        }),
      );
      foreignPods.push(name);
      await podman.ok(['kube', 'play', file], 'playing a foreign pod');
    },
    async cleanup() {
      const o = await owner();
      if (o) {
        const ids = (await podman.run(['pod', 'ps', '-q', '--filter', `label=outpost.dev/owner=${o}`])).stdout
          .split('\n')
          .filter(Boolean);
        if (ids.length) await removeNow(podman, ids);
      }
      if (foreignPods.length) await removeNow(podman, foreignPods);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * For a describe block: before each test a fresh environment and a started driver, handed to
 * `ready` (`options` gives the driver's options, after preparing what it needs in the environment);
 * after each, the driver's workloads removed, the driver closed and the environment cleaned up.
 */
export function eachPodmanDriver(
  ready: (env: PodmanTestEnv, driver: Driver) => void,
  options: (env: PodmanTestEnv) => Promise<PodmanDriverOptions> | PodmanDriverOptions = (env) => ({ dataDir: env.dir }),
): void {
  let env: PodmanTestEnv;
  let driver: Driver;
  beforeEach(async () => {
    env = await podmanTestEnv();
    driver = createPodmanDriver(await options(env));
    await driver.start();
    ready(env, driver);
  });
  afterEach(async () => {
    try {
      for (const w of await driver.list().catch(() => [])) await driver.remove(w.name).catch(() => undefined);
      await driver.close();
    } finally {
      await env.cleanup();
    }
  });
}
