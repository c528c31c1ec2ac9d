/**
 * Projects as objects (issue #47, docs/projects.md) on an in-process hub: made and changed only by
 * an admin of every project, read by the tokens of the project; each quota refused with a 403
 * naming it, its use and the fix (a multi-object apply that would pass one applies nothing, two
 * applies racing for the last slot do not both pass); a project's default rollout; a project's
 * deletion removing its objects, packages, blobs and tokens and nothing of another project's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hub } from '../hub/hub.js';
import { hubApi } from './fixtures/host-workloads.js';
import { startInProcessHub, stopInProcess } from './fixtures/in-process-fleet.js';
import { runCli } from './fixtures/cli.js';
import { waitFor } from './helpers.js';

const workload = (project: string, name: string) => ({
  kind: 'Workload',
  metadata: { name, project },
  spec: { manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: '1' } }] },
});
const placement = (project: string, name: string, rollout?: object) => ({
  kind: 'Placement',
  metadata: { name, project },
  spec: { edgeSelector: {}, workloads: ['w1'], ...(rollout ? { rollout } : {}) },
});
const project = (name: string, spec: object = {}) => ({ kind: 'Project', metadata: { name }, spec });

describe('projects as objects', () => {
  let dir: string;
  let hub: Hub;
  let env: NodeJS.ProcessEnv;
  let admin: { url: string; token: string };
  const api = (method: string, p: string, body?: unknown, token?: string) => hubApi(admin, method, p, body, token);
  const token = async (role: string, project: string) =>
    (await api('POST', '/api/v1/tokens/api', { role, project })).json.token as string;

  beforeAll(async () => {
    ({ dir, hub, env } = await startInProcessHub('outpost-projects-'));
    admin = { url: hub.url, token: hub.adminToken };
  });
  afterAll(() => stopInProcess({ hub, dir }));

  it('has default; only an admin of every project creates, changes or deletes one; viewers see their own', async () => {
    const list = await api('GET', '/api/v1/projects');
    expect(list.json.items.map((p: any) => p.metadata.name)).toContain('default');
    const made = await api(
      'POST',
      '/api/v1/projects',
      project('shop', { description: 'the shop', quotas: { edges: 3 } }),
    );
    expect(made.status, JSON.stringify(made.json)).toBe(201);
    expect(made.json.status.phase).toBe('Active');
    expect(made.json.spec.quotas.edges).toBe(3);
    await api('POST', '/api/v1/projects', project('other'));

    const shopAdmin = await token('admin', 'shop');
    const create = await api('POST', '/api/v1/projects', project('shop2'), shopAdmin);
    expect(create.status).toBe(404); // outside its project: it never learns it exists
    const change = await api('PUT', '/api/v1/projects/shop', project('shop', { quotas: { edges: 99 } }), shopAdmin);
    expect(change.status).toBe(403);
    expect(change.json.error.message).toMatch(/only an admin token for every project/);
    const del = await api('DELETE', '/api/v1/projects/shop', undefined, shopAdmin);
    expect(del.status).toBe(403);
    const applied = await api(
      'POST',
      '/api/v1/apply',
      { objects: [project('shop', { quotas: { edges: 99 } })] },
      shopAdmin,
    );
    expect(applied.status).toBe(403);
    expect((await api('GET', '/api/v1/projects/shop')).json.spec.quotas.edges).toBe(3);

    const viewer = await token('viewer', 'shop');
    expect((await api('GET', '/api/v1/projects/shop', undefined, viewer)).status).toBe(200);
    expect((await api('GET', '/api/v1/projects/other', undefined, viewer)).status).toBe(404);
    const seen = await api('GET', '/api/v1/projects', undefined, viewer);
    expect(seen.json.items.map((p: any) => p.metadata.name)).toEqual(['shop']);

    // Validation and revisions as the other kinds.
    const bad = await api('POST', '/api/v1/projects', project('bad', { quotas: { edgez: 1 } }));
    expect(bad.status).toBe(422);
    expect(bad.json.error.message).toMatch(/edgez.*edges/);
    const rv = (await api('GET', '/api/v1/projects/other')).json.metadata.resourceVersion;
    expect((await api('PUT', '/api/v1/projects/other', project('other', { description: 'x' }))).status).toBe(200);
    const stale = await api('PUT', '/api/v1/projects/other', {
      ...project('other'),
      metadata: { name: 'other', resourceVersion: rv },
    });
    expect(stale.status).toBe(409);
  });

  it('refuses each count quota with 403 naming it, its use and the fix; a batch over it applies nothing', async () => {
    await api('POST', '/api/v1/apply', {
      objects: [project('q', { quotas: { workloads: 2, placements: 1, edges: 1 } })],
    });
    expect((await api('POST', '/api/v1/apply', { objects: [workload('q', 'w1'), placement('q', 'p1')] })).status).toBe(
      200,
    );
    const over = await api('POST', '/api/v1/apply', { objects: [placement('q', 'p2')] });
    expect(over.status).toBe(403);
    expect(over.json.error.code).toBe('over_quota');
    expect(over.json.error.message).toBe(
      'project "q" has 1 of 1 placements (quota placements): raise spec.quotas.placements or delete a placement',
    );
    // Two workloads where one slot is left: neither is applied.
    const batch = await api('POST', '/api/v1/apply', { objects: [workload('q', 'w2'), workload('q', 'w3')] });
    expect(batch.status).toBe(403);
    expect(batch.json.error.message).toMatch(/has 2 of 2 workloads \(quota workloads\)/);
    expect((await api('GET', '/api/v1/projects/q/workloads')).json.items.map((w: any) => w.metadata.name)).toEqual([
      'w1',
    ]);
    // Changing an object in a full project is not creating one.
    expect((await api('POST', '/api/v1/apply', { objects: [placement('q', 'p1', { paused: true })] })).status).toBe(
      200,
    );

    // Edges at enrollment.
    const join = (await api('POST', '/api/v1/tokens/join', { project: 'q', uses: 2 })).json.token;
    const enroll = (name: string) =>
      fetch(`${hub.url}/api/v1/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ joinToken: join, name }),
      });
    expect((await enroll('q-1')).status).toBe(201);
    const second = await enroll('q-2');
    expect(second.status).toBe(403);
    expect(((await second.json()) as any).error.message).toBe(
      'project "q" has 1 of 1 edges (quota edges): raise spec.quotas.edges or decommission an edge (outpost edge decommission NAME)',
    );

    const got = (await api('GET', '/api/v1/projects/q')).json;
    expect(got.status.usage).toMatchObject({ edges: 1, placements: 1, workloads: 1 });
  });

  it('two applies racing for the last slot: exactly one passes', async () => {
    await api('POST', '/api/v1/apply', { objects: [project('race', { quotas: { workloads: 1 } })] });
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(
        ['a', 'b'].map((n) => api('POST', '/api/v1/apply', { objects: [workload('race', `w${round}${n}`)] })),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([200, 403]);
      const w = (await api('GET', '/api/v1/projects/race/workloads')).json.items;
      expect(w).toHaveLength(1);
      expect((await api('DELETE', `/api/v1/projects/race/workloads/${w[0].metadata.name}`)).status).toBe(200);
    }
  });

  it('holds blob bytes and DataObject bytes to the project quota', async () => {
    await api('POST', '/api/v1/apply', {
      objects: [project('bytes', { quotas: { dataObjectBytes: '1KiB', blobBytes: 1000 } })],
    });
    const upload = (bytes: number, fill: number) =>
      fetch(`${hub.url}/api/v1/projects/bytes/blobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${hub.adminToken}`, 'content-type': 'application/octet-stream' },
        body: Buffer.alloc(bytes, fill),
      });
    const up = await upload(600, 7);
    expect(up.status).toBe(201);
    const digest = ((await up.json()) as any).digest as string;
    const big = await upload(500, 8);
    expect(big.status).toBe(403);
    expect(((await big.json()) as any).error.message).toMatch(
      /^project "bytes" has 600 bytes of 1000 bytes of blobs; 500 bytes more would pass it \(quota blobBytes\): raise spec\.quotas\.blobBytes or remove blobs/,
    );

    const data = (name: string) => ({
      kind: 'DataObject',
      metadata: { name, project: 'bytes' },
      spec: { version: 'v1', digest, size: 600, edgeSelector: {} },
    });
    const first = await api('POST', '/api/v1/apply', { objects: [data('d1')] });
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    const over = await api('POST', '/api/v1/apply', { objects: [data('d2')] });
    expect(over.status).toBe(403);
    expect(over.json.error.message).toBe(
      'project "bytes" has 600 bytes of 1.0 KiB of DataObjects and d2 needs 600 bytes (quota dataObjectBytes): raise spec.quotas.dataObjectBytes or delete a DataObject',
    );
    // Raised, it fits.
    await api('PATCH', '/api/v1/projects/bytes', { spec: { quotas: { dataObjectBytes: '2KiB' } } });
    expect((await api('POST', '/api/v1/apply', { objects: [data('d2')] })).status).toBe(200);
  });

  it("gives a placement without maxUnavailable its project's default", async () => {
    await api('POST', '/api/v1/apply', { objects: [project('roll', { rollout: { maxUnavailable: 3 } })] });
    const r = await api('POST', '/api/v1/apply', { objects: [workload('roll', 'w1'), placement('roll', 'p1')] });
    expect(r.status).toBe(200);
    expect(r.json.results[1].rollout.maxUnavailable).toBe(3);
    expect((await api('GET', '/api/v1/projects/roll/placements/p1')).json.spec.rollout.maxUnavailable).toBe(3);
    await api('POST', '/api/v1/apply', { objects: [placement('roll', 'p2', { maxUnavailable: '50%' })] });
    expect((await api('GET', '/api/v1/projects/roll/placements/p2')).json.spec.rollout.maxUnavailable).toBe('50%');
    // Without a project default: 25%, as before.
    await api('POST', '/api/v1/apply', { objects: [workload('plain', 'w1'), placement('plain', 'p1')] });
    expect((await api('GET', '/api/v1/projects/plain/placements/p1')).json.spec.rollout.maxUnavailable).toBe('25%');
  });

  it('deletes a project in order, refuses one with edges and no destination, and leaves the others as they were', async () => {
    // q has an edge: refused without a destination.
    const refused = await api('DELETE', '/api/v1/projects/q');
    expect(refused.status).toBe(409);
    expect(refused.json.error.message).toMatch(/project q has 1 edge: .*--move-edges-to OTHER.*--decommission-edges/);

    await api('POST', '/api/v1/apply', { objects: [project('gone'), workload('gone', 'w1'), placement('gone', 'p1')] });
    const gonesToken = await token('operator', 'gone');
    const before = JSON.stringify(await snapshot('shop'));
    const r = await runCli(['delete', 'project', 'gone'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/project\/gone deletion started/);
    await waitFor(async () => (await api('GET', '/api/v1/projects/gone')).status === 404, {
      timeout: 20_000,
      what: 'project gone deleted',
    });
    expect((await api('GET', '/api/v1/projects/gone/workloads')).json.items).toEqual([]);
    expect((await api('GET', '/api/v1/projects/gone/placements', undefined, gonesToken)).status).toBe(401);
    expect(JSON.stringify(await snapshot('shop'))).toBe(before);
    const events = (await api('GET', '/api/v1/projects/gone/events')).json.items.map((e: any) => e.reason);
    expect(events).toContain('Terminating');
    expect(events).toContain('Deleted');
  });

  it('lists projects with their use against the quotas (outpost get projects, describe project)', async () => {
    const r = await runCli(['get', 'projects'], { env });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+EDGES\s+PLACEMENTS\s+WORKLOADS\s+BLOBS\s+DATA\s+SESSIONS\s+PHASE\s+AGE$/);
    expect(lines.find((l) => l.startsWith('q '))).toMatch(/^q\s+1\/1\s+1\/1\s+1\/2\s+0 B\s+0 B\s+0\s+Active\s+/);
    expect(lines.find((l) => l.startsWith('bytes '))).toMatch(
      /^bytes\s+0\s+0\s+0\s+600 B\/1000 B\s+1\.2 KiB\/2\.0 KiB\s+0\s+Active/,
    );
    const d = await runCli(['describe', 'project', 'q'], { env });
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toMatch(/Name:\s+q/);
    expect(d.stdout).toMatch(/edges\s+1\/1/);
  });

  /** What the API shows of a project's objects and tokens (their statuses aside, which move with time). */
  async function snapshot(p: string) {
    const kinds = ['edges', 'workloads', 'placements', 'registries', 'dataobjects', 'agentupgrades', 'gitrepos'];
    const out: Record<string, unknown> = {};
    for (const k of kinds)
      out[k] = (await api('GET', `/api/v1/projects/${p}/${k}`)).json.items.map(({ status: _, ...o }: any) => o);
    out.tokens = (await api('GET', `/api/v1/tokens?project=${p}`)).json;
    out.blobs = (await api('GET', `/api/v1/projects/${p}/blobs`)).json;
    const { status: _, ...proj } = (await api('GET', `/api/v1/projects/${p}`)).json;
    out.project = proj;
    return out;
  }
});
