/**
 * Kinds beyond the base ones, against a real kube-apiserver (test/kube/harness.ts): a unit that
 * brings a CustomResourceDefinition and custom resources of it in one apply (the API server serves
 * a new kind only once the CRD is Established), pruning and removal of those, and a unit that
 * declares its own Namespace.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startKubeApiServer, type KubeApiServer } from '../../../test/kube/harness.js';
import { startNodeDouble, type NodeDouble } from '../../../test/kube/node-double.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver, WorkloadUnit } from '../driver.js';
import { createKubernetesDriver } from './index.js';

type M = Record<string, any>;

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

const crd: M = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.outpost-test.example.com' },
  spec: {
    group: 'outpost-test.example.com',
    names: { kind: 'Gadget', plural: 'gadgets', singular: 'gadget', listKind: 'GadgetList' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } },
          },
        },
      },
    ],
  },
};
const gadget = (name: string, size: number): M => ({
  apiVersion: 'outpost-test.example.com/v1',
  kind: 'Gadget',
  metadata: { name },
  spec: { size },
});

async function read(
  apiVersion: string,
  kind: string,
  namespace: string | undefined,
  name: string,
): Promise<M | undefined> {
  try {
    return (await objects.read({ apiVersion, kind, metadata: { name, namespace } })) as M;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

const observe = async (name: string) => (await driver.list()).find((w) => w.name === name);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'outpost-k8s-kinds-'));
  kube = await startKubeApiServer();
  node = await startNodeDouble(kube);
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
});

describe('kubernetes driver: CRDs, custom resources and namespaces (real API server)', () => {
  it('applies a CRD and its custom resources in one unit, prunes a resource that left, and removes all', async () => {
    applied.add('gadgets');
    await driver.apply(unit('gadgets', [gadget('small', 1), crd, gadget('big', 9)]));
    const o = await observe('gadgets');
    expect(o?.message).toBeUndefined();
    expect(o?.phase).toBe('Ready');
    expect(Object.keys(o!.objects).sort()).toEqual([
      'CustomResourceDefinition/gadgets.outpost-test.example.com',
      'Gadget/big',
      'Gadget/small',
    ]);
    expect((await read('outpost-test.example.com/v1', 'Gadget', 'outpost-gadgets', 'big'))?.spec.size).toBe(9);

    await driver.apply(unit('gadgets', [crd, gadget('big', 10)], 2));
    expect(await read('outpost-test.example.com/v1', 'Gadget', 'outpost-gadgets', 'small')).toBeUndefined();
    expect((await read('outpost-test.example.com/v1', 'Gadget', 'outpost-gadgets', 'big'))?.spec.size).toBe(10);
    expect(Object.keys((await observe('gadgets'))!.objects).sort()).toEqual([
      'CustomResourceDefinition/gadgets.outpost-test.example.com',
      'Gadget/big',
    ]);

    await driver.remove('gadgets');
    expect(await observe('gadgets')).toBeUndefined();
    await waitFor(
      async () => !(await read('apiextensions.k8s.io/v1', 'CustomResourceDefinition', undefined, crd.metadata.name)),
      { what: 'the CRD to be gone' },
    );
  });

  it('a unit that declares its Namespace puts its objects there and removes it', async () => {
    applied.add('own-ns');
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } };
    const cm = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cfg', namespace: 'team-a' },
      data: { a: '1' },
    };
    await driver.apply(unit('own-ns', [cm, ns]));
    const o = await observe('own-ns');
    expect(o).toMatchObject({ phase: 'Ready' });
    expect(Object.keys(o!.objects).sort()).toEqual(['ConfigMap/team-a/cfg', 'Namespace/team-a']);
    expect((await read('v1', 'ConfigMap', 'team-a', 'cfg'))?.data).toEqual({ a: '1' });
    await driver.remove('own-ns');
    expect(await read('v1', 'Namespace', undefined, 'team-a')).toBeUndefined();
  });
});
