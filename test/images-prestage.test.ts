/**
 * Pre-staging images before a rollout switches (issue 19, tests 2 and 3), with real processes: a
 * hub, two podman edges each with its own image storage (as two sites would have), a private
 * registry (Debian's docker-registry, htpasswd, TLS from a test CA) holding images unique to this
 * test. The rollout has `prestage: true`: each edge fetches the layers it lacks over its own
 * connection, loads them into podman and reports them present; only then is it switched.
 *
 * - Test 2: staged while the rollout is paused; the registry is stopped and the hub killed after
 *   staging and before the switch; the restarted hub switches both edges, which reach Ready without
 *   any registry. Each blob crossed each edge's link once (the edge's transfer counts, per blob).
 * - Test 3: an edge offline during staging is staged when it returns and only then switched; a
 *   staging over the placement's budget is reported with the reason and the edges keep their version.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SKIP_PODMAN } from '../edge/drivers/podman/harness.js';
import { hubApi } from './fixtures/host-workloads.js';
import { PrestageSites } from './fixtures/prestage.js';
import { registryObject } from './fixtures/registry.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

const EDGES = ['pre-1', 'pre-2'] as const;
type EdgeN = (typeof EDGES)[number];

let dir: string;
let hub: HubProc;
let port: number;
let sites: PrestageSites<EdgeN>;
const edges = new Map<EdgeN, Proc>();
/** Every process each edge ran (edge 2 runs twice): their logs count the bytes moved. */
const edgeRuns = new Map<EdgeN, Proc[]>();
let join: string;

async function startEdge(e: EdgeN): Promise<void> {
  const conf = sites.storage(e).conf;
  const p = await startEdgeProc(
    path.join(dir, e),
    ['--hub', hub.url, '--join-token', join, '--name', e, '--driver', 'podman'],
    // Logs on (the edge's transfer counts are read from them) and this edge's own image storage.
    { OUTPOST_TEST_LOG: '1', CONTAINERS_STORAGE_CONF: conf },
  );
  edges.set(e, p);
  edgeRuns.set(e, [...(edgeRuns.get(e) ?? []), p]);
}

const apply = async (...objects: unknown[]) => {
  const r = await hubApi(hub, 'POST', '/api/v1/apply', { objects });
  expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
};
const edgeStatus = async (e: EdgeN): Promise<any> =>
  (await hubApi(hub, 'GET', `/api/v1/projects/default/edges/${e}`)).json.status;
const rollout = async (): Promise<any> =>
  (await hubApi(hub, 'GET', '/api/v1/projects/default/placements/p')).json.status?.rollout;
const appReady = async (e: EdgeN, tag: string) =>
  (await edgeStatus(e))?.workloads?.find((w: any) => w.name === 'app')?.state === 'Ready' &&
  (await sites.running(e)).join() === sites.pinnedOf(tag);
/** The staged-state of `image` as edge `e` reports it. */
const staged = async (e: EdgeN, image: string): Promise<any> =>
  (await edgeStatus(e))?.imageStaging?.images?.find((i: any) => i.image === image);

/** Per blob, the `moved` bytes of every `blob received` line in the logs of edge `e`'s processes. */
function movedByBlob(e: EdgeN): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const p of edgeRuns.get(e) ?? [])
    for (const line of p.out.split('\n')) {
      if (!line.includes('"blob received"')) continue;
      const j = JSON.parse(line) as { digest: string; moved: number };
      out.set(j.digest, [...(out.get(j.digest) ?? []), j.moved]);
    }
  return out;
}

beforeAll(async () => {
  if (SKIP_PODMAN) return;
  dir = tempDir();
  sites = new PrestageSites(dir, 'prestage', EDGES);
  // Images no host has: the edges' storages start empty anyway, and the pushes are checkable.
  await sites.start(['v1', 'v2', 'v3', 'v4']);
  port = await freePort();
  hub = await startHubProc(path.join(dir, 'hub'), port, ['--insecure-http']);
  join = (await hubApi(hub, 'POST', '/api/v1/tokens/join', { uses: 2 })).json.token;
  for (const e of EDGES) await startEdge(e);
}, 180_000);

afterAll(async () => {
  if (SKIP_PODMAN) return;
  for (const p of edges.values()) await p.kill('SIGTERM');
  await hub?.proc.kill('SIGTERM');
  await sites?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe.skipIf(SKIP_PODMAN)('pre-staging images before a rollout switches', () => {
  it('stages the first version into empty edges over their connection, then switches them', async () => {
    await apply(registryObject(sites.registry), sites.workload('v1'), sites.placement({}));
    for (const e of EDGES) await waitFor(() => appReady(e, 'v1'), { timeout: 120_000, what: `${e} Ready on v1` });
    for (const e of EDGES) {
      const s = await edgeStatus(e);
      expect(s.imageStaging.summary).toMatch(/^images staged 1\/1, [\d.]+ MB$/);
      expect(await staged(e, sites.pinnedOf('v1'))).toMatchObject({ state: 'Present' });
    }
  }, 240_000);

  it('test 2: staged while paused; registry gone and hub killed before the switch; both switch and reach Ready', async () => {
    await apply(sites.placement({ paused: true }));
    await apply(sites.workload('v2'));
    for (const e of EDGES)
      await waitFor(async () => (await staged(e, sites.pinnedOf('v2')))?.state === 'Present', {
        timeout: 120_000,
        what: `${e} to report v2 staged`,
      });
    // Staged, not switched: both still run v1; the placement counts the staged edges.
    for (const e of EDGES) expect(await sites.running(e)).toEqual([sites.pinnedOf('v1')]);
    await waitFor(
      async () =>
        /^images staged on 2\/2 edges, [\d.]+ MB of [\d.]+ MB$/.test(
          (await hubApi(hub, 'GET', '/api/v1/projects/default/placements/p')).json.status?.imageStaging?.summary,
        ),
      { timeout: 30_000, what: 'the placement to count 2/2 edges staged' },
    );
    const r = await rollout();
    expect(r.phase).toBe('Paused');

    // No registry from here on, and the hub dies before the switch.
    await sites.registry.stopServer();
    await hub.proc.kill('SIGKILL');
    hub = await startHubProc(path.join(dir, 'hub'), port, ['--insecure-http']);
    await apply(sites.placement({ paused: false }));
    for (const e of EDGES)
      await waitFor(() => appReady(e, 'v2'), { timeout: 120_000, what: `${e} Ready on v2 without a registry` });
    await waitFor(async () => (await rollout())?.phase === 'Complete', {
      timeout: 30_000,
      what: 'the rollout Complete',
    });

    // Each blob of both images (their base layer is shared) crossed each edge's link exactly once,
    // all its bytes, as the edge's transfer counted them.
    const blobs = (await hubApi(hub, 'GET', '/api/v1/projects/default/blobs')).json.items as {
      digest: string;
      size: number;
      references: string[];
    }[];
    const needed = new Map<string, number>();
    for (const tag of ['v1', 'v2']) {
      const ref = `Image/private/outpost-test/prestage:${sites.digests.get(tag)!.replace(':', '-')}`;
      const mine = blobs.filter((b) => b.references.includes(ref));
      expect(mine.length, `${tag}: blobs held by ${ref}`).toBeGreaterThanOrEqual(3);
      for (const b of mine) needed.set(b.digest, b.size);
    }
    for (const e of EDGES) {
      const moved = movedByBlob(e);
      for (const [digest, size] of needed) expect(moved.get(digest), `${e} ${digest}`).toEqual([size]);
    }
  }, 360_000);

  it('test 4: garbage collection removes the staged image once no revision on the edge references it', async () => {
    for (const e of EDGES)
      await waitFor(async () => (await sites.podman(e, ['image', 'exists', sites.pinnedOf('v1')])).code !== 0, {
        timeout: 60_000,
        what: `${e} to remove the v1 image`,
      });
    for (const e of EDGES) {
      expect((await sites.podman(e, ['image', 'exists', sites.pinnedOf('v2')])).code).toBe(0);
      expect(edges.get(e)!.out).toContain('"staged image removed: no workload on this edge uses it"');
    }
  }, 120_000);

  it('test 3: an edge offline during staging is staged when it returns, and only then switched', async () => {
    await edges.get('pre-2')!.kill('SIGTERM');
    await waitFor(async () => !(await edgeStatus('pre-2')).connectedSince, { timeout: 60_000, what: 'pre-2 offline' });
    // The registry is back for the hub to resolve v3 (the edges never reach it).
    await sites.registry.startServer();
    await apply(sites.workload('v3'));
    await waitFor(() => appReady('pre-1', 'v3'), { timeout: 120_000, what: 'pre-1 Ready on v3' });
    await sites.registry.stopServer();
    // pre-2 waits for its images, named in the rollout, and still runs v2.
    const r = await waitFor(
      async () => {
        const x = await rollout();
        return x?.counts?.waiting === 1 ? x : null;
      },
      { timeout: 30_000, what: 'the rollout waiting on pre-2' },
    );
    expect(r.reason).toMatch(/waiting on pre-2 for images staged 0\/1, 0\.0 MB/);
    await startEdge('pre-2');
    await waitFor(() => appReady('pre-2', 'v3'), { timeout: 120_000, what: 'pre-2 staged and switched to v3' });
    // Its log: the image staged before the workload was applied.
    const log = edges.get('pre-2')!.out.split('\n');
    const stagedAt = log.findIndex((l) => l.includes('"image staged"') && l.includes(sites.pinnedOf('v3')));
    const appliedAt = log.findIndex((l) => l.includes('"reconciled"') && /"applied":\[[^\]]*"app"/.test(l));
    expect(stagedAt).toBeGreaterThanOrEqual(0);
    expect(appliedAt).toBeGreaterThan(stagedAt);
  }, 360_000);

  it('test 3: a staging over the budget is reported with the reason and the edges keep their version', async () => {
    await sites.registry.startServer();
    await apply(sites.placement({ prestageBudget: '100' }), sites.workload('v4'));
    for (const e of EDGES)
      await waitFor(async () => (await staged(e, sites.pinnedOf('v4')))?.state === 'OverBudget', {
        timeout: 60_000,
        what: `${e} to report v4 over budget`,
      });
    const s = await staged('pre-1', sites.pinnedOf('v4'));
    expect(s.reason).toMatch(
      /needs \d+ bytes over this edge's link, more than placement default\/p's prestageBudget \(100\)/,
    );
    const r = await waitFor(
      async () => {
        const x = await rollout();
        return x?.counts?.waiting === 2 && String(x.reason).includes('over budget') ? x : null;
      },
      { timeout: 30_000, what: 'the rollout waiting on both edges, over budget' },
    );
    expect(r.reason).toMatch(/waiting on pre-1 for images staged 0\/1, [\d.]+ MB \(over budget: needs \d+ bytes/);
    expect((await hubApi(hub, 'GET', '/api/v1/projects/default/placements/p')).json.status.imageStaging).toMatchObject({
      summary: expect.stringMatching(/^images staged on 0\/2 edges, 0\.0 MB of [\d.]+ MB, 2 over budget$/),
      overBudget: 2,
    });
    // One OverBudget event per edge (issue 42), however many reports and passes that took. The
    // second edge's event can land a pass after the rollout shows both waiting: wait until both
    // edges have one, then there must be exactly one each.
    const overBudget = async () =>
      (await hubApi(hub, 'GET', '/api/v1/projects/default/events?kind=Placement&name=p&reason=OverBudget')).json
        .items as { message: string }[];
    const events = await waitFor(
      async () => {
        const items = await overBudget();
        return new Set(items.map((e) => e.message.split(' ')[1])).size === 2 ? items : null;
      },
      { timeout: 30_000, what: 'an OverBudget event for each edge' },
    );
    expect(events.map((e) => e.message.split(' ')[1]).sort()).toEqual(['pre-1', 'pre-2']);
    for (const e of EDGES) {
      expect(await sites.running(e)).toEqual([sites.pinnedOf('v3')]);
      expect((await edgeStatus(e)).workloads.find((w: any) => w.name === 'app').state).toBe('Ready');
    }
  }, 240_000);
});
