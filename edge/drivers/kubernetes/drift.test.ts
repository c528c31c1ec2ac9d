/**
 * Drift correction of the kubernetes driver against a real kube-apiserver (test/kube/harness.ts):
 * objects the driver applied are changed with Debian's kubectl (`scale`, `edit`, `delete`), the
 * workload reports Modified with the field path, and the next apply puts them back; the edge's
 * reconciler does that apply on its next pass. Also: what the API server itself adds or
 * normalizes (defaults, quantities, a Secret's stringData, a Service's clusterIP) is not drift.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../../core/resources.js';
import { kubectlBinary, startKubeApiServer, type KubeApiServer } from '../../../test/kube/harness.js';
import { startNodeDouble, type NodeDouble } from '../../../test/kube/node-double.js';
import { edgeMailbox } from '../../../test/fixtures/edge-mailbox.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver, WorkloadObservation, WorkloadUnit } from '../driver.js';
import { ApplyPacing } from '../../apply-pacing.js';
import { createKubernetesDriver } from './index.js';

const run = promisify(execFile);
type M = Record<string, any>;

let dir: string;
let kube: KubeApiServer;
let node: NodeDouble;
let driver: Driver;

const manifests: M[] = [
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'drift' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'drift' } },
      template: {
        metadata: { labels: { app: 'drift' } },
        spec: {
          containers: [
            {
              name: 'app',
              image: 'busybox',
              command: ['sleep', '600'],
              env: [{ name: 'GREETING', value: 'hello' }],
              ports: [{ containerPort: 8080 }],
              resources: { requests: { cpu: '0.5', memory: '64Mi' } },
            },
          ],
        },
      },
    },
  },
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { mode: 'fast' } },
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, stringData: { password: 'hunter2' } },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'drift' },
    spec: { selector: { app: 'drift' }, ports: [{ port: 80, targetPort: 8080 }] },
  },
];
const unit: WorkloadUnit = {
  name: 'drift',
  generation: 1,
  hash: createHash('sha256').update(JSON.stringify(manifests)).digest('hex').slice(0, 16),
  manifests: manifests as WorkloadUnit['manifests'],
};

const observe = async (): Promise<WorkloadObservation | undefined> =>
  (await driver.list()).find((w) => w.name === 'drift');

async function kubectl(...args: string[]): Promise<string> {
  const ns = args[0].startsWith('-n') ? [] : ['-n', 'outpost-drift'];
  const r = await run(kubectlBinary(), ['--kubeconfig', kube.kubeconfig, ...ns, ...args], {
    timeout: 30_000,
    // `kubectl edit` runs the editor through a shell: this one changes the env value in place.
    env: { ...process.env, KUBE_EDITOR: `sed -i -e 's/value: hello/value: changed/'` },
  });
  return r.stdout;
}

async function settled(): Promise<WorkloadObservation> {
  return waitFor(
    async () => {
      const o = await observe();
      return o?.phase === 'Ready' && !o.modified ? o : undefined;
    },
    { what: 'drift Ready and unmodified' },
  );
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'outpost-k8s-drift-'));
  kube = await startKubeApiServer();
  node = await startNodeDouble(kube);
  driver = createKubernetesDriver({ kubeconfig: kube.kubeconfig, dataDir: dir });
  await driver.start();
  await driver.apply(unit);
}, 180_000);

afterAll(async () => {
  await driver?.remove('drift').catch(() => undefined);
  await driver?.close();
  await node?.stop();
  await kube?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('kubernetes driver drift correction (real API server)', () => {
  it('does not take what the API server defaults or normalizes for drift', async () => {
    const o = await settled();
    expect(o.modified).toBeUndefined();
    expect(Object.keys(o.objects).sort()).toEqual([
      'ConfigMap/settings',
      'Deployment/drift',
      'Secret/creds',
      'Service/drift',
    ]);
  });

  it('reports `kubectl scale` as Modified at spec.replicas, and the next apply scales back', async () => {
    await settled();
    await kubectl('scale', 'deployment/drift', '--replicas=3');
    const o = await waitFor(
      async () => {
        const w = await observe();
        return w?.phase === 'Modified' ? w : undefined;
      },
      { what: 'Modified after scale' },
    );
    expect(o.modified).toEqual(['Deployment/drift: spec.replicas']);
    expect(o.message).toContain('Deployment/drift: spec.replicas is 3, want 1 (changed by kubectl');
    // Still Modified on a second look: only an apply corrects it.
    expect((await observe())?.phase).toBe('Modified');
    await driver.apply(unit);
    expect((await kubectl('get', 'deployment/drift', '-o', 'jsonpath={.spec.replicas}')).trim()).toBe('1');
    expect((await settled()).modified).toBeUndefined();
  });

  it('reports `kubectl edit` of a container env value with its path, and puts it back', async () => {
    await settled();
    await kubectl('edit', 'deployment/drift');
    expect(
      await kubectl('get', 'deployment/drift', '-o', 'jsonpath={.spec.template.spec.containers[0].env[0].value}'),
    ).toBe('changed');
    const o = await waitFor(
      async () => {
        const w = await observe();
        return w?.phase === 'Modified' ? w : undefined;
      },
      { what: 'Modified after edit' },
    );
    expect(o.modified).toEqual(['Deployment/drift: spec.template.spec.containers[app].env[GREETING].value']);
    expect(o.message).toMatch(/is "changed", want "hello" \(changed by kubectl-edit\)/);
    await driver.apply(unit);
    expect(
      await kubectl('get', 'deployment/drift', '-o', 'jsonpath={.spec.template.spec.containers[0].env[0].value}'),
    ).toBe('hello');
    await settled();
  });

  it('reports a deleted object as Modified and recreates it on the next apply', async () => {
    await settled();
    await kubectl('delete', 'configmap/settings');
    const o = await waitFor(
      async () => {
        const w = await observe();
        return w?.phase === 'Modified' ? w : undefined;
      },
      { what: 'Modified after delete' },
    );
    expect(o.modified).toEqual(['ConfigMap/settings']);
    expect(o.objects['ConfigMap/settings'].message).toContain('deleted');
    await driver.apply(unit);
    expect(await kubectl('get', 'configmap/settings', '-o', 'jsonpath={.data.mode}')).toBe('fast');
    await settled();
  });

  it('the reconciler applies a Modified workload again on its next pass', async () => {
    const m = await edgeMailbox(dir, driver, { name: 'recon', manifests: [manifests[0]] as Manifest[] });
    try {
      await m.untilReady('recon Ready');
      await kubectl('-n', 'outpost-recon', 'scale', 'deployment/drift', '--replicas=2');
      await waitFor(async () => (await driver.list()).find((w) => w.name === 'recon')?.modified, {
        what: 'the driver to see the drift',
      });
      await m.reconciler.trigger();
      expect(
        (await kubectl('-n', 'outpost-recon', 'get', 'deployment/drift', '-o', 'jsonpath={.spec.replicas}')).trim(),
      ).toBe('1');
      await m.untilReady('recon Ready again');
      await driver.remove('recon');
    } finally {
      m.store.close();
    }
  });

  it('puts back drift that keeps coming back less and less often, and says so in the status', async () => {
    // Ten seconds, then twenty: long enough that the rounds below that must be held back are, on any machine.
    const m = await edgeMailbox(
      await mkdtemp(join(dir, 'fight-')),
      driver,
      { name: 'fight', manifests: [manifests[0]] as Manifest[] },
      new ApplyPacing(10_000, 120_000),
    );
    const replicas = async () =>
      (await kubectl('-n', 'outpost-fight', 'get', 'deployment/drift', '-o', 'jsonpath={.spec.replicas}')).trim();
    // Something on site scales the deployment; the reconciler's next pass sees it.
    const scaledOnSite = async () => {
      await kubectl('-n', 'outpost-fight', 'scale', 'deployment/drift', '--replicas=2');
      await waitFor(async () => (await driver.list()).find((w) => w.name === 'fight')?.modified, {
        what: 'the driver to see the drift',
      });
      await m.reconciler.trigger();
    };
    try {
      await m.untilReady('fight Ready');
      await scaledOnSite();
      const firstPutBack = Date.now();
      expect(await replicas()).toBe('1');
      expect(m.reported()?.message ?? '').not.toMatch(/changed on site/);
      // Changed again at once: looked at again a period after the put-back, not sooner.
      await scaledOnSite();
      expect(await replicas()).toBe('2');
      expect(m.reported()).toMatchObject({
        phase: 'Modified',
        message: 'changed on site: Deployment/drift: spec.replicas; put back; looking again in 10 s',
      });
      await new Promise((r) => setTimeout(r, Math.max(0, firstPutBack + 10_100 - Date.now())));
      await m.reconciler.trigger();
      expect(await replicas()).toBe('1');
      const why =
        'changed on site again after it was put back: Deployment/drift: spec.replicas; something on site keeps changing it (attempt 2; the next in 20 s, twice as long each time up to 2 min)';
      expect(m.reported()?.message).toBe(why);
      // And again: left as it is for twenty seconds, and the status says why.
      await scaledOnSite();
      expect(await replicas()).toBe('2');
      expect(m.reported()).toMatchObject({ phase: 'Modified', message: why });
      await driver.remove('fight');
    } finally {
      m.store.close();
    }
  });
});
