/**
 * The kubernetes driver against the REAL kube-controller-manager and kube-scheduler (test/kube/
 * harness.ts `controllers: true`), with test/kube/node-double.ts playing only the kubelet: what a
 * Deployment's status means to the driver is written here by the real deployment controller, pods
 * come from real ReplicaSets, StatefulSets and Jobs, and the real scheduler binds them. The other
 * driver tests keep the node double's imitation of the controllers, which is faster (the real
 * namespace controller waits 5 s before it deletes a namespace, and the driver's remove() waits
 * for it): docs/drivers.md says which file proves what.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startKubeApiServer, type KubeApiServer } from '../../../test/kube/harness.js';
import { NODE_NAME, startNodeDouble, type NodeDouble } from '../../../test/kube/node-double.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver, WorkloadUnit } from '../driver.js';
import { createKubernetesDriver } from './index.js';
import { LABEL_WORKLOAD } from './objects.js';

type M = Record<string, any>;

const TIMEOUT = 30_000;
let dir: string;
let kube: KubeApiServer;
let node: NodeDouble;
let driver: Driver;
let objects: KubernetesObjectApi;
const applied = new Set<string>();

function unit(name: string, manifests: M[], generation = 1): WorkloadUnit {
  const hash = createHash('sha256').update(JSON.stringify(manifests)).digest('hex').slice(0, 16);
  return { name, generation, hash, manifests: manifests as WorkloadUnit['manifests'] };
}

/** A container without a command: the kubelet double runs it as a process-less container that is Ready. */
const template = (app: string, container: M = {}): M => ({
  metadata: { labels: { app } },
  spec: { containers: [{ name: app, image: 'outpost-test:idle', ...container }] },
});

function deployment(name: string, container: M = {}, extra: M = {}): M {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: template(name, container), ...extra },
  };
}

async function apply(u: WorkloadUnit): Promise<void> {
  applied.add(u.name);
  await driver.apply(u);
}

const observe = async (name: string) => (await driver.list()).find((w) => w.name === name);
const list = async (apiVersion: string, kind: string, namespace: string): Promise<M[]> =>
  (await objects.list(apiVersion, kind, namespace)).items as M[];
const live = (items: M[]): M[] => items.filter((o) => !o.metadata.deletionTimestamp);
const isReady = (p: M): boolean =>
  (p.status?.conditions ?? []).some((c: M) => c.type === 'Ready' && c.status === 'True');

async function read(apiVersion: string, kind: string, namespace: string | undefined, name: string) {
  try {
    return (await objects.read({ apiVersion, kind, metadata: { name, namespace } })) as M;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'outpost-k8s-controllers-'));
  kube = await startKubeApiServer({ controllers: true });
  node = await startNodeDouble(kube); // kubelet only: the server runs the real controllers
  driver = createKubernetesDriver({ kubeconfig: kube.kubeconfig, dataDir: dir });
  await driver.start();
  const kc = new KubeConfig();
  kc.loadFromFile(kube.kubeconfig);
  objects = KubernetesObjectApi.makeApiClient(kc);
}, 180_000);

afterEach(async () => {
  for (const n of applied) await driver.remove(n).catch(() => undefined);
  applied.clear();
});

afterAll(async () => {
  await driver?.close();
  await node?.stop();
  await kube?.stop();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('kubernetes driver with the real controller-manager and scheduler', () => {
  it("a Deployment's ReplicaSet makes the pods, the scheduler binds them, and removal leaves nothing", async () => {
    await apply(unit('rs', [deployment('rs', {}, { replicas: 2 })]));
    await waitFor(async () => (await observe('rs'))?.phase === 'Ready', { what: 'rs Ready', timeout: TIMEOUT });
    const ns = 'outpost-rs';
    const [d] = await list('apps/v1', 'Deployment', ns);
    const sets = await list('apps/v1', 'ReplicaSet', ns);
    expect(sets).toHaveLength(1);
    expect(sets[0].metadata.ownerReferences[0]).toMatchObject({ kind: 'Deployment', uid: d.metadata.uid });
    const pods = live(await list('v1', 'Pod', ns));
    expect(pods).toHaveLength(2);
    for (const p of pods) {
      expect(p.metadata.ownerReferences[0]).toMatchObject({ kind: 'ReplicaSet', uid: sets[0].metadata.uid });
      expect(p.metadata.labels[LABEL_WORKLOAD]).toBe('rs');
      expect(p.spec.nodeName).toBe(NODE_NAME);
    }
    // The node double binds nothing here: the scheduler's events say who did.
    const scheduled = (await list('v1', 'Event', ns)).filter((e) => e.reason === 'Scheduled');
    expect(scheduled.map((e) => e.reportingComponent || e.source?.component)).toEqual([
      'default-scheduler',
      'default-scheduler',
    ]);
    applied.delete('rs');
    await driver.remove('rs');
    expect(await read('v1', 'Namespace', undefined, ns)).toBeUndefined();
    expect(await observe('rs')).toBeUndefined();
  });

  it('rolls a new version out through a second ReplicaSet (RollingUpdate) and is Ready on it', async () => {
    await apply(unit('roll', [deployment('roll', { env: [{ name: 'V', value: '1' }] }, { replicas: 2 })]));
    await waitFor(async () => (await observe('roll'))?.phase === 'Ready', { what: 'roll v1 Ready', timeout: TIMEOUT });
    const v2 = unit('roll', [deployment('roll', { env: [{ name: 'V', value: '2' }] }, { replicas: 2 })], 2);
    await apply(v2);
    const ns = 'outpost-roll';
    await waitFor(
      async () => {
        const o = await observe('roll');
        const pods = live(await list('v1', 'Pod', ns));
        return (
          o?.phase === 'Ready' &&
          o.hash === v2.hash &&
          pods.length === 2 &&
          pods.every((p) => isReady(p) && p.spec.containers[0].env[0].value === '2')
        );
      },
      { what: 'roll Ready on v2 with only v2 pods', timeout: TIMEOUT },
    );
    const sets = await list('apps/v1', 'ReplicaSet', ns);
    expect(sets.map((s) => Number(s.spec.replicas)).sort()).toEqual([0, 2]);
  });

  it('reports a Deployment whose image cannot be pulled Failed with the controller’s ProgressDeadlineExceeded', async () => {
    await apply(
      unit('nopull', [
        deployment('nopull', { image: 'fail:does-not-exist', command: ['sh'] }, { progressDeadlineSeconds: 2 }),
      ]),
    );
    const o = await waitFor(
      async () => {
        const w = await observe('nopull');
        return w?.phase === 'Failed' ? w : undefined;
      },
      { what: 'nopull Failed', timeout: TIMEOUT },
    );
    expect(o.message).toContain('ProgressDeadlineExceeded');
    expect(o.message).toMatch(/ErrImagePull|ImagePullBackOff/);
    expect(o.objects['Deployment/nopull'].ready).toBe(false);
  });

  it('applies a StatefulSet and a Job that the real controllers run; the Job runs to completion', async () => {
    const sts: M = {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db' },
      spec: { replicas: 2, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: template('db') },
    };
    const job: M = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'once' },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'once', image: 'outpost-test:node', command: ['node', '-e', "console.log('done')"] }],
          },
        },
      },
    };
    await apply(unit('batch', [sts, job]));
    const ns = 'outpost-batch';
    await waitFor(
      async () => {
        const ready = live(await list('v1', 'Pod', ns)).filter(isReady);
        return (
          ready
            .map((p) => p.metadata.name)
            .sort()
            .join(',') === 'db-0,db-1'
        );
      },
      { what: 'StatefulSet pods db-0 and db-1 Ready', timeout: TIMEOUT },
    );
    await waitFor(async () => Number((await read('batch/v1', 'Job', ns, 'once'))?.status?.succeeded ?? 0) === 1, {
      what: 'Job once succeeded',
      timeout: TIMEOUT,
    });
    const jobPods = (await list('v1', 'Pod', ns)).filter((p) => p.metadata.labels?.['job-name'] === 'once');
    expect(jobPods.map((p) => p.status.phase)).toEqual(['Succeeded']);
    // The driver applies and prunes these kinds, but its readiness reads only Deployments and Pods
    // (observe.ts): a StatefulSet or a Job counts as Ready once it exists.
    expect((await observe('batch'))?.objects).toMatchObject({
      'StatefulSet/db': { ready: true },
      'Job/once': { ready: true },
    });
  });
});
