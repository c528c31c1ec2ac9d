/**
 * Metrics with a real hub process and a real edge agent (process driver): the hub's /metrics and
 * the edge's own page fetched through the hub (`/api/v1/edges/NAME/metrics`) both pass
 * `promtool check metrics` (Debian's prometheus package, installed by build/setup.sh), and carry
 * what an operator graphs: per placement ready/total/broken and rollout phase, edges by state,
 * last-seen age, sync and tunnel bytes.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let pids: string;
let hub: HubProc;
let edge: Proc;

const sleeper = () => ({
  kind: 'Workload',
  metadata: { name: 'idle' },
  spec: {
    manifests: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'idle' },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'main',
              image: 'localhost/outpost-busybox:latest',
              command: ['sh', '-c', `echo $$$$ > ${pids}/idle.$$$$.pid && exec sleep 3600`],
            },
          ],
        },
      },
    ],
  },
});

/** `promtool check metrics` on a page: its exit code and what it said. */
function promtool(page: string): { code: number | null; out: string } {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: page, encoding: 'utf8' });
  if (r.error)
    throw new Error(`promtool not runnable (${r.error.message}): run build/setup.sh (Debian package prometheus)`);
  return { code: r.status, out: `${r.stdout}${r.stderr}`.trim() };
}

/** The value of one series (`name{labels}` exactly as printed), or undefined. */
function value(page: string, series: string): number | undefined {
  const line = page.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

beforeAll(async () => {
  dir = tempDir();
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http']);
  const join = await hubApi(hub, 'POST', '/api/v1/tokens/join', { labels: { site: 'a' } });
  edge = await startEdgeProc(path.join(dir, 'e1'), [
    '--hub',
    hub.url,
    '--join-token',
    join.json.token,
    '--name',
    'e1',
    '--driver',
    'process',
  ]);
  const r = await hubApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      sleeper(),
      { kind: 'Placement', metadata: { name: 'idle' }, spec: { edges: ['e1'], workloads: ['idle'] } },
    ],
  });
  expect(r.status).toBe(200);
  await waitFor(
    async () =>
      (await hubApi(hub, 'GET', '/api/v1/projects/default/placements/idle')).json.status?.rollout?.phase === 'Complete',
    {
      timeout: 45_000,
      what: 'placement idle Complete',
    },
  );
}, 120_000);

afterAll(async () => {
  await hubApi(hub, 'DELETE', '/api/v1/projects/default/placements/idle');
  await new Promise((r) => setTimeout(r, 1_000));
  await edge?.kill('SIGTERM');
  await hub?.proc.kill('SIGTERM');
  killHostWorkloads(pids);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('metrics', () => {
  it("the hub's /metrics passes promtool and says what an operator graphs", async () => {
    const page = await (await fetch(`${hub.url}/metrics`)).text();
    expect(promtool(page)).toEqual({ code: 0, out: '' });
    const p = '{project="default",placement="idle"}';
    expect(value(page, `outpost_hub_placement_workloads${p}`)).toBe(1);
    expect(value(page, `outpost_hub_placement_workloads_ready${p}`)).toBe(1);
    expect(value(page, `outpost_hub_placement_workloads_broken${p}`)).toBe(0);
    expect(value(page, `outpost_hub_placement_selected_edges${p}`)).toBe(1);
    expect(
      value(page, 'outpost_hub_placement_rollout_phase{project="default",placement="idle",phase="Complete"}'),
    ).toBe(1);
    expect(
      value(page, 'outpost_hub_placement_rollout_phase{project="default",placement="idle",phase="Progressing"}'),
    ).toBe(0);
    expect(value(page, 'outpost_hub_edges_by_state{state="Online"}')).toBe(1);
    expect(value(page, 'outpost_hub_edges_by_state{state="Offline"}')).toBe(0);
    expect(value(page, 'outpost_hub_edge_last_seen_age_seconds{project="default",edge="e1"}')).toBeLessThan(60);
    expect(value(page, 'outpost_hub_sync_received_bytes_total')).toBeGreaterThan(0);
    expect(value(page, 'outpost_hub_sync_sent_bytes_total')).toBeGreaterThan(0);
    expect(page).not.toMatch(/_total gauge|nodejs_active_handles_total/);
  });

  it("serves the edge's own metrics through the hub, clean under promtool, and counts the tunnel bytes", async () => {
    expect((await fetch(`${hub.url}/api/v1/edges/e1/metrics`)).status).toBe(401);
    const res = await fetch(`${hub.url}/api/v1/edges/e1/metrics`, {
      headers: { authorization: `Bearer ${hub.token}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const page = await res.text();
    expect(value(page, 'outpost_edge_connected')).toBe(1);
    expect(promtool(page)).toEqual({ code: 0, out: '' });
    const hubPage = await (await fetch(`${hub.url}/metrics`)).text();
    expect(value(hubPage, 'outpost_hub_tunnel_bytes_total{direction="from_edge"}')).toBeGreaterThanOrEqual(page.length);
    expect(value(hubPage, 'outpost_hub_tunnel_streams_total{type="metrics"}')).toBe(1);
  });

  it('answers 503 naming the edge for an offline one, and 404 for an unknown one', async () => {
    const auth = { headers: { authorization: `Bearer ${hub.token}` } };
    expect((await fetch(`${hub.url}/api/v1/edges/nope/metrics`, auth)).status).toBe(404);
    await edge.kill('SIGKILL');
    const r = await waitFor(
      async () => {
        const res = await fetch(`${hub.url}/api/v1/edges/e1/metrics`, auth);
        return res.status === 503 ? ((await res.json()) as { error: { message: string } }) : null;
      },
      { timeout: 30_000, what: '503 for the offline edge' },
    );
    expect(r.error.message).toMatch(/^edge e1 is offline since /);
    const page = await (await fetch(`${hub.url}/metrics`)).text();
    expect(value(page, 'outpost_hub_edges_by_state{state="Offline"}')).toBe(1);
    expect(promtool(page)).toEqual({ code: 0, out: '' });
  });
});
