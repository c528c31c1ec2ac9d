/**
 * ClusterTemplate and Cluster on a real in-process hub with two edge agents (docs/clusters.md):
 * artifacts pushed and signed through the CLI, a template version immutable, artifacts whose
 * signature does not hold refused, a Cluster naming a template version never applied refused, host
 * reservation (an edge belongs to one cluster, refused with the holder's name, shown on the edge,
 * released once its node tore down after the delete), a template in use not deletable, a Placement that selects a cluster by name
 * (its control-plane edge). The artifacts are test doubles
 * (test/fixtures/cluster-artifacts.ts): the real cluster is test/clusters.test.ts's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { tempDir, waitFor } from './helpers.js';
import { pushFakeArtifacts } from './fixtures/cluster-artifacts.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, startProcessAgents, stopAgents } from './fixtures/in-process-fleet.js';

describe('ClusterTemplate and Cluster objects', () => {
  let dir: string;
  let hub: Hub;
  const agents: EdgeAgent[] = [];
  let template: { kind: string; metadata: { name: string }; spec: Record<string, any> };

  const apply = (o: unknown) =>
    fetch(`${hub.url}/api/v1/apply`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hub.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ objects: [o] }),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

  beforeAll(async () => {
    dir = tempDir('outpost-clusters-objects-');
    hub = await startHub({
      dataDir: path.join(dir, 'hub'),
      listen: '127.0.0.1:0',
      insecureHttp: true,
      scanner: { kind: 'none' },
    });
    await startProcessAgents(hub, dir, ['e1', 'e2'], { site: 'a' }, agents);
    const pushed = await pushFakeArtifacts(hub, path.join(dir, 'artifacts'), { name: 'small' });
    expect(pushed.stderr).toContain('kubelet: sha256:');
    template = pushed.template;
  }, 120_000);

  afterAll(async () => {
    await stopAgents(agents);
    await hub?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('prints a template whose nine artifacts are signed, and applies it', async () => {
    expect(Object.keys(template.spec.artifacts).sort()).toEqual([
      'cni-plugins',
      'containerd',
      'etcd',
      'kube-apiserver',
      'kube-controller-manager',
      'kube-scheduler',
      'kubelet',
      'pause',
      'runc',
    ]);
    const r = await apply(template);
    expect(r.status).toBe(200);
    // Applying it again is no change.
    expect((await apply(template)).body.results[0].action).toBe('unchanged');
  });

  it('keeps a template version immutable: other content needs another spec.version', async () => {
    const changed = { ...template, spec: { ...template.spec, kubelet: { maxPods: 20 } } };
    const r = await apply(changed);
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).toContain('version 1 of ClusterTemplate small was applied with other content');
    const v2 = { ...changed, spec: { ...changed.spec, version: '2' } };
    expect((await apply(v2)).status).toBe(200);
    // Version 1 is still what it was: going back to it is allowed, with its own content only.
    expect((await apply(template)).status).toBe(200);
  });

  it('refuses an artifact whose signature is not for that component', async () => {
    const a = template.spec.artifacts;
    // The kubelet's signed digest under the name etcd: signed, but not as etcd.
    const swapped = {
      ...template,
      metadata: { name: 'swapped' },
      spec: { ...template.spec, artifacts: { ...a, etcd: a.kubelet } },
    };
    const r = await apply(swapped);
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).toContain('spec.artifacts.etcd');
    expect(JSON.stringify(r.body)).toContain('does not verify');
  });

  it('refuses a Cluster whose template version was never applied', async () => {
    const r = await apply({
      kind: 'Cluster',
      metadata: { name: 'nope' },
      spec: { template: { name: 'small', version: '9' }, controlPlane: { edges: ['e1'] } },
    });
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).toContain('ClusterTemplate small version 9 was never applied');
  });

  it('reserves hosts: an edge belongs to one cluster, shown on it, refused with the holder, released at delete', async () => {
    const a = await apply({
      kind: 'Cluster',
      metadata: { name: 'alpha' },
      spec: { template: { name: 'small', version: '1' }, controlPlane: { edges: ['e1'] } },
    });
    expect(a.status).toBe(200);
    const edge = await adminApi(hub, 'GET', '/api/v1/projects/default/edges/e1');
    expect(edge.status.cluster).toEqual({ cluster: 'alpha', role: 'control-plane' });
    // The cluster's API through the hub: its control-plane edge's kube route.
    const alpha = await adminApi(hub, 'GET', '/api/v1/projects/default/clusters/alpha');
    expect(alpha.status.endpoint).toBe('/api/v1/edges/e1/kube');
    const b = await apply({
      kind: 'Cluster',
      metadata: { name: 'beta' },
      spec: { template: { name: 'small', version: '1' }, controlPlane: { edges: ['e2'] }, workers: { edges: ['e1'] } },
    });
    expect(b.status).toBe(409);
    expect(JSON.stringify(b.body)).toContain('edge e1 belongs to cluster default/alpha');
    // Refused whole: e2 was not reserved either.
    expect((await adminApi(hub, 'GET', '/api/v1/projects/default/edges/e2')).status.cluster).toBeUndefined();
    // The template in use stays.
    const del = await fetch(`${hub.url}/api/v1/projects/default/clustertemplates/small`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${hub.adminToken}` },
    });
    expect(del.status).toBe(409);
    expect(JSON.stringify(await del.json())).toContain('used by Cluster alpha');
    // The order reaches e1's replica (its node then fails on the test doubles, and says so).
    await waitFor(
      async () =>
        (await adminApi(hub, 'GET', '/api/v1/projects/default/clusters/alpha')).status.nodes[0]?.phase === 'Failed',
      { timeout: 60_000, what: 'the node of alpha reported (Failed on test doubles)' },
    );
    const st = (await adminApi(hub, 'GET', '/api/v1/projects/default/clusters/alpha')).status;
    expect(st.phase).toBe('Degraded');
    expect(st.nodes[0].message).toContain('exited at start');
    // The CLI shows them.
    const env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken };
    const got = await runCli(['get', 'clusters'], { env });
    expect(got.stdout).toMatch(/NAME\s+TEMPLATE\s+PHASE\s+READY\s+CONTROL-PLANE\s+AGE/);
    expect(got.stdout).toMatch(/alpha\s+small@1\s+Degraded\s+0\/1\s+e1/);
    expect((await runCli(['get', 'ct'], { env })).stdout).toMatch(/small\s+Project\s+1\s+v1\.33\.13/);
    const described = await runCli(['describe', 'cluster', 'alpha'], { env });
    expect(described.stdout).toContain('Nodes:');
    expect(described.stdout).toMatch(/e1\s+control-plane\s+Failed/);
    expect((await runCli(['describe', 'clustertemplate', 'small'], { env })).stdout).toContain('kube-apiserver');
    // Deleted: Deleting until e1's node tore down (test/clusters-deletion.test.ts), then e1 is released.
    await adminApi(hub, 'DELETE', '/api/v1/projects/default/clusters/alpha');
    await waitFor(
      async () => (await adminApi(hub, 'GET', '/api/v1/projects/default/edges/e1')).status.cluster === undefined,
      { timeout: 60_000, what: 'e1 released once its node tore down' },
    );
    // e1's node is torn down: its directory goes, its report with it.
    await waitFor(() => !fs.existsSync(path.join(dir, 'e1', 'clusters', 'alpha')), {
      timeout: 60_000,
      what: "e1's node directory removed",
    });
    await waitFor(() => hub.state.clusters.nodeReport('e1') === undefined, {
      timeout: 30_000,
      what: 'the node report gone',
    });
    expect(
      (
        await apply({
          kind: 'Cluster',
          metadata: { name: 'beta' },
          spec: {
            template: { name: 'small', version: '1' },
            controlPlane: { edges: ['e2'] },
            workers: { edges: ['e1'] },
          },
        })
      ).status,
    ).toBe(200);
  }, 180_000);

  it('selects clusters in a Placement: each its control-plane edge, a warning for one that is not there', async () => {
    // beta (previous case): control plane e2, worker e1.
    const workload = {
      kind: 'Workload',
      metadata: { name: 'on-beta' },
      spec: {
        manifests: [
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'on-beta' },
            spec: { containers: [{ name: 'main', image: 'none', command: ['sleep', '3600'] }] },
          },
        ],
      },
    };
    const r = await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        workload,
        { kind: 'Placement', metadata: { name: 'on-beta' }, spec: { workloads: ['on-beta'], clusters: ['beta'] } },
      ],
    });
    expect(r.warnings ?? []).toEqual([]);
    const on = async (edge: string) =>
      ((await adminApi(hub, 'GET', `/api/v1/projects/default/edges/${edge}`)).status?.workloads ?? []).map(
        (w: { name: string }) => w.name,
      );
    await waitFor(async () => (await on('e2')).includes('on-beta'), {
      timeout: 60_000,
      what: 'the workload on e2, the control plane of beta',
    });
    expect(await on('e1')).not.toContain('on-beta');
    // A cluster that does not exist selects nothing, and the apply says so.
    const none = await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        { kind: 'Placement', metadata: { name: 'on-gamma' }, spec: { workloads: ['on-beta'], clusters: ['gamma'] } },
      ],
    });
    expect(none.warnings.join(' ')).toContain('the control planes of clusters gamma');
    // A Placement selects something: edgeSelector, edges or clusters.
    const bare = await apply({ kind: 'Placement', metadata: { name: 'bare' }, spec: { workloads: ['on-beta'] } });
    expect(bare.status).toBe(422);
    expect(JSON.stringify(bare.body)).toContain('edgeSelector ({} selects every edge), edges, clusters');
    // The cluster is not deleted while a Placement targets it, unless forced.
    const env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken };
    const refused = await runCli(['delete', 'cluster', 'beta'], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Cluster beta is targeted by Placement on-beta');
    expect((await adminApi(hub, 'GET', '/api/v1/projects/default/clusters/beta')).metadata.name).toBe('beta');
    const forced = await runCli(['delete', 'cluster', 'beta', '--force'], { env });
    expect(forced.stdout, forced.stderr).toContain('cluster/beta deleting: its nodes tear it down');
    await waitFor(
      async () => (await adminApi(hub, 'GET', '/api/v1/projects/default/edges/e2')).status.cluster === undefined,
      { timeout: 60_000, what: 'e2 released once its node tore down' },
    );
    await adminApi(hub, 'DELETE', '/api/v1/projects/default/placements/on-beta');
    await adminApi(hub, 'DELETE', '/api/v1/projects/default/placements/on-gamma');
    // Without a Placement naming it, a cluster is deleted plainly.
    await apply({
      kind: 'Cluster',
      metadata: { name: 'gamma' },
      spec: { template: { name: 'small', version: '1' }, controlPlane: { edges: ['e1'] } },
    });
    expect((await runCli(['delete', 'cluster', 'gamma'], { env })).stdout).toContain('cluster/gamma deleting');
  }, 120_000);
});
