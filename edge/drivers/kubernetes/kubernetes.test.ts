/**
 * Tests of the kubernetes driver: the shared driver acceptance suite plus kubernetes-specific
 * cases, against a REAL kube-apiserver and etcd (test/kube/harness.ts, the release pinned in
 * test/kube/go.mod) started for this file on loopback. No kubelet or controller-manager runs:
 * test/kube/node-double.ts writes through the API what they would (pod and deployment status,
 * pods from templates, namespace finalization) and runs containers that have a command as host
 * processes, so HTTP, logs, exec and crashes are real processes (docs/drivers.md says what is
 * simulated). controllers.test.ts runs the driver with the real controller-manager and scheduler.
 *
 * Against a real cluster (k3s) instead: OUTPOST_TEST_KUBECONFIG=/etc/rancher/k3s/k3s.yaml npx
 * vitest run edge/drivers/kubernetes. The workloads then use the image in
 * OUTPOST_TEST_NODE_IMAGE (default node:20-alpine), the test process must reach pod IPs (run it
 * on a cluster node), and the cases that need the node double are skipped.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { kubectlBinary, startKubeApiServer, type KubeApiServer } from '../../../test/kube/harness.js';
import { startNodeDouble, type NodeDouble } from '../../../test/kube/node-double.js';
import { driverSuite, freePort } from '../../../test/fixtures/driver-suite.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver, WorkloadUnit } from '../driver.js';
import { createKubernetesDriver } from './index.js';
import { LABEL_WORKLOAD } from './objects.js';

const REAL = process.env.OUTPOST_TEST_KUBECONFIG;
const IMAGE = process.env.OUTPOST_TEST_NODE_IMAGE ?? 'node:20-alpine';
const READY_MS = REAL ? 180_000 : 30_000;

type M = Record<string, any>;

function unit(name: string, manifests: M[], generation = 1): WorkloadUnit {
  const hash = createHash('sha256').update(JSON.stringify(manifests)).digest('hex').slice(0, 16);
  return { name, generation, hash, manifests: manifests as WorkloadUnit['manifests'] };
}

/** The node double simulates a container without a command (no process); a real node needs something to run. */
const IDLE: M = REAL ? { command: ['node', '-e', 'setInterval(() => {}, 1000)'] } : {};

function deployment(name: string, container: M, extra: M = {}): M {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image: IMAGE, ...IDLE, ...container }] },
      },
      ...extra,
    },
  };
}

const node = (script: string, env: M[] = []): M => ({ command: ['node', '-e', script], env });

/** One API server and node double for the whole file (started on first use); each test gets its own data dir. */
let cluster: Promise<{ kube: KubeApiServer; node: NodeDouble }> | undefined;
const startCluster = () =>
  (cluster ??= startKubeApiServer().then(async (kube) => ({ kube, node: await startNodeDouble(kube) })));
beforeAll(async () => {
  if (!REAL) await startCluster();
}, 180_000);
afterAll(async () => {
  const c = await cluster?.catch(() => undefined);
  await c?.node.stop();
  await c?.kube.stop();
}, 60_000);

interface Env {
  node?: NodeDouble;
  kubeconfig: string;
  dir: string;
  objects: KubernetesObjectApi;
  cleanup: () => Promise<void>;
}

async function environment(): Promise<Env> {
  const dir = await mkdtemp(join(tmpdir(), 'outpost-k8s-'));
  let kubeconfig = REAL;
  let nodeDouble: NodeDouble | undefined;
  if (!kubeconfig) {
    const c = await startCluster();
    kubeconfig = c.kube.kubeconfig;
    nodeDouble = c.node;
  }
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  return {
    node: nodeDouble,
    kubeconfig,
    dir,
    objects,
    cleanup: async () => {
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function podsOf(env: Env, workload: string): Promise<M[]> {
  const list = await env.objects.list(
    'v1',
    'Pod',
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    `${LABEL_WORKLOAD}=${workload}`,
  );
  return (list.items as M[]).filter((p) => !p.metadata.deletionTimestamp);
}

async function read(
  env: Env,
  apiVersion: string,
  kind: string,
  namespace: string | undefined,
  name: string,
): Promise<M | undefined> {
  try {
    return (await env.objects.read({ apiVersion, kind, metadata: { name, namespace } })) as M;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

driverSuite('kubernetes', async () => {
  const env = await environment();
  const make = (): Driver => createKubernetesDriver({ kubeconfig: env.kubeconfig, dataDir: env.dir });
  const foreignNs = `foreign-${Date.now().toString(36)}`;
  return {
    driver: make(),
    restart: async () => make(),
    workload: (name, { port, version }) =>
      unit(name, [
        deployment(name, {
          ...node(
            "require('http').createServer((q,s)=>s.end('version '+process.env.OUTPOST_TEST_VERSION)).listen(+process.env.PORT)",
            [
              { name: 'OUTPOST_TEST_VERSION', value: version },
              { name: 'PORT', value: String(port) },
            ],
          ),
          ports: [{ containerPort: port }],
          readinessProbe: { tcpSocket: { port }, periodSeconds: 1 },
        }),
      ]),
    crashing: (name) => unit(name, [deployment(name, node('setTimeout(() => process.exit(1), 300)'))]),
    invalid: (name) => unit(name, [{ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name } }]),
    ticker: (name) =>
      unit(name, [deployment(name, node("let n = 0; setInterval(() => console.log('tick ' + n++), 200)"))]),
    identity: async (name) =>
      (await podsOf(env, name))
        .map(
          (p) =>
            `${p.metadata.uid}:${(p.status?.containerStatuses ?? []).map((c: M) => `${c.restartCount}@${c.state?.running?.startedAt ?? ''}`).join(',')}`,
        )
        .sort()
        .join(' '),
    foreign: async (name) => {
      await env.objects.patch(
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: foreignNs } },
        undefined,
        undefined,
        'kubectl',
        true,
        PatchStrategy.ServerSideApply,
      );
      await env.objects.patch(
        {
          ...deployment(name, node('setInterval(() => {}, 1000)')),
          metadata: { name, namespace: foreignNs, labels: { 'outpost.dev/hash': 'x' } },
        } as never,
        undefined,
        undefined,
        'kubectl',
        true,
        PatchStrategy.ServerSideApply,
      );
    },
    capabilities: { exec: true },
    timeouts: { ready: READY_MS },
    cleanup: async () => {
      await env.objects
        .delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: foreignNs } })
        .catch(() => undefined);
      await env.cleanup();
    },
  };
});

describe('kubernetes driver specifics', () => {
  let env: Env;
  let driver: Driver;
  const applied: string[] = [];
  const apply = async (u: WorkloadUnit): Promise<void> => {
    applied.push(u.name);
    await driver.apply(u);
  };
  const observe = async (name: string) => (await driver.list()).find((w) => w.name === name);

  beforeEach(async () => {
    env = await environment();
    driver = createKubernetesDriver({ kubeconfig: env.kubeconfig, dataDir: env.dir });
    await driver.start();
  });

  afterEach(async () => {
    try {
      for (const n of applied.splice(0)) await driver.remove(n).catch(() => undefined);
      await driver.close();
    } finally {
      await env.cleanup();
    }
  });

  it('puts a workload in its own namespace, creates named namespaces, and removes only its own', async () => {
    const shared = `shared-${Date.now().toString(36)}`;
    await apply(
      unit('nsy', [
        deployment('nsy', {}),
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: shared }, data: { a: '1' } },
      ]),
    );
    const own = await read(env, 'v1', 'Namespace', undefined, 'outpost-nsy');
    expect(own?.metadata.labels?.[LABEL_WORKLOAD]).toBe('nsy');
    expect(
      (await read(env, 'v1', 'Namespace', undefined, shared))?.metadata.labels?.['app.kubernetes.io/managed-by'],
    ).toBe('outpost');
    expect(await read(env, 'apps/v1', 'Deployment', 'outpost-nsy', 'nsy')).toBeDefined();
    const o = await waitFor(async () => ((await observe('nsy'))?.phase === 'Ready' ? observe('nsy') : undefined), {
      what: 'nsy Ready',
      timeout: READY_MS,
    });
    expect(Object.keys(o!.objects).sort()).toEqual([`ConfigMap/${shared}/settings`, 'Deployment/nsy']);
    await driver.remove('nsy');
    expect(await read(env, 'v1', 'Namespace', undefined, 'outpost-nsy')).toBeUndefined();
    expect(await read(env, 'v1', 'ConfigMap', shared, 'settings')).toBeUndefined();
    expect(await read(env, 'v1', 'Namespace', undefined, shared)).toBeDefined();
    await env.objects.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: shared } });
  });

  it('applies server-side as field manager "outpost" with ownership labels, and writes nothing for the same hash', async () => {
    const u = unit('owned', [deployment('owned', {})], 4);
    await apply(u);
    // Settled first: the controller's status writes also move the resourceVersion.
    await waitFor(async () => (await observe('owned'))?.phase === 'Ready', { what: 'owned Ready', timeout: READY_MS });
    const d = (await read(env, 'apps/v1', 'Deployment', 'outpost-owned', 'owned'))!;
    const managers = (d.metadata.managedFields ?? []).map((f: M) => `${f.manager}/${f.operation}`);
    expect(managers).toContain('outpost/Apply');
    expect(d.metadata.labels).toMatchObject({
      'outpost.dev/workload': 'owned',
      'outpost.dev/hash': u.hash,
      'outpost.dev/generation': '4',
    });
    expect(d.spec.template.metadata.labels).toMatchObject({ 'outpost.dev/workload': 'owned', app: 'owned' });
    await driver.apply(u);
    await driver.apply({ ...u, generation: 5 });
    const again = (await read(env, 'apps/v1', 'Deployment', 'outpost-owned', 'owned'))!;
    expect(again.metadata.resourceVersion).toBe(d.metadata.resourceVersion);
    expect((await observe('owned'))?.generation).toBe(5);
  });

  it('prunes an object that left the unit and keeps the others', async () => {
    const cm = (name: string): M => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: name } });
    await apply(unit('prune', [cm('keep'), cm('drop')]));
    expect(await read(env, 'v1', 'ConfigMap', 'outpost-prune', 'drop')).toBeDefined();
    const v2 = unit('prune', [cm('keep')], 2);
    await driver.apply(v2);
    expect(await read(env, 'v1', 'ConfigMap', 'outpost-prune', 'drop')).toBeUndefined();
    const keep = await read(env, 'v1', 'ConfigMap', 'outpost-prune', 'keep');
    expect(keep?.metadata.labels?.['outpost.dev/hash']).toBe(v2.hash);
    const o = await observe('prune');
    expect(Object.keys(o!.objects)).toEqual(['ConfigMap/keep']);
    expect(o).toMatchObject({ phase: 'Ready', hash: v2.hash, generation: 2 });
  });

  it('follows the Deployment status: Progressing while the pod is not ready, Ready once its probe passes, and back', async (ctx) => {
    if (REAL) ctx.skip(); // the probe target is a port in this test process, which a real pod cannot reach
    const port = await freePort();
    await apply(
      unit('probe', [
        deployment('probe', {
          ports: [{ containerPort: port }],
          readinessProbe: { tcpSocket: { port }, periodSeconds: 1 },
        }),
      ]),
    );
    const waiting = await waitFor(
      async () => {
        const o = await observe('probe');
        const pods = await podsOf(env, 'probe');
        return pods.some((p) => p.status?.phase === 'Running') && o?.phase === 'Progressing' ? o : undefined;
      },
      { what: 'a pod that is running but not ready', timeout: READY_MS },
    );
    expect(waiting.objects['Deployment/probe']).toMatchObject({
      ready: false,
      message: expect.stringContaining('0/1'),
    });
    const srv: Server = createServer((s) => s.destroy());
    await new Promise<void>((r) => srv.listen(port, '127.0.0.1', () => r()));
    try {
      await waitFor(async () => (await observe('probe'))?.phase === 'Ready', {
        what: 'probe Ready',
        timeout: READY_MS,
      });
    } finally {
      await new Promise((r) => srv.close(r));
    }
    await waitFor(async () => (await observe('probe'))?.phase === 'Progressing', {
      what: 'probe back to Progressing',
      timeout: READY_MS,
    });
  });

  it('marks a unit the API server rejects as Failed with the server message', async () => {
    const bad = deployment('mismatch', {});
    bad.spec.selector.matchLabels = { app: 'other' };
    await apply(unit('mismatch', [bad]));
    const o = await observe('mismatch');
    expect(o?.phase).toBe('Failed');
    expect(o?.message).toMatch(/selector.*does not match template/);
  });

  it('replaces a Pod whose immutable spec changed', async () => {
    const pod = (v: string): M => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'solo' },
      spec: {
        containers: [{ name: 'app', image: IMAGE, ...node('setInterval(() => {}, 1000)', [{ name: 'V', value: v }]) }],
      },
    });
    await apply(unit('solo', [pod('1')]));
    const first = (await read(env, 'v1', 'Pod', 'outpost-solo', 'solo'))!.metadata.uid;
    await driver.apply(unit('solo', [pod('2')], 2));
    const second = (await read(env, 'v1', 'Pod', 'outpost-solo', 'solo'))!;
    expect(second.metadata.uid).not.toBe(first);
    expect(second.spec.containers[0].env).toEqual([{ name: 'V', value: '2' }]);
    await waitFor(
      async () => {
        const o = await observe('solo');
        return o?.phase === 'Ready' && o.generation === 2;
      },
      { what: 'solo Ready on generation 2', timeout: READY_MS },
    );
  });

  it('reads canned log lines through pods/log', async (ctx) => {
    if (!env.node) return ctx.skip();
    await apply(unit('canned', [deployment('canned', {})]));
    await waitFor(async () => (await observe('canned'))?.phase === 'Ready', {
      what: 'canned Ready',
      timeout: READY_MS,
    });
    const pod = (await podsOf(env, 'canned'))[0];
    for (const l of ['first', 'second', 'third']) env.node.appendLog(pod.metadata.namespace, pod.metadata.name, l);
    const lines: string[] = [];
    for await (const l of driver.logs('canned', { tail: 2 })) lines.push(l);
    expect(lines).toEqual(['second', 'third']);

    // --since goes as sinceSeconds (whole seconds back from now), --timestamps as timestamps.
    const oldAt = Date.now();
    await waitFor(async () => Date.now() > oldAt + 1_500, { what: 'the clock to move 1.5 s past the old lines' });
    env.node.appendLog(pod.metadata.namespace, pod.metadata.name, 'fourth');
    const recent: string[] = [];
    for await (const l of driver.logs('canned', { sinceMs: Date.now() - 100, timestamps: true })) recent.push(l);
    expect(recent).toHaveLength(1);
    const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z) fourth$/.exec(recent[0]);
    expect(m, recent[0]).not.toBeNull();
    expect(Date.parse(m![1])).toBeGreaterThan(oldAt);
  });

  it('is usable by kubectl: get deployments -A shows what the driver applied', async () => {
    await apply(unit('kubectl', [deployment('kubectl', {})]));
    await waitFor(async () => (await observe('kubectl'))?.phase === 'Ready', {
      what: 'kubectl Ready',
      timeout: READY_MS,
    });
    const out = await new Promise<string>((resolve, reject) =>
      execFile(kubectlBinary(), ['--kubeconfig', env.kubeconfig, 'get', 'deployments', '-A'], (err, stdout, stderr) =>
        err ? reject(new Error(stderr)) : resolve(stdout),
      ),
    );
    expect(out).toMatch(/outpost-kubectl\s+kubectl\s+1\/1\s+1\s+1\s/);
  });
});
