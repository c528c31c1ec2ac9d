/**
 * A Cluster's deletion on a real in-process hub with edge agents (docs/clusters.md, "Delete";
 * hub/clusters/deletion.ts): a delete records it and the cluster is `Deleting`, its nodes get
 * teardown orders and report `Deleted`, and only then are the hosts released and the Cluster gone,
 * with an event for each step; a delete of a Deleting cluster is idempotent, an apply of one is
 * refused; an offline edge keeps it Deleting until it is decommissioned or the deletion is forced.
 * The artifacts are test doubles (test/fixtures/cluster-artifacts.ts): the nodes fail at their first
 * start, which is enough to have something on the edge to tear down; the real cluster's deletion is
 * test/clusters.test.ts's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { tempDir, waitFor } from './helpers.js';
import { pushFakeArtifacts } from './fixtures/cluster-artifacts.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, startProcessAgent, startProcessAgents, stopAgents } from './fixtures/in-process-fleet.js';

describe('deleting a Cluster', () => {
  let dir: string;
  let hub: Hub;
  const agents: EdgeAgent[] = [];
  let env: Record<string, string>;

  const call = (method: string, p: string, body?: unknown) =>
    fetch(`${hub.url}/api/v1${p}`, {
      method,
      headers: {
        authorization: `Bearer ${hub.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
  const apply = (o: unknown) => call('POST', '/apply', { objects: [o] });
  const cluster = (name: string, cp: string, workers: string[] = []) => ({
    kind: 'Cluster',
    metadata: { name },
    spec: {
      template: { name: 'small', version: '1' },
      controlPlane: { edges: [cp] },
      ...(workers.length ? { workers: { edges: workers } } : {}),
    },
  });
  const get = (name: string) => call('GET', `/projects/default/clusters/${name}`);
  const reasons = async (name: string) =>
    ((await call('GET', `/projects/default/events?kind=Cluster&name=${name}&limit=200`)).body.items as any[]).map(
      (e) => `${e.reason}: ${e.message}`,
    );

  beforeAll(async () => {
    dir = tempDir('outpost-clusters-deletion-');
    hub = await startHub({
      dataDir: path.join(dir, 'hub'),
      listen: '127.0.0.1:0',
      insecureHttp: true,
      scanner: { kind: 'none' },
    });
    env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken };
    await startProcessAgents(hub, dir, ['e1', 'e2', 'e3', 'e4'], { site: 'a' }, agents);
    const { template } = await pushFakeArtifacts(hub, path.join(dir, 'artifacts'), { name: 'small' });
    expect((await apply(template)).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await stopAgents(agents);
    await hub?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is Deleting while the nodes tear down, and goes once every node reported it tore down', async () => {
    expect((await apply(cluster('alpha', 'e1', ['e2']))).status).toBe(200);
    // The control plane's node is on e1 (it fails at its first start on the test doubles).
    await waitFor(async () => (await get('alpha')).body.status.nodes[0]?.phase === 'Failed', {
      timeout: 60_000,
      what: "alpha's control-plane node reported",
    });
    expect(fs.existsSync(path.join(dir, 'e1', 'clusters', 'alpha'))).toBe(true);
    const uid = (await get('alpha')).body.metadata.uid;

    const del = await call('DELETE', '/projects/default/clusters/alpha');
    expect(del.status).toBe(200);
    expect(del.body.deleting).toEqual({ kind: 'Cluster', project: 'default', name: 'alpha' });
    // Recorded: phase Deleting, when and by whom (the nodes on the test doubles tear down fast:
    // the answer's object is the state the delete left).
    const held = del.body.object;
    expect(held.metadata.uid).toBe(uid);
    expect(held.status.phase).toBe('Deleting');
    expect(held.status.deletion).toMatchObject({ forced: false, by: expect.stringContaining('admin') });
    expect(Date.parse(held.status.deletion.at)).toBeGreaterThan(0);
    expect(held.status.nodes.map((n: any) => n.edge)).toEqual(['e1', 'e2']);

    // Each node reports its teardown; the worker, which never ran (no control-plane address), too.
    await waitFor(async () => (await get('alpha')).status === 404, {
      timeout: 60_000,
      what: 'alpha gone once its nodes tore down',
    });
    expect(fs.existsSync(path.join(dir, 'e1', 'clusters', 'alpha'))).toBe(false);
    const events = await reasons('alpha');
    expect(events.some((e) => e.startsWith('Deleting: deletion asked by'))).toBe(true);
    expect(events.some((e) => e.startsWith('Deleting: e1: the cluster is deleted'))).toBe(true);
    expect(events.some((e) => e.startsWith("Deleted: e1: every component stopped and the node's data removed"))).toBe(
      true,
    );
    expect(events.some((e) => e.startsWith('Deleted: e2: nothing of the node was on this edge'))).toBe(true);
    expect(events.some((e) => e.startsWith('HostsReleased: hosts e1, e2 released'))).toBe(true);
    for (const e of ['e1', 'e2'])
      expect((await adminApi(hub, 'GET', `/api/v1/projects/default/edges/${e}`)).status.cluster).toBeUndefined();
    expect(hub.state.clusters.deletion('default', 'alpha')).toBeUndefined();
    expect(hub.state.clusters.pki('default', 'alpha', '')).toBeUndefined();
    // The orders are withdrawn, and the reports with them; the name can be used again.
    await waitFor(() => !hub.state.clusters.nodeReport('e1') && !hub.state.clusters.nodeReport('e2'), {
      timeout: 30_000,
      what: 'the node reports gone',
    });
    expect((await apply(cluster('alpha', 'e1'))).status).toBe(200);
    expect((await call('DELETE', '/projects/default/clusters/alpha')).body.deleting).toBeDefined();
    await waitFor(async () => (await get('alpha')).status === 404, { timeout: 60_000, what: 'alpha gone again' });
  }, 180_000);

  it('keeps the Placement guard, then a forced delete records that it was forced', async () => {
    expect((await apply(cluster('beta', 'e2'))).status).toBe(200);
    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'Workload',
          metadata: { name: 'w' },
          spec: {
            manifests: [
              {
                apiVersion: 'v1',
                kind: 'Pod',
                metadata: { name: 'w' },
                spec: { containers: [{ name: 'main', image: 'none', command: ['sleep', '3600'] }] },
              },
            ],
          },
        },
        { kind: 'Placement', metadata: { name: 'on-beta' }, spec: { workloads: ['w'], clusters: ['beta'] } },
      ],
    });
    const refused = await call('DELETE', '/projects/default/clusters/beta');
    expect(refused.status).toBe(409);
    expect(JSON.stringify(refused.body)).toContain('Cluster beta is targeted by Placement on-beta');
    expect((await get('beta')).body.status.phase).not.toBe('Deleting');
    const forced = await call('DELETE', '/projects/default/clusters/beta?force=true');
    expect(forced.status).toBe(200);
    expect(forced.body.object.status).toMatchObject({ phase: 'Deleting', deletion: { forced: true } });
    // Deleting again without --force: no guard any more, nothing changes.
    expect((await call('DELETE', '/projects/default/clusters/beta')).status).toBe(200);
    await waitFor(async () => (await get('beta')).status === 404, { timeout: 60_000, what: 'beta gone' });
    await adminApi(hub, 'DELETE', '/api/v1/projects/default/placements/on-beta');
  }, 120_000);

  it('waits for an offline edge: decommissioning it counts as torn down, a forced delete ends it at once', async () => {
    // e3 and e4 go offline; each holds the control plane of a cluster.
    expect((await apply(cluster('gamma', 'e3'))).status).toBe(200);
    expect((await apply(cluster('delta', 'e4'))).status).toBe(200);
    await hub.clusters.settle();
    await stopAgents(agents.splice(2));
    for (const name of ['gamma', 'delta'])
      expect((await call('DELETE', `/projects/default/clusters/${name}`)).status).toBe(200);
    await waitFor(async () => (await get('gamma')).body.status.message?.includes('e3 offline'), {
      timeout: 30_000,
      what: "gamma's status says it waits for e3, offline",
    });
    const gamma = (await get('gamma')).body.status;
    expect(gamma.phase).toBe('Deleting');
    expect(gamma.message).toContain('tearing down: waiting for e3');
    expect(gamma.message).toContain('outpost edge decommission');
    expect(gamma.summary).toBe('0/1 nodes torn down');
    // The CLI shows it.
    expect((await runCli(['get', 'clusters'], { env })).stdout).toMatch(/gamma\s+small@1\s+Deleting\s/);
    const described = (await runCli(['describe', 'cluster', 'gamma'], { env })).stdout;
    expect(described).toMatch(/Phase:\s+Deleting/);
    expect(described).toContain('it goes once every node tore down');
    expect(described).toContain('e3 offline');
    // Deleting it again changes nothing (the same resourceVersion), and is no error; the CLI says so.
    const again = await call('DELETE', '/projects/default/clusters/gamma');
    expect(again.status).toBe(200);
    expect(again.body.deleting).toEqual({ kind: 'Cluster', project: 'default', name: 'gamma' });
    expect(again.body.object.metadata.resourceVersion).toBe((await get('gamma')).body.metadata.resourceVersion);
    const cli = await runCli(['delete', 'cluster', 'gamma'], { env });
    expect(cli.stdout, cli.stderr).toContain('cluster/gamma deleting: its nodes tear it down');
    expect((await get('gamma')).body.metadata.resourceVersion).toBe(again.body.object.metadata.resourceVersion);
    // Applying it again (even unchanged) is refused, saying why and what to do.
    for (const spec of [cluster('gamma', 'e3'), cluster('gamma', 'e3', ['e1'])]) {
      const re = await apply(spec);
      expect(re.status).toBe(409);
      expect(JSON.stringify(re.body)).toContain('Cluster gamma is being deleted');
      expect(JSON.stringify(re.body)).toContain('apply it again once it is gone');
    }
    // The host stays reserved meanwhile: another cluster naming it is told why.
    const taken = await apply({ ...cluster('epsilon', 'e1', ['e3']) });
    expect(taken.status).toBe(409);
    expect(JSON.stringify(taken.body)).toContain('edge e3 belongs to cluster default/gamma');
    expect(JSON.stringify(taken.body)).toContain('which is being deleted');
    // A second pass changes nothing while e3 is away.
    await hub.clusters.settle();
    expect((await get('gamma')).status).toBe(200);

    // Decommissioned: counted as torn down, and gamma goes.
    await adminApi(hub, 'POST', '/api/v1/projects/default/edges/e3/decommission', {});
    await waitFor(async () => (await get('gamma')).status === 404, { timeout: 30_000, what: 'gamma gone' });
    expect((await reasons('gamma')).some((e) => e.startsWith('EdgeDecommissioned: e3 was decommissioned'))).toBe(true);

    // Forced on a Deleting cluster: it ends now, the host released.
    expect((await get('delta')).body.status.phase).toBe('Deleting');
    const forced = await runCli(['delete', 'cluster', 'delta', '--force'], { env });
    expect(forced.stdout, forced.stderr).toBe('cluster/delta deleted\n');
    expect((await get('delta')).status).toBe(404);
    expect(hub.state.clusters.holder('e4')).toBeUndefined();
    expect((await reasons('delta')).some((e) => e.startsWith('DeletionForced: the deletion ends now'))).toBe(true);
    expect((await reasons('delta')).some((e) => e.includes('without waiting for e4'))).toBe(true);
  }, 120_000);

  it("says why a node cannot tear down (its report's message)", async () => {
    expect((await apply(cluster('zeta', 'e1'))).status).toBe(200);
    await waitFor(async () => (await get('zeta')).body.status.nodes[0]?.phase === 'Failed', {
      timeout: 60_000,
      what: "zeta's node reported",
    });
    // What the edge reports when its teardown fails (edge/clusters/follower.ts `tearDown`), as
    // the hub projects it; a real unmount that fails is not made here.
    const uid = (await get('zeta')).body.metadata.uid;
    await stopAgents(agents.splice(0, 1));
    hub.state.clusters.putNodeReport(
      'e1',
      'default',
      'zeta',
      JSON.stringify({
        cluster: 'zeta',
        uid,
        role: 'control-plane',
        template: 'small@1',
        phase: 'Deleting',
        step: 'TeardownFailed',
        message: "cannot tear the node down: cannot unmount /x: the node's directory stays",
        components: {},
        events: [],
        at: Date.now(),
      }),
    );
    await call('DELETE', '/projects/default/clusters/zeta');
    const st = (await get('zeta')).body.status;
    expect(st.phase).toBe('Deleting');
    expect(st.message).toContain('e1: cannot tear the node down: cannot unmount /x');
  }, 120_000);

  it("a project's deletion deletes its clusters, waits until their nodes tore down, then its templates", async () => {
    expect((await apply({ kind: 'Project', metadata: { name: 'shop' }, spec: {} })).status).toBe(200);
    const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', { project: 'shop', uses: 1 });
    agents.push(await startProcessAgent(hub, dir, 's1', join.token));
    const { template } = await pushFakeArtifacts(hub, path.join(dir, 'artifacts-shop'), {
      name: 'small',
      project: 'shop',
    });
    expect((await apply({ ...template, metadata: { ...template.metadata, project: 'shop' } })).status).toBe(200);
    const c = cluster('till', 's1');
    expect((await apply({ ...c, metadata: { ...c.metadata, project: 'shop' } })).status).toBe(200);
    await waitFor(
      async () => (await call('GET', '/projects/shop/clusters/till')).body.status?.nodes?.[0]?.phase === 'Failed',
      { timeout: 60_000, what: "till's node reported" },
    );
    expect(fs.existsSync(path.join(dir, 's1', 'clusters', 'till'))).toBe(true);

    expect((await call('DELETE', '/projects/shop?decommissionEdges=true')).status).toBe(202);
    await waitFor(async () => (await call('GET', '/projects/shop')).status === 404, {
      timeout: 90_000,
      what: 'project shop gone',
    });
    // The cluster went the way a delete takes it: its node tore down on s1 before the edge was
    // decommissioned, and the template went with the project.
    expect(fs.existsSync(path.join(dir, 's1', 'clusters', 'till'))).toBe(false);
    expect(hub.state.clusters.deletion('shop', 'till')).toBeUndefined();
    expect(hub.state.clusters.templateVersions('shop', 'small')).toEqual([]);
    const events = (
      (await call('GET', '/projects/shop/events?kind=Cluster&name=till&limit=200')).body.items as any[]
    ).map((e) => `${e.reason}: ${e.message}`);
    expect(events.some((e) => e.startsWith("Deleted: s1: every component stopped and the node's data removed"))).toBe(
      true,
    );
  }, 180_000);
});
