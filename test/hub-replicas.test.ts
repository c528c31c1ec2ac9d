/**
 * Hub replicas (issue #22, tests 1, 3 and 2, in that order): three `outpost hub` processes on one PostgreSQL, six
 * real edges (process driver) spread over them, each given the three URLs starting with its own.
 *
 * - Test 1. A placement applied through replica 1 reaches READY 6/6 although two thirds of the edges are
 *    served by the other replicas (the leader plans, each replica writes its own edges' specs);
 *    `get placements` through each replica shows the same summary and rollout; `outpost logs` and
 *    `exec` through replica 3 reach an edge replica 1 serves.
 * - Test 3. PostgreSQL stopped for 20 s, with the three replicas: every replica answers 503, the edges
 *    keep running, and a change applied afterwards reaches all six edges without a restart.
 * - Test 2. A new version rolls out with maxUnavailable 2 (each edge needs ~3 s to be Ready again); the
 *    replica that plans is killed -9 in the middle. Its edges move to the others, another replica
 *    takes over the planning, and the rollout completes with never more than 2 edges unavailable
 *    at once across the fleet (sampled on the edges themselves); every object applied before the
 *    kill is there, and every edge's last report is projected.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeLocal } from './fixtures/edge-local.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { connectedTo, startReplicaEdges, startReplicas } from './fixtures/replicas.js';
import { fetchIdempotent, tempDir, waitFor } from './helpers.js';
import { cli, type HubProc, type Proc } from './procs.js';

const server = new TestPostgres();
const EDGES = ['r-e1', 'r-e2', 'r-e3', 'r-e4', 'r-e5', 'r-e6'];
let dir: string;
let pids: string;
let hubs: HubProc[] = [];
const edges = new Map<string, Proc>();
const edgeDir = (e: string) => path.join(dir, e);

/** A process workload that is Ready 3 s after it starts (an exec probe after initialDelaySeconds). */
const workload = (version: string, name = 'web') =>
  hostPod(name, 'sleep 3600', {
    pidDir: pids,
    pidPerCopy: true,
    env: [{ name: 'VERSION', value: version }],
    setup: 'echo started $$VERSION',
    readinessProbe: { exec: { command: ['true'] }, initialDelaySeconds: 3, periodSeconds: 1 },
  });

const placement = {
  apiVersion: 'outpost.dev/v1alpha1',
  kind: 'Placement',
  metadata: { name: 'web' },
  spec: { edgeSelector: { matchLabels: { fleet: 'r' } }, workloads: ['web'], rollout: { maxUnavailable: 2 } },
};

async function placementOn(h: HubProc): Promise<any> {
  return (await hubApi(h, 'GET', '/api/v1/projects/default/placements/web')).json;
}

/** The edge's own view of `web`: the generation it was told to run, and whether that one is Ready. */
async function localWeb(e: string): Promise<{ generation: number; ready: boolean } | undefined> {
  const s = await edgeLocal(edgeDir(e), '/status').catch(() => undefined);
  const w = s?.workloads?.find((x: { name: string }) => x.name === 'web');
  if (!w) return undefined;
  return {
    generation: w.generation,
    ready: w.status?.phase === 'Ready' && w.status.observedGeneration === w.generation,
  };
}

/** The replica holding the leader's advisory lock (its session's application_name names its pid). */
function leaderOf(): HubProc | undefined {
  const name = server.sql(
    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE 'outpost-hub %'",
    'hub',
  );
  const pid = name.split(':')[1];
  return hubs.find((h) => h.proc.alive && String(h.proc.child.pid) === pid);
}

beforeAll(async () => {
  dir = tempDir('outpost-replicas-');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  await server.start();
  const url = server.createDatabase('hub');
  // One hub identity for the three (docs/operations.md, "HA and scale-out").
  const keyFile = path.join(dir, 'identity.key');
  fs.writeFileSync(keyFile, (await cli(['hub', 'identity-key'])).stdout, { mode: 0o600 });
  hubs = await startReplicas(dir, 3, url, ['--identity-key', keyFile]);
  await startReplicaEdges(hubs, EDGES, { fleet: 'r' }, edgeDir, edges);
  // Two edges on each replica.
  for (const [i, e] of EDGES.entries())
    await connectedTo(edgeDir(e), hubs[i % 3]!, `${e} connected to replica ${(i % 3) + 1}`);
}, 180_000);

afterAll(async () => {
  for (const p of edges.values()) await p.kill('SIGTERM').catch(() => undefined);
  killHostWorkloads(pids);
  for (const h of hubs) await h.proc.kill('SIGTERM').catch(() => undefined);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('three hub replicas on one PostgreSQL', () => {
  it('a placement applied through replica 1 reaches READY 6/6; every replica shows the same summary', async () => {
    const r = await hubApi(hubs[0], 'POST', '/api/v1/apply', { objects: [workload('v1'), placement] });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    await waitFor(async () => (await placementOn(hubs[0]))?.status?.summary?.ready === 6, {
      timeout: 90_000,
      what: 'web READY 6/6',
    });
    for (const e of EDGES) expect((await localWeb(e))?.ready).toBe(true);
    // The same summary and rollout through each replica: two of them do not plan, and show what
    // the leader recorded.
    await waitFor(
      async () => {
        const views = await Promise.all(hubs.map((h) => placementOn(h)));
        return views.every(
          (v) =>
            v.status.summary.ready === 6 &&
            v.status.summary.total === 6 &&
            v.status.rollout?.phase === 'Complete' &&
            v.status.selectedEdges === 6,
        );
      },
      { timeout: 30_000, what: 'the same summary through each replica' },
    );
    // The CLI through replica 3.
    const out = await cli(['get', 'placements'], { OUTPOST_HUB: hubs[2].url, OUTPOST_TOKEN: hubs[2].token });
    expect(out.stderr).toBe('');
    expect(out.stdout).toMatch(/web\s.*6\/6/);

    // logs and exec through replica 3 reach an edge replica 1 serves (forwarded between replicas).
    const env = { OUTPOST_HUB: hubs[2].url, OUTPOST_TOKEN: hubs[2].token };
    const logs = await cli(['logs', 'edge/r-e1', 'web'], env);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain('started v1');
    const ex = await cli(['exec', 'edge/r-e1', 'web', '--', 'sh', '-c', 'echo on-$VERSION; exit 4'], env);
    expect(ex.stdout).toBe('on-v1\n');
    expect(ex.code).toBe(4);
    expect(leaderOf()).toBeDefined();
  }, 150_000);

  it('PostgreSQL stopped for 20 s: every replica answers 503, the edges run on; afterwards a change reaches all six without a restart', async () => {
    const workloads = fs
      .readdirSync(pids)
      .filter((f) => f.endsWith('.pid'))
      .map((f) => Number(fs.readFileSync(path.join(pids, f), 'utf8')));
    expect(workloads.length).toBeGreaterThanOrEqual(6);
    await server.stop();
    const stoppedAt = Date.now();
    for (const h of hubs) {
      const ready = await fetchIdempotent(`${h.url}/readyz`);
      expect(ready.status).toBe(503);
      const api = await hubApi(h, 'GET', '/api/v1/projects/default/placements');
      expect(api.status).toBe(503);
      expect(JSON.stringify(api.json)).toMatch(/the database at postgres:\/\/.*unreachable/);
    }
    await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + 20_000 - Date.now())));
    for (const pid of workloads) expect(() => process.kill(pid, 0)).not.toThrow();
    for (const h of hubs) expect(h.proc.alive).toBe(true);

    await server.start();
    for (const h of hubs)
      await waitFor(async () => (await fetchIdempotent(`${h.url}/readyz`)).status === 200, {
        what: 'every replica ready again',
      });
    // A change applied through replica 2 reaches the edges of all three (the replicas' sessions,
    // and the planner's lock, came back by themselves).
    const r = await hubApi(hubs[1], 'POST', '/api/v1/apply', {
      objects: [
        workload('v1', 'side'),
        { ...placement, metadata: { name: 'side' }, spec: { ...placement.spec, workloads: ['side'] } },
      ],
    });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    await waitFor(
      async () =>
        (await hubApi(hubs[2], 'GET', '/api/v1/projects/default/placements/side')).json?.status?.summary?.ready === 6,
      { timeout: 90_000, what: 'side READY 6/6 after the outage' },
    );
    expect(leaderOf()).toBeDefined();
  }, 180_000);

  it('kill -9 of the planning replica mid-rollout: the rollout completes, maxUnavailable 2 held fleet-wide, nothing lost', async () => {
    const leader = leaderOf()!;
    const survivors = hubs.filter((h) => h !== leader);
    const gen1 = (await localWeb(EDGES[0]))!.generation;
    // Objects applied (through a replica that is not the leader) before the kill.
    const r = await hubApi(survivors[0], 'POST', '/api/v1/apply', {
      objects: [
        workload('v2'),
        {
          apiVersion: 'outpost.dev/v1alpha1',
          kind: 'Edge',
          metadata: { name: 'r-e1', labels: { fleet: 'r', marked: 'yes' } },
        },
      ],
    });
    expect(r.status).toBe(200);

    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const views = await Promise.all(EDGES.map((e) => localWeb(e)));
        const unavailable = views.filter((v) => v && v.generation > gen1 && !v.ready).length;
        most = Math.max(most, unavailable);
        await new Promise((res) => setTimeout(res, 200));
      }
    })();
    // Mid-rollout: at least one edge moved to the new version, not all of them.
    await waitFor(
      async () => {
        const views = await Promise.all(EDGES.map((e) => localWeb(e)));
        return views.some((v) => v && v.generation > gen1);
      },
      { timeout: 60_000, what: 'the rollout under way' },
    );
    await leader.proc.kill('SIGKILL');

    // Another replica plans now, and the rollout completes.
    await waitFor(() => survivors.includes(leaderOf()!), {
      timeout: 30_000,
      what: 'a surviving replica took over the planning',
    });
    await waitFor(
      async () => {
        const views = await Promise.all(EDGES.map((e) => localWeb(e)));
        if (views.every((v) => v && v.generation > gen1 && v.ready)) return true;
        // Named in the timeout: which edge runs what, and the rollout as the leader recorded it.
        const leading = leaderOf();
        const rollout = leading && (await placementOn(leading).catch(() => undefined))?.status?.rollout?.reason;
        throw new Error(
          `${EDGES.map((e, i) => `${e} ${views[i] ? `gen ${views[i].generation}${views[i].ready ? ' ready' : ''}` : '-'}`).join(', ')}; rollout: ${rollout}`,
        );
      },
      { timeout: 120_000, what: 'every edge Ready on the new version' },
    );
    sampling = false;
    await sampler;
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);

    for (const h of survivors) {
      await waitFor(
        async () => {
          const v = await placementOn(h);
          return v.status.summary.ready === 6 && v.status.rollout?.phase === 'Complete';
        },
        { timeout: 30_000, what: 'READY 6/6 and Complete through each surviving replica' },
      );
      // Every object applied before the kill is there.
      const w = (await hubApi(h, 'GET', '/api/v1/projects/default/workloads/web')).json;
      expect(JSON.stringify(w.spec.manifests)).toContain('v2');
      const e1 = (await hubApi(h, 'GET', '/api/v1/projects/default/edges/r-e1')).json;
      expect(e1.metadata.labels.marked).toBe('yes');
      // Every edge's last report is projected: Ready at the generation the edge runs.
      for (const e of EDGES) {
        const view = (await hubApi(h, 'GET', `/api/v1/projects/default/edges/${e}`)).json;
        const w2 = view.status.workloads.find((x: { name: string }) => x.name === 'web');
        expect(w2.state).toBe('Ready');
        expect(w2.observedGeneration).toBe((await localWeb(e))!.generation);
      }
    }
  }, 240_000);
});
