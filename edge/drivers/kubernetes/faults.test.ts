/**
 * The kubernetes driver when the API server answers an apply with a server error (5xx), against
 * the REAL kube-apiserver behind a fault-injecting proxy (test/kube/fault-proxy.ts, a test double
 * of an overloaded or restarting server): the workload is Failed with the server's message, never
 * Ready with part of its objects, and the next applies create what the failed one did not.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../../core/resources.js';
import { edgeMailbox } from '../../../test/fixtures/edge-mailbox.js';
import { startFaultProxy, type FaultProxy } from '../../../test/kube/fault-proxy.js';
import { startKubeApiServer, type KubeApiServer } from '../../../test/kube/harness.js';
import { ApplyPacing } from '../../apply-pacing.js';
import type { Driver, WorkloadUnit } from '../driver.js';
import { createKubernetesDriver } from './index.js';

type M = Record<string, any>;

let dir: string;
let kube: KubeApiServer;
let proxy: FaultProxy;
let driver: Driver;
let objects: KubernetesObjectApi;

const configMap = (name: string, value: string): M => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name },
  data: { value },
});

function unit(name: string, manifests: M[], generation = 1): WorkloadUnit {
  const hash = createHash('sha256').update(JSON.stringify(manifests)).digest('hex').slice(0, 16);
  return { name, generation, hash, manifests: manifests as WorkloadUnit['manifests'] };
}

async function exists(namespace: string, name: string): Promise<boolean> {
  try {
    await objects.read({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } });
    return true;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return false;
    throw err;
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'outpost-k8s-faults-'));
  kube = await startKubeApiServer();
  proxy = await startFaultProxy(kube);
  driver = createKubernetesDriver({ kubeconfig: proxy.kubeconfig, dataDir: dir, deleteTimeoutMs: 5_000 });
  await driver.start();
  const kc = new KubeConfig();
  kc.loadFromFile(kube.kubeconfig);
  objects = KubernetesObjectApi.makeApiClient(kc);
}, 180_000);

afterAll(async () => {
  proxy?.clear();
  await driver?.remove('five').catch(() => undefined);
  await driver?.remove('recon').catch(() => undefined);
  await driver?.close();
  await proxy?.stop();
  await kube?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('kubernetes driver: an apply the API server answers with 5xx (real API server, fault proxy)', () => {
  it('is Failed with the server message, creates nothing after the failing object, and a later apply creates all', async () => {
    const u = unit('five', [configMap('first', '1'), configMap('second', '2'), configMap('third', '3')]);
    proxy.fail({ method: 'PATCH', path: /\/configmaps\/second$/, status: 500, message: 'etcdserver: leader changed' });
    await expect(driver.apply(u)).rejects.toThrow(/ConfigMap\/second: HTTP 500: etcdserver: leader changed/);
    expect(proxy.faulted.length).toBeGreaterThan(0);
    const o = (await driver.list()).find((w) => w.name === 'five');
    expect(o?.phase).toBe('Failed');
    expect(o?.message).toMatch(/ConfigMap\/second: HTTP 500: etcdserver: leader changed/);
    expect(await exists('outpost-five', 'first')).toBe(true);
    expect(await exists('outpost-five', 'second')).toBe(false);
    expect(await exists('outpost-five', 'third')).toBe(false);

    proxy.clear();
    await driver.apply(u);
    const after = (await driver.list()).find((w) => w.name === 'five');
    expect(after?.phase).toBe('Ready');
    expect(after?.message).toBeUndefined();
    expect(await exists('outpost-five', 'second')).toBe(true);
    expect(await exists('outpost-five', 'third')).toBe(true);
  });

  it('the reconciler reports it Failed with the message and applies it again until it succeeds', async () => {
    proxy.fail({ method: 'PATCH', path: /\/configmaps\/b$/, status: 503, times: 2, message: 'the server is busy' });
    const m = await edgeMailbox(
      await mkdtemp(join(dir, 'recon-')),
      driver,
      { name: 'recon', manifests: [configMap('a', '1'), configMap('b', '2')] as Manifest[] },
      // Each failed attempt waits a little longer; small here so the test needs no long waits.
      new ApplyPacing(100, 1_000),
    );
    try {
      await m.reconciler.trigger();
      expect(m.reported()?.phase).toBe('Failed');
      expect(m.reported()?.message).toMatch(/ConfigMap\/b: HTTP 503: the server is busy/);
      await m.untilReady('recon Ready once the API server answers again');
      expect(proxy.faulted.filter((f) => f.includes('/configmaps/b')).length).toBe(2);
      expect(await exists('outpost-recon', 'b')).toBe(true);
      expect(m.reported()?.message).toBeUndefined();
    } finally {
      m.store.close();
    }
  });
});
