/**
 * core/driver-kinds.ts (what the hub warns about at apply) says the same as the drivers' own
 * planners (what an edge refuses): for every kind Kubernetes checks, the process and podman
 * planners refuse exactly the kinds the table says they cannot run.
 */
import { describe, expect, it } from 'vitest';
import { kindsNotRunBy } from '../core/driver-kinds.js';
import type { Manifest } from '../core/resources.js';
import { planUnit } from '../edge/drivers/podman/plan.js';
import { planWorkload } from '../edge/drivers/process/plan.js';

const POD: Manifest = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p' },
  spec: { containers: [{ name: 'main', image: 'busybox', command: ['/bin/true'] }] },
} as Manifest;

/** A minimal manifest of each kind, valid enough for the planners to reach their kind check. */
const OTHERS: Manifest[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: 'b' } },
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { a: 'Yg==' } },
  { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }] } },
  { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'pvc' }, spec: {} },
  { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'i' }, spec: {} },
  { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, spec: { template: { spec: POD.spec } } },
  { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'st' }, spec: { template: { spec: POD.spec } } },
  { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'ds' }, spec: { template: { spec: POD.spec } } },
  { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa' } },
] as Manifest[];

const unit = (m: Manifest) => ({ name: 'w', generation: 1, manifests: [POD, m], hash: 'h' });
const kindError = (msg: string | undefined, kind: string) => !!msg && msg.includes(`kind ${kind} is not supported`);

describe('driver kinds', () => {
  it.each(OTHERS.map((m) => [m.kind, m] as const))('%s: the table and the planners agree', (kind, m) => {
    const proc = planWorkload(unit(m), { workloadDir: '/nonexistent', agentEnv: {} });
    expect(kindError(proc.error, kind)).toBe(kindsNotRunBy('process', [kind]).length > 0);
    let podmanError: string | undefined;
    try {
      planUnit(unit(m), 'edge', '/nonexistent');
    } catch (err) {
      podmanError = (err as Error).message;
    }
    expect(kindError(podmanError, kind)).toBe(kindsNotRunBy('podman', [kind]).length > 0);
  });
});
