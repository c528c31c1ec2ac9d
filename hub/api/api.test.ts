/**
 * The hub API in-process over real loopback HTTP, with a real edge replica syncing over the real
 * WebSocket: enrollment, placement to READY, optimistic concurrency, validation errors, project
 * isolation and roles. Run again on PostgreSQL by api.postgres.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { putReportWorkload, readSpec, type ReportDoc, type SpecDoc } from '../../core/mailbox.js';
import { SyncClient } from '../../sync/client.js';
import { ReplicaStore } from '../../sync/store.js';
import { hubDatabaseOption } from '../../test/fixtures/backend.js';
import { tempDir, waitFor } from '../../test/helpers.js';
import { startHub, type Hub } from '../hub.js';

let dir: string;
let hub: Hub;
const clients: SyncClient[] = [];
const stores: ReplicaStore[] = [];

async function api(
  method: string,
  p: string,
  body?: unknown,
  token = hub.adminToken,
): Promise<{ status: number; json: any }> {
  const res = await fetch(`${hub.url}${p}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

const workload = (name: string, image = 'busybox:1') => ({
  kind: 'Workload',
  metadata: { name },
  spec: {
    manifests: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: { containers: [{ name: 'main', image, env: [{ name: 'SITE', value: '{{ edge.labels.site }}' }] }] },
      },
    ],
  },
});

/** Enrolls an edge and runs a real replica that reports every workload Ready. */
async function startEdge(name: string, labels: Record<string, string>, project = 'default') {
  const t = await api('POST', '/api/v1/tokens/join', { project, labels, uses: 1 });
  expect(t.status).toBe(201);
  const e = await fetch(`${hub.url}/api/v1/enroll`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ joinToken: t.json.token, name }),
  });
  const enrolled = (await e.json()) as { credential: string; approved: boolean };
  expect(e.status).toBe(201);
  const store = await ReplicaStore.open(path.join(dir, `${name}.db`), {
    afterChange: (id, origin) => {
      client.notify(id);
      if (origin === 'remote' && id.endsWith('/spec')) {
        const spec = readSpec(store.get<SpecDoc>(id)!);
        store.change<ReportDoc>(mailboxDocId(edgeName(name), 'report'), (d) => {
          for (const w of Object.values(spec.workloads))
            putReportWorkload(d, w.name, {
              observedGeneration: w.generation,
              phase: 'Ready',
              restarts: 0,
              objects: { [`Pod/${w.name}`]: { ready: true } },
            });
        });
      }
    },
  });
  const client: SyncClient = new SyncClient({
    url: hub.url.replace(/^http/, 'ws') + '/api/v1/sync',
    token: enrolled.credential,
    edge: edgeName(name),
    store,
    agentVersion: 'test',
    heartbeatMs: 200,
  });
  client.start();
  clients.push(client);
  stores.push(store);
  return { store, client, enrolled };
}

beforeAll(async () => {
  dir = tempDir();
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    ...(await hubDatabaseOption()),
  });
});

afterAll(async () => {
  for (const c of clients) await c.stop();
  for (const s of stores) s.close();
  await hub.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('hub API', () => {
  it('writes the admin token once, mode 0600', () => {
    const f = path.join(dir, 'hub', 'admin.token');
    expect(fs.readFileSync(f, 'utf8').trim()).toBe(hub.adminToken);
    expect(fs.statSync(f).mode & 0o777).toBe(0o600);
    expect(hub.adminTokenCreated).toBe(true);
  });

  it('places a workload on the selected edges, customized per edge, and reports READY x/y', async () => {
    await startEdge('eu-1', { region: 'eu', site: 'paris' });
    await startEdge('eu-2', { region: 'eu', site: 'berlin' });
    await startEdge('us-1', { region: 'us', site: 'ohio' });
    const r = await api('POST', '/api/v1/apply', {
      objects: [
        workload('web'),
        {
          kind: 'Placement',
          metadata: { name: 'eu-web' },
          spec: { edgeSelector: { matchLabels: { region: 'eu' } }, workloads: ['web'] },
        },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.json.results.map((x: { action: string }) => x.action)).toEqual(['created', 'created']);
    const p = await waitFor(
      async () => {
        const g = await api('GET', '/api/v1/projects/default/placements/eu-web');
        // The summary is computed on read; the rollout phase follows on the scheduler's next pass.
        return g.json.status.summary.ready === 2 && g.json.status.rollout.phase === 'Complete' ? g.json : null;
      },
      { what: 'READY 2/2 and rollout Complete' },
    );
    expect(p.status.summary).toMatchObject({ total: 2, ready: 2, worst: 'Ready', broken: [] });
    expect(p.status.rollout.phase).toBe('Complete');
    // Per-edge customization reached the edge's spec document.
    const spec = readSpec(stores[0].get<SpecDoc>(mailboxDocId(edgeName('eu-1'), 'spec'))!);
    expect((spec.workloads.web.manifests[0] as any).spec.containers[0].env[0].value).toBe('paris');
    expect(stores[2].get<SpecDoc>(mailboxDocId(edgeName('us-1'), 'spec'))!.workloads.web).toBeUndefined();
    // Re-applying the same objects changes nothing.
    const again = await api('POST', '/api/v1/apply', { objects: [workload('web')] });
    expect(again.json.results[0].action).toBe('unchanged');
  });

  it('a relabelled edge joins the placement; only its mailbox changes', async () => {
    const eu1Heads = hub.store.meta(mailboxDocId(edgeName('eu-1'), 'spec'))!.heads;
    const r = await api('POST', '/api/v1/projects/default/edges/us-1/labels', { labels: { region: 'eu' } });
    expect(r.status).toBe(200);
    await waitFor(
      async () => (await api('GET', '/api/v1/projects/default/placements/eu-web')).json.status.summary.ready === 3,
      { what: 'READY 3/3' },
    );
    expect(hub.store.meta(mailboxDocId(edgeName('eu-1'), 'spec'))!.heads).toEqual(eu1Heads);
  });

  it('a missing edge property is a per-edge Error in status, not a crash', async () => {
    await api('POST', '/api/v1/apply', {
      objects: [
        {
          ...workload('needs-zone'),
          spec: {
            manifests: [
              {
                apiVersion: 'v1',
                kind: 'ConfigMap',
                metadata: { name: 'cfg' },
                data: { zone: '{{ edge.labels.zone }}' },
              },
            ],
          },
        },
        { kind: 'Placement', metadata: { name: 'zones' }, spec: { edges: ['eu-1'], workloads: ['needs-zone'] } },
      ],
    });
    const p = await waitFor(
      async () => {
        const g = await api('GET', '/api/v1/projects/default/placements/zones');
        return g.json.status.summary.broken.length ? g.json : null;
      },
      { what: 'broken entry' },
    );
    expect(p.status.summary.worst).toBe('Error');
    expect(p.status.summary.broken[0]).toMatchObject({ edge: 'eu-1', workload: 'needs-zone' });
    expect(p.status.summary.broken[0].reason).toMatch(/no label "zone"/);
  });

  it('a stale resourceVersion gets 409 and bad input gets 422 with the field path', async () => {
    const g = await api('GET', '/api/v1/projects/default/workloads/web');
    const stale = g.json.metadata.resourceVersion;
    const upd = await api('PUT', '/api/v1/projects/default/workloads/web', {
      ...workload('web', 'busybox:2'),
      metadata: { name: 'web', resourceVersion: stale },
    });
    expect(upd.status).toBe(200);
    const conflict = await api('PUT', '/api/v1/projects/default/workloads/web', {
      ...workload('web', 'busybox:3'),
      metadata: { name: 'web', resourceVersion: stale },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error.message).toMatch(/stale/);
    const bad = await api('POST', '/api/v1/projects/default/placements', {
      kind: 'Placement',
      metadata: { name: 'bad' },
      spec: {
        workloads: ['web'],
        edgeSelector: { matchExpressions: [{ key: 'region', operator: 'Near', values: ['eu'] }] },
      },
    });
    expect(bad.status).toBe(422);
    expect(bad.json.error.message).toContain(
      'spec.edgeSelector.matchExpressions[0].operator: must be one of In, NotIn, Exists, DoesNotExist',
    );
    // apply validates everything before changing anything.
    const mixed = await api('POST', '/api/v1/apply', {
      objects: [workload('never-created'), { kind: 'Placement', metadata: { name: 'x' }, spec: {} }],
    });
    expect(mixed.status).toBe(422);
    expect((await api('GET', '/api/v1/projects/default/workloads/never-created')).status).toBe(404);
  });

  it('keeps workload revisions and rolls back', async () => {
    const revs = await api('GET', '/api/v1/projects/default/workloads/web/revisions');
    expect(revs.json.items.map((r: { revision: number }) => r.revision)).toEqual([1, 2]);
    const rb = await api('POST', '/api/v1/projects/default/workloads/web/rollback', { revision: 1 });
    expect(rb.status).toBe(200);
    expect(rb.json.revision).toBe(3);
    expect(rb.json.object.spec.manifests[0].spec.containers[0].image).toBe('busybox:1');
  });

  it('isolates projects and enforces roles', async () => {
    const viewer = (await api('POST', '/api/v1/tokens/api', { role: 'viewer', project: 'default' })).json.token;
    const otherOp = (await api('POST', '/api/v1/tokens/api', { role: 'operator', project: 'other' })).json.token;
    expect((await api('GET', '/api/v1/projects/default/workloads', undefined, viewer)).status).toBe(200);
    expect((await api('POST', '/api/v1/apply', { objects: [workload('v')] }, viewer)).status).toBe(403);
    expect((await api('GET', '/api/v1/projects/default/workloads/web', undefined, otherOp)).status).toBe(404);
    expect(
      (await api('POST', '/api/v1/apply?project=default', { objects: [workload('sneaky')] }, otherOp)).status,
    ).toBe(404);
    const own = await api('POST', '/api/v1/apply?project=other', { objects: [workload('mine')] }, otherOp);
    expect(own.status).toBe(200);
    expect(
      (await api('GET', '/api/v1/projects/other/workloads', undefined, otherOp)).json.items.map(
        (w: any) => w.metadata.name,
      ),
    ).toEqual(['mine']);
    expect((await api('POST', '/api/v1/tokens/api', { role: 'admin', project: 'other' }, otherOp)).status).toBe(403);
    expect((await api('GET', '/api/v1/whoami', undefined, 'opt1.none.nope.nope')).status).toBe(401);
  });

  it('join tokens respect their use limit; decommission revokes the edge', async () => {
    const t = (await api('POST', '/api/v1/tokens/join', { project: 'default', uses: 1 })).json.token;
    const enroll = (name: string) =>
      fetch(`${hub.url}/api/v1/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ joinToken: t, name }),
      });
    expect((await enroll('once-1')).status).toBe(201);
    const second = await enroll('once-2');
    expect(second.status).toBe(401);
    expect(((await second.json()) as any).error.message).toMatch(/used/);
    const d = await api('POST', '/api/v1/projects/default/edges/once-1/decommission');
    expect(d.status).toBe(200);
    expect((await api('GET', '/api/v1/projects/default/edges/once-1')).status).toBe(404);
  });

  it('serves health, metrics and an OpenAPI document', async () => {
    expect((await (await fetch(`${hub.url}/healthz`)).json()) as any).toMatchObject({ ok: true });
    const m = await (await fetch(`${hub.url}/metrics`)).text();
    expect(m).toMatch(/outpost_hub_edges_connected \d+/);
    const o = (await (await fetch(`${hub.url}/api/v1/openapi.json`)).json()) as any;
    expect(o.openapi).toBe('3.1.0');
    expect(o.components.schemas.Placement).toBeTruthy();
  });
});
