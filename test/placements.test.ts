/**
 * Placement rules with a real hub and three real edge agents (process driver, `sleep` workloads):
 * overlapping placements (refused at apply; an overlap that arises later through a label change is
 * held by the placement already there, the other reports the edge blocked, and deleting one
 * placement never takes away a workload another still selects), a placement naming a missing
 * workload, a selector that matches no edge, and `rollout.skipOfflineAfter`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { startJoinedEdge } from './fixtures/edge-procs.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let pids: string;
let hub: HubProc;
const edges: Record<string, Proc> = {};

/** A workload running `sleep` on the host; each copy leaves `<pids>/<name>.<pid>.pid` for cleanup. */
const sleeper = (name: string, version = 'v1') =>
  hostPod(name, 'sleep 3600', { pidDir: pids, pidPerCopy: true, env: [{ name: 'VERSION', value: version }] });

const placement = (name: string, spec: Record<string, unknown>) => ({ kind: 'Placement', metadata: { name }, spec });

const api = (method: string, p: string, body?: unknown) => hubApi(hub, method, p, body);
const apply = (...objects: unknown[]) => api('POST', '/api/v1/apply', { objects });
const getPlacement = async (name: string) => (await api('GET', `/api/v1/projects/default/placements/${name}`)).json;
const edgeWorkload = async (edge: string, workload: string) =>
  ((await api('GET', `/api/v1/projects/default/edges/${edge}`)).json.status?.workloads ?? []).find(
    (w: { name: string }) => w.name === workload,
  );
const rolloutIs = (name: string, phase: string) =>
  waitFor(
    async () => {
      const r = (await getPlacement(name)).status?.rollout;
      if (r?.phase === phase) return r;
      // Thrown, not returned: the timeout's message then says where the rollout stood.
      throw new Error(`rollout ${JSON.stringify(r ?? null)}`);
    },
    { timeout: 45_000, what: `placement ${name} ${phase}` },
  );

async function startEdge(name: string, labels: Record<string, string>): Promise<void> {
  edges[name] = await startJoinedEdge(hub, path.join(dir, name), name, { driver: 'process', labels });
}

beforeAll(async () => {
  dir = tempDir();
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http']);
  await Promise.all([startEdge('e1', { site: 'a' }), startEdge('e2', { site: 'a' }), startEdge('e3', { site: 'b' })]);
  await waitFor(
    async () => (await api('GET', '/api/v1/projects/default/edges?state=Online')).json.items?.length === 3,
    { timeout: 30_000, what: 'three edges online' },
  );
}, 120_000);

afterAll(async () => {
  for (const p of ['web-all', 'dup', 'other', 'skip']) await api('DELETE', `/api/v1/projects/default/placements/${p}`);
  await new Promise((r) => setTimeout(r, 1_500)); // let the edges stop what they run
  for (const e of Object.values(edges)) await e.kill('SIGTERM');
  await hub?.proc.kill('SIGTERM');
  killHostWorkloads(pids);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('overlapping placements', () => {
  it('refuses at apply a placement that would place a workload another placement places on the same edge', async () => {
    expect(
      (
        await apply(
          sleeper('web'),
          placement('web-all', { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['web'] }),
        )
      ).status,
    ).toBe(200);
    await rolloutIs('web-all', 'Complete');
    const r = await apply(placement('dup', { edges: ['e1', 'e2'], workloads: ['web'] }));
    expect(r.status).toBe(409);
    expect(r.json.error.message).toBe(
      "Placement dup: spec: overlaps placement web-all: both place workload web on edges e1, e2; narrow one placement's edgeSelector or edges, drop the workload from one, or delete placement web-all first",
    );
    expect(r.json.error.details[0]).toMatchObject({ index: 0, path: 'spec' });
    expect((await api('GET', '/api/v1/projects/default/placements/dup')).status).toBe(404);
    // A server dry run checks the same, and changes nothing either way.
    const dry = await api('POST', '/api/v1/apply?dryRun=true', {
      objects: [placement('dup', { edges: ['e1'], workloads: ['web'] })],
    });
    expect(dry.status).toBe(409);
    expect(dry.json.error.message).toMatch(/^Placement dup: spec: overlaps placement web-all/);
    // The same through PUT.
    expect(
      (
        await api(
          'PUT',
          '/api/v1/projects/default/placements/dup',
          placement('dup', { edges: ['e2'], workloads: ['web'] }),
        )
      ).status,
    ).toBe(409);
    // A placement of the same workload on other edges is fine.
    expect((await apply(placement('dup', { edges: ['e3'], workloads: ['web'] }))).status).toBe(200);
    await rolloutIs('dup', 'Complete');
  });

  it('an overlap arising later leaves the workload with the placement holding it, the other one is not Complete; deleting the holder hands it over', async () => {
    // e3 now matches web-all too, where dup already places web.
    expect(
      (
        await api('PUT', '/api/v1/projects/default/edges/e3', {
          kind: 'Edge',
          metadata: { name: 'e3', labels: { site: 'a' } },
        })
      ).status,
    ).toBe(200);
    const blocked = await rolloutIs('web-all', 'Failed');
    expect(blocked.reason).toMatch(
      /blocked on e3 \(web \(placement dup\)\): another placement holds the workload there/,
    );
    expect(blocked.counts).toMatchObject({ total: 3, ready: 2, blocked: 1 });
    expect((await edgeWorkload('e3', 'web')).placement).toBe('dup');

    expect((await api('DELETE', '/api/v1/projects/default/placements/dup')).status).toBe(200);
    await rolloutIs('web-all', 'Complete');
    const w = await waitFor(
      async () => {
        const w = await edgeWorkload('e3', 'web');
        return w?.placement === 'web-all' && w.state === 'Ready' ? w : null;
      },
      { timeout: 30_000, what: 'e3 running web for web-all' },
    );
    expect(w.observedGeneration).toBeGreaterThanOrEqual(w.generation);
    for (const e of ['e1', 'e2'])
      expect(await edgeWorkload(e, 'web')).toMatchObject({ placement: 'web-all', state: 'Ready' });
  });
});

describe('placements that cannot place anything', () => {
  it('refuses a placement naming a workload that does not exist, and accepts one whose workload comes later in the same request', async () => {
    const r = await apply(placement('other', { edges: ['e1'], workloads: ['nope'] }));
    expect(r.status).toBe(422);
    expect(r.json.error.details).toEqual([
      {
        index: 0,
        path: 'spec.workloads.0',
        message:
          'workload nope does not exist in project default: apply it first (the same file or request is fine) or fix the name',
      },
    ]);
    expect((await apply(placement('other', { edges: ['e1'], workloads: ['side'] }), sleeper('side'))).status).toBe(200);
    await rolloutIs('other', 'Complete');
  });

  it('reports a workload deleted later as an error on the placement', async () => {
    expect((await api('DELETE', '/api/v1/projects/default/workloads/side')).status).toBe(200);
    const r = await rolloutIs('other', 'Failed');
    expect(r.reason).toMatch(/^workload side not found in project default: apply it or remove it from the placement/);
  });

  it('warns at apply about a selector that matches no edge and shows it in status, instead of Complete', async () => {
    const r = await apply(placement('other', { edgeSelector: { matchLabels: { site: 'mars' } }, workloads: ['web'] }));
    expect(r.status).toBe(200);
    expect(r.json.warnings).toEqual([
      'Placement other selects no edge now: no approved, schedulable edge of project default matches edgeSelector site=mars; it places nothing until one does',
    ]);
    const dry = await api('POST', '/api/v1/apply?dryRun=true', {
      objects: [placement('later', { edgeSelector: { matchLabels: { site: 'venus' } }, workloads: ['web'] })],
    });
    expect(dry.json.warnings).toEqual([expect.stringMatching(/^Placement later selects no edge now/)]);
    expect((await api('GET', '/api/v1/projects/default/placements/later')).status).toBe(404);
    const st = await rolloutIs('other', 'Pending');
    expect(st.reason).toMatch(/^no edge selected/);
  });
});

describe('rollout.skipOfflineAfter', () => {
  it('leaves out an edge offline longer than the limit, says so, and rolls out to it when it is back', async () => {
    expect((await api('DELETE', '/api/v1/projects/default/placements/web-all')).status).toBe(200);
    expect((await api('DELETE', '/api/v1/projects/default/placements/other')).status).toBe(200);
    expect(
      (
        await apply(
          sleeper('job'),
          placement('skip', {
            edgeSelector: { matchLabels: { site: 'a' } },
            workloads: ['job'],
            rollout: { skipOfflineAfter: '2s' },
          }),
        )
      ).status,
    ).toBe(200);
    await rolloutIs('skip', 'Complete');
    await edges.e3.kill('SIGKILL');
    await waitFor(
      async () => (await api('GET', '/api/v1/projects/default/edges/e3')).json.status?.phase === 'Offline',
      {
        timeout: 45_000,
        what: 'e3 offline',
      },
    );
    expect((await apply(sleeper('job', 'v2'))).status).toBe(200);
    const done = await rolloutIs('skip', 'Complete');
    expect(done.reason).toBe('all 2 edges ready on the new version; skipped 1 edge offline longer than 2s: e3');
    expect(done.counts).toMatchObject({ total: 3, ready: 2, skipped: 1 });

    edges.e3 = await startEdgeProc(path.join(dir, 'e3'));
    const back = await waitFor(
      async () => {
        const r = (await getPlacement('skip')).status?.rollout;
        return r?.phase === 'Complete' && r.counts.ready === 3 ? r : null;
      },
      { timeout: 45_000, what: 'e3 back and updated' },
    );
    expect(back.reason).toBe('all 3 edges ready on the new version');
  });
});
