/**
 * The kubernetes driver without cluster-admin: a real kube-apiserver (test/kube/harness.ts) with
 * RBAC, the ClusterRole from examples/kubernetes-driver-rbac.yaml bound to the agent's user and
 * nothing else. Everything the driver does on a workload must work with it (apply, list, logs,
 * exec, stop/start/restart, remove), and a kind the role does not cover fails the workload with
 * the server's Forbidden message instead of throwing. The same for interconnect imports (a Service
 * and Endpoints each, imports.ts, and the Nodes read for the address): they work with the role,
 * and a user that may only read is told which verb on which resource is missing and what to grant.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectlBinary, startKubeApiServer, type KubeApiServer } from '../../../test/kube/harness.js';
import { startNodeDouble, type NodeDouble } from '../../../test/kube/node-double.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver, WorkloadUnit } from '../driver.js';
import { createKubernetesDriver } from './index.js';

const run = promisify(execFile);
type M = Record<string, any>;

let dir: string;
let kube: KubeApiServer;
let node: NodeDouble;
let driver: Driver;

function unit(name: string, manifests: M[], generation = 1): WorkloadUnit {
  const hash = createHash('sha256').update(JSON.stringify(manifests)).digest('hex').slice(0, 16);
  return { name, generation, hash, manifests: manifests as WorkloadUnit['manifests'] };
}

const web: M[] = [
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            {
              name: 'app',
              image: 'busybox',
              command: ['sh', '-c', 'echo started; exec sleep 600'],
              env: [{ name: 'GREETING', value: 'hello' }],
            },
          ],
        },
      },
    },
  },
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'shared-rbac' }, data: { a: '1' } },
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, stringData: { k: 'v' } },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web' },
    spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
  },
];

const observe = async (name: string) => (await driver.list()).find((w) => w.name === name);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'outpost-k8s-rbac-'));
  kube = await startKubeApiServer({
    users: [
      { name: 'edge-agent', groups: ['outpost-edge'] },
      { name: 'reader', groups: ['outpost-read'] },
    ],
  });
  node = await startNodeDouble(kube);
  const admin = ['--kubeconfig', kube.kubeconfig];
  await run(kubectlBinary(), [
    ...admin,
    'apply',
    '-f',
    join(import.meta.dirname, '../../../examples/kubernetes-driver-rbac.yaml'),
  ]);
  await run(kubectlBinary(), [
    ...admin,
    'create',
    'clusterrolebinding',
    'outpost-edge',
    '--clusterrole=outpost-edge-driver',
    '--group=outpost-edge',
  ]);
  await run(kubectlBinary(), [
    ...admin,
    'create',
    'clusterrole',
    'outpost-read',
    '--verb=get,list',
    '--resource=namespaces,secrets,configmaps,services,endpoints,pods,deployments.apps,nodes',
  ]);
  await run(kubectlBinary(), [
    ...admin,
    'create',
    'clusterrolebinding',
    'outpost-read',
    '--clusterrole=outpost-read',
    '--group=outpost-read',
  ]);
  driver = createKubernetesDriver({ kubeconfig: kube.kubeconfigFor('edge-agent'), dataDir: dir });
  await driver.start();
}, 180_000);

afterAll(async () => {
  await driver?.close();
  await node?.stop();
  await kube?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('kubernetes driver with the ClusterRole of examples/kubernetes-driver-rbac.yaml', () => {
  it('the agent user has no other rights', async () => {
    const r = await run(kubectlBinary(), [
      '--kubeconfig',
      kube.kubeconfigFor('edge-agent'),
      'auth',
      'can-i',
      'create',
      'clusterroles',
    ]).catch((e: { stdout: string }) => e);
    expect(r.stdout.trim()).toBe('no');
  });

  it('applies, observes, reads logs, execs, stops, starts, restarts and removes a workload', async () => {
    await driver.apply(unit('web', web));
    await waitFor(async () => (await observe('web'))?.phase === 'Ready', { what: 'web Ready' });
    expect(Object.keys((await observe('web'))!.objects).sort()).toEqual([
      'ConfigMap/shared-rbac/cfg',
      'Deployment/web',
      'Secret/creds',
      'Service/web',
    ]);
    await waitFor(
      async () => {
        const lines: string[] = [];
        for await (const l of driver.logs('web', { tail: 10 })) lines.push(l);
        return lines.includes('started');
      },
      { what: 'the log line' },
    );
    const ex = await driver.exec('web', ['sh', '-c', 'echo $GREETING'], {});
    expect(ex).toMatchObject({ exitCode: 0, stdout: 'hello\n' });

    await driver.stopWorkload('web');
    await waitFor(async () => (await observe('web'))?.phase === 'Paused', { what: 'web Paused' });
    await driver.startWorkload('web');
    await waitFor(async () => (await observe('web'))?.phase === 'Ready', { what: 'web Ready after start' });
    await driver.restartWorkload('web');
    await waitFor(async () => (await observe('web'))?.phase === 'Ready', { what: 'web Ready after restart' });

    await driver.apply(unit('web', web.slice(0, 2), 2)); // prunes the Secret and the Service
    expect(Object.keys((await observe('web'))!.objects).sort()).toEqual([
      'ConfigMap/shared-rbac/cfg',
      'Deployment/web',
    ]);
    await driver.remove('web');
    expect(await observe('web')).toBeUndefined();
  });

  it('a kind the role does not cover fails the workload with the Forbidden message', async () => {
    await driver.apply(
      unit('sts', [
        {
          apiVersion: 'apps/v1',
          kind: 'StatefulSet',
          metadata: { name: 'db' },
          spec: {
            serviceName: 'db',
            selector: { matchLabels: { app: 'db' } },
            template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'db', image: 'busybox' }] } },
          },
        },
      ]),
    );
    const o = await observe('sts');
    expect(o?.phase).toBe('Failed');
    expect(o?.message).toMatch(/statefulsets.*is forbidden: User "edge-agent" cannot/);
    await driver.remove('sts');
  });

  it('publishes interconnect imports with the role: Services, Endpoints, the Nodes read', async () => {
    const owner = { edge: 'rbac-edge', project: 'default' };
    // The node double's InternalIP is 127.0.0.1: read, and refused as an address pods reach.
    await expect(driver.hostAddresses!()).rejects.toThrow(
      /none of the nodes' InternalIPs \(127\.0\.0\.1\) is a non-loopback address of this host; start the agent with --interconnect-address IP/,
    );
    const stock = { name: 'stock', port: 18080, address: '192.0.2.10' };
    expect(await driver.publishImports!([stock], owner)).toEqual({});
    const kubectl = (...args: string[]) =>
      run(kubectlBinary(), ['--kubeconfig', kube.kubeconfig, '-n', 'outpost', ...args]).then((r) => r.stdout);
    expect(await kubectl('get', 'endpoints', 'stock', '-o', 'jsonpath={.subsets[0].addresses[0].ip}')).toBe(
      '192.0.2.10',
    );
    await kubectl('patch', 'service', 'stock', '--type=merge', '-p', '{"spec":{"selector":{"app":"x"}}}');
    expect(await driver.publishImports!([stock], owner)).toEqual({});
    expect(await kubectl('get', 'service', 'stock', '-o', 'jsonpath={.spec.selector}')).toBe('');
    expect(await driver.publishImports!([], owner)).toEqual({});
    expect(await kubectl('get', 'services,endpoints', '-o', 'name')).toBe('');
  });

  it('a user that may only read is told which verb on which resource to grant', async () => {
    // The namespace there already (it may read it): the first write it may not do is the Service.
    await run(kubectlBinary(), ['--kubeconfig', kube.kubeconfig, 'create', 'namespace', 'outpost']).catch(
      (e: { stderr: string }) => expect(e.stderr).toMatch(/AlreadyExists/),
    );
    const reader = createKubernetesDriver({ kubeconfig: kube.kubeconfigFor('reader'), dataDir: join(dir, 'reader') });
    await reader.start();
    try {
      const problems = await reader.publishImports!([{ name: 'stock', port: 18080, address: '192.0.2.10' }], {
        edge: 'reader-edge',
        project: 'default',
      });
      expect(problems.stock).toMatch(
        /^no right to create services in namespace outpost \(the API server said: services is forbidden: User "reader" cannot create resource "services" in API group "" in the namespace "outpost"\): grant the identity of the kubeconfig get, list, create, update and delete on services and endpoints/,
      );
    } finally {
      await reader.close();
    }
  });
});
