/**
 * An edge given several hub URLs (issue #22: "a list of hub URLs in the edge config with
 * failover"), real processes: one hub reached through two proxies that a test cuts, as two
 * addresses of the hub's replicas would be. Enrollment goes through the first URL that answers;
 * a cut link moves the agent to the next URL, where it syncs on; a connection that merely ended
 * comes back to the same URL; `--hub` given again rewrites the
 * list. A bad URL in the list is refused naming it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeLocal } from './fixtures/edge-local.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, CuttableProxy, freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let edgeDir: string;
let pids: string;
let hub: HubProc;
let edge: Proc;
const proxies: CuttableProxy[] = [];
const via = (p: CuttableProxy) => `http://127.0.0.1:${p.port}`;

async function placeAndWait(name: string): Promise<void> {
  const r = await hubApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      hostPod(name, 'sleep 3600', { pidDir: pids }),
      { kind: 'Placement', metadata: { name }, spec: { edges: ['e1'], workloads: [name] } },
    ],
  });
  expect(r.status).toBe(200);
  await waitFor(
    async () =>
      (await hubApi(hub, 'GET', `/api/v1/projects/default/placements/${name}`)).json?.status?.summary?.ready === 1,
    { timeout: 60_000, what: `${name} Ready on e1` },
  );
}

/** The edge's own view: connected, and through which hub URL. */
async function connectedThrough(p: CuttableProxy): Promise<void> {
  await waitFor(
    async () => {
      const s = await edgeLocal(edgeDir, '/status');
      return s.connection === 'connected' && s.hub === via(p);
    },
    { timeout: 60_000, what: `the edge connected through ${via(p)}` },
  );
}

beforeAll(async () => {
  dir = tempDir('outpost-failover-');
  edgeDir = path.join(dir, 'edge');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  const port = await freePort();
  hub = await startHubProc(path.join(dir, 'hub'), port, ['--insecure-http']);
  for (let i = 0; i < 2; i++) {
    const p = new CuttableProxy(port);
    await p.listen();
    proxies.push(p);
  }
}, 60_000);

afterAll(async () => {
  await edge?.kill('SIGTERM').catch(() => undefined);
  await hub?.proc.kill('SIGTERM').catch(() => undefined);
  for (const p of proxies) await p.close();
  killHostWorkloads(pids);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('an edge with several hub URLs', () => {
  it('enrolls through the first that answers, and moves to the next when its link is cut', async () => {
    const [a, b] = proxies as [CuttableProxy, CuttableProxy];
    const join = (await hubApi(hub, 'POST', '/api/v1/tokens/join', { labels: { site: 'x' } })).json.token as string;
    a.sever();
    edge = await startEdgeProc(edgeDir, [
      '--hub',
      `${via(a)},${via(b)}`,
      '--join-token',
      join,
      '--name',
      'e1',
      '--driver',
      'process',
      // It leaves a URL whose link is cut after 5 s of dialling it, not 10 (its home window): longer
      // than the 2 s outage the third test makes it wait out.
      '--home-redial',
      '5s',
    ]);
    const cfg = JSON.parse(fs.readFileSync(path.join(edgeDir, 'edge.json'), 'utf8'));
    expect(cfg.hub).toBe(via(b));
    expect(cfg.hubs).toEqual([via(a), via(b)]);
    await connectedThrough(b);
    await placeAndWait('one');

    // b's link is cut: the agent moves to a (healed) and syncs on there.
    a.heal();
    b.sever();
    await connectedThrough(a);
    await placeAndWait('two');

    // And back.
    b.heal();
    a.sever();
    await connectedThrough(b);
    await placeAndWait('three');
    a.heal();
  }, 180_000);

  /** Cuts b's link for `awayMs` (its hub restarting; a answers all along): the edge comes back through b. */
  async function backThroughB(awayMs: number): Promise<void> {
    const [, b] = proxies as [CuttableProxy, CuttableProxy];
    await connectedThrough(b);
    const since = async () =>
      (await hubApi(hub, 'GET', '/api/v1/projects/default/edges/e1')).json?.status?.connectedSince as string;
    const before = await since();
    b.sever();
    if (awayMs) await new Promise((r) => setTimeout(r, awayMs));
    b.heal();
    await waitFor(async () => (await since()) !== undefined && (await since()) !== before, {
      timeout: 60_000,
      what: 'e1 connected again',
    });
    expect((await edgeLocal(edgeDir, '/status')).hub).toBe(via(b));
  }

  it('comes back to the same URL after a served connection ends, not the next one (its replica holds its documents)', async () => {
    // The connection ends (as when the hub restarts), and b answers again at once.
    await backThroughB(0);
  }, 90_000);

  it('keeps dialling its own URL while that hub restarts (its dials fail for 2 s), then comes back there, not to the next', async () => {
    await backThroughB(2_000);
  }, 90_000);

  it('takes a new list from --hub on a later start, keeping its credential', async () => {
    const [a] = proxies as [CuttableProxy];
    await edge.kill('SIGTERM');
    edge = await startEdgeProc(edgeDir, ['--hub', via(a)]);
    const cfg = JSON.parse(fs.readFileSync(path.join(edgeDir, 'edge.json'), 'utf8'));
    expect(cfg.hub).toBe(via(a));
    expect(cfg.hubs).toBeUndefined();
    await connectedThrough(a);
    await placeAndWait('four');
  }, 90_000);

  it('refuses a hub URL it cannot use, naming it', async () => {
    const r = await cli([
      'edge',
      '--data',
      path.join(dir, 'other'),
      '--hub',
      'https://ok.example:7443,ftp://bad',
      '--join-token',
      'opj1.x.y',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--hub ftp:\/\/bad: not a hub URL: use https:\/\/HOST:PORT \(several: /);
  }, 30_000);
});
