/**
 * A standby hub takes over (issue #22, the cold-standby half of test 2): hub A on PostgreSQL
 * serves an edge that lists A and B; A is killed -9; B, started on the same database with A's
 * identity files, becomes the edge's hub. B never served this edge: it writes the edge's spec from
 * the assignments in PostgreSQL before answering the edge (a new epoch), so the edge never sees an
 * empty spec and its workload runs on untouched (same process); its report comes over whole, and
 * new work applied through B reaches it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeLocal } from './fixtures/edge-local.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';
import { TEST_HOME_REDIAL, TEST_REPLICA_LEASE } from './fixtures/replicas.js';

const server = new TestPostgres();
let dir: string;
let pids: string;
let url: string;
let edge: Proc;
const hubs: HubProc[] = [];

async function placeAndWait(hub: HubProc, name: string): Promise<void> {
  const r = await hubApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      hostPod(name, 'sleep 3600', { pidDir: pids }),
      { kind: 'Placement', metadata: { name }, spec: { edges: ['e1'], workloads: [name] } },
    ],
  });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  await readyVia(hub, name);
}

async function readyVia(hub: HubProc, name: string): Promise<void> {
  await waitFor(
    async () =>
      (await hubApi(hub, 'GET', `/api/v1/projects/default/placements/${name}`)).json?.status?.summary?.ready === 1,
    { timeout: 60_000, what: `${name} Ready on e1 through ${hub.url}` },
  );
}

beforeAll(async () => {
  dir = tempDir('outpost-takeover-');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  await server.start();
  url = server.createDatabase('hub');
}, 90_000);

afterAll(async () => {
  await edge?.kill('SIGTERM').catch(() => undefined);
  for (const h of hubs) await h.proc.kill('SIGTERM').catch(() => undefined);
  killHostWorkloads(pids);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a standby hub on the same PostgreSQL', () => {
  it('takes over an edge after the first hub is killed: the workload runs on, new work arrives', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const dirA = path.join(dir, 'hub-a');
    const a = await startHubProc(dirA, portA, ['--insecure-http', '--database', url, ...TEST_REPLICA_LEASE]);
    hubs.push(a);
    const join = (await hubApi(a, 'POST', '/api/v1/tokens/join', { labels: { site: 'x' } })).json.token as string;
    const urlB = `http://127.0.0.1:${portB}`;
    edge = await startEdgeProc(path.join(dir, 'edge'), [
      '--hub',
      `${a.url},${urlB}`,
      '--join-token',
      join,
      '--name',
      'e1',
      '--driver',
      'process',
      ...TEST_HOME_REDIAL,
    ]);
    await placeAndWait(a, 'web');
    const pid = fs.readFileSync(path.join(pids, 'web.pid'), 'utf8').trim();

    await a.proc.kill('SIGKILL');
    // The standby gets the hub's identity (CA, keys, admin token), not its documents.
    const dirB = path.join(dir, 'hub-b');
    fs.mkdirSync(dirB);
    for (const f of fs.readdirSync(dirA))
      if (!f.startsWith('hub.db')) fs.cpSync(path.join(dirA, f), path.join(dirB, f), { recursive: true });
    const b = await startHubProc(dirB, portB, ['--insecure-http', '--database', url, ...TEST_REPLICA_LEASE]);
    hubs.push(b);

    await waitFor(
      async () => {
        const s = await edgeLocal(path.join(dir, 'edge'), '/status');
        return s.connection === 'connected' && s.hub === urlB;
      },
      { timeout: 60_000, what: 'the edge connected to the standby' },
    );
    await readyVia(b, 'web');
    await placeAndWait(b, 'api');
    // The workload placed through A was never stopped: the same process, still there.
    expect(fs.readFileSync(path.join(pids, 'web.pid'), 'utf8').trim()).toBe(pid);
    expect(() => process.kill(Number(pid), 0)).not.toThrow();
    const status = await edgeLocal(path.join(dir, 'edge'), '/status');
    expect(status.workloads.map((w: { name: string }) => w.name).sort()).toEqual(['api', 'web']);
  }, 180_000);
});
