/**
 * Hub replicas made visible (issue #42, "hub replicas are invisible"): two replicas on one real
 * PostgreSQL, A spawned (the one killed -9) and B in-process, three in-process edge agents (the
 * process driver; no workload needed): e1 lists A then B, e2 B then A, e3 A only. The CLI runs
 * in-process.
 *
 * - `get replicas` lists both: alive, the edges each serves, the leader marked (the holder of the
 *   planning lock, as PostgreSQL shows it); `describe edge` says which replica serves it.
 * - kill -9 of A: it shows not alive at once, its edge e1 moves to B (B serves two), e1's history
 *   says failover from A to B with no overlap, and e3, which has nowhere to go, has its connection
 *   ended by the leader at the time A's lease expired.
 * - `outpost login` with A's and B's URLs keeps working with A down, saying B answered; a POST that
 *   could not reach A goes to B.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReplicaView } from '../core/api/views.js';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { newIdentityKey } from '../hub/identity/key.js';
import { runCli } from './fixtures/cli.js';
import { assertNoOverlap, connectionsOf } from './fixtures/connection-history.js';
import { hubApi } from './fixtures/host-workloads.js';
import { stopAgents } from './fixtures/in-process-fleet.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort, startHubProc, type HubProc } from './procs.js';
import { TEST_HOME_REDIAL_MS, TEST_REPLICA_LEASE, TEST_REPLICA_LEASE_MS } from './fixtures/replicas.js';

const server = new TestPostgres();
let dir: string;
let a: HubProc;
let b: Hub | undefined;
const agents = new Map<string, EdgeAgent>();

const viaB = () => ({ OUTPOST_HUB: b!.url, OUTPOST_TOKEN: b!.adminToken });
const bApi = () => ({ url: b!.url, token: b!.adminToken });

async function replicas(): Promise<ReplicaView[]> {
  const r = await runCli(['get', 'replicas', '-o', 'json'], { env: viaB() });
  if (r.code !== 0) throw new Error(`get replicas: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { items: ReplicaView[] }).items;
}

/** The replica holding the planning lock, by PostgreSQL's own view (its session's application_name). */
function leaderId(): string | undefined {
  const name = server.sql(
    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE 'outpost-hub %'",
    'hub',
  );
  return name ? name.replace(/^outpost-hub /, '') : undefined;
}

/** Waits until the agent of `edge` is connected through the hub at `url`. */
async function connectedTo(edge: string, url: string): Promise<void> {
  await waitFor(
    () => {
      const s = agents.get(edge)!.sync;
      return s.state === 'connected' && s.url.startsWith(url.replace(/^http/, 'ws'));
    },
    { timeout: 60_000, what: `${edge} connected to ${url}` },
  );
}

beforeAll(async () => {
  dir = tempDir('outpost-replicas-visible-');
  await server.start();
  const url = server.createDatabase('hub');
  // One hub identity for both (docs/operations.md, "HA and scale-out").
  const keyFile = path.join(dir, 'identity.key');
  fs.writeFileSync(keyFile, newIdentityKey(), { mode: 0o600 });
  a = await startHubProc(path.join(dir, 'hub-a'), await freePort(), [
    '--insecure-http',
    '--database',
    url,
    '--identity-key',
    keyFile,
    ...TEST_REPLICA_LEASE,
  ]);
  b = await startHub({
    dataDir: path.join(dir, 'hub-b'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    database: url,
    identityKeyFile: keyFile,
    replicaLeaseMs: TEST_REPLICA_LEASE_MS,
  });
  const join = (await hubApi(a, 'POST', '/api/v1/tokens/join', { labels: { fleet: 'v' }, uses: 3 })).json
    .token as string;
  for (const [edge, hubs] of [
    ['v-e1', `${a.url},${b.url}`],
    ['v-e2', `${b.url},${a.url}`],
    ['v-e3', a.url],
  ] as const)
    agents.set(
      edge,
      await startEdgeAgent({
        dataDir: path.join(dir, edge),
        hub: hubs,
        joinToken: join,
        name: edge,
        driver: 'process',
        heartbeatMs: 1_000,
        homeRedialMs: TEST_HOME_REDIAL_MS,
      }),
    );
  await connectedTo('v-e1', a.url);
  await connectedTo('v-e2', b.url);
  await connectedTo('v-e3', a.url);
}, 120_000);

afterAll(async () => {
  await stopAgents([...agents.values()]);
  await b?.close().catch(() => undefined);
  await a?.proc.kill('SIGTERM').catch(() => undefined);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('two hub replicas on one PostgreSQL, made visible', () => {
  it('get replicas lists both, alive, with the edges each serves and the leader; describe edge says who serves it', async () => {
    const items = await waitFor(
      async () => {
        const list = await replicas();
        const [ra, rb] = [list.find((r) => r.url === a.url), list.find((r) => r.url === b!.url)];
        return ra?.edges === 2 && rb?.edges === 1 && list.some((r) => r.leader) ? list : undefined;
      },
      { timeout: 30_000, what: 'A serving two edges, B one, one of them leading' },
    );
    expect(items).toHaveLength(2);
    const ra = items.find((r) => r.url === a.url)!;
    const rb = items.find((r) => r.url === b!.url)!;
    expect(ra).toMatchObject({ alive: true, self: false });
    expect(rb).toMatchObject({ id: b!.replicaId, alive: true, self: true });
    // Exactly one plans: the one PostgreSQL shows holding the lock.
    expect(items.filter((r) => r.leader).map((r) => r.id)).toEqual([leaderId()]);

    const table = await runCli(['get', 'replicas'], { env: viaB() });
    expect(table.stdout).toMatch(new RegExp(`^\\s+${ra.id}\\s+${a.url}\\s+yes\\s+(yes\\s+)?2\\s`, 'm'));
    expect(table.stdout).toMatch(new RegExp(`^\\*\\s+${rb.id}\\s+${b!.url}\\s+yes\\s+(yes\\s+)?1\\s`, 'm'));

    // Through B, an edge A serves: served by A.
    const d = await runCli(['describe', 'edge', 'v-e1'], { env: viaB() });
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toMatch(new RegExp(`Served by:\\s+hub replica ${ra.id} \\(${a.url}\\)`));
    const e2 = await runCli(['describe', 'edge', 'v-e2'], { env: viaB() });
    expect(e2.stdout).toMatch(new RegExp(`Served by:\\s+hub replica ${rb.id} \\(${b!.url}\\)`));
  }, 60_000);

  it('kill -9 of a replica: not alive, its edges move or end at its lease, history says failover without overlap', async () => {
    const aId = (await replicas()).find((r) => r.url === a.url)!.id;
    await a.proc.kill('SIGKILL');
    // Its database session went with it: not alive at once, well before its row expires.
    await waitFor(async () => (await replicas()).find((r) => r.id === aId)?.alive === false, {
      timeout: 10_000,
      what: 'A shown not alive',
    });
    // e1 moves to B (after its home redial); B plans now.
    await connectedTo('v-e1', b!.url);
    await waitFor(
      async () => {
        const list = await replicas();
        const [ra, rb] = [list.find((r) => r.id === aId), list.find((r) => r.id === b!.replicaId)];
        return ra?.edges === 0 && rb?.edges === 2 && rb.leader && !ra.leader;
      },
      { timeout: 60_000, what: 'A serving nothing, B two edges and leading' },
    );
    const table = await runCli(['get', 'replicas'], { env: viaB() });
    expect(table.stdout).toMatch(new RegExp(`^\\s+${aId}\\s+${a.url}\\s+no\\s+0\\s`, 'm'));

    const e1 = await connectionsOf(b!.url, b!.adminToken, 'v-e1');
    expect(e1[0]).toMatchObject({ servedBy: { replica: b!.replicaId, url: b!.url } });
    expect(e1[0]!.disconnectedAt).toBeUndefined();
    expect(e1[1]!.servedBy?.replica).toBe(aId);
    expect(e1[1]!.reason).toBe(
      `failover: hub replica ${aId} (${a.url}) stopped answering; the edge connected to hub replica ${b!.replicaId}`,
    );
    assertNoOverlap(e1);
    const d = await runCli(['describe', 'edge', 'v-e1'], { env: viaB() });
    expect(d.stdout).toMatch(new RegExp(`Served by:\\s+hub replica ${b!.replicaId} \\(${b!.url}\\)`));
    expect(d.stdout).toContain(`failover: hub replica ${aId}`);

    // e3 has only A: the leader ends its connection at the end of A's lease, so it does not stay open.
    const e3 = await waitFor(
      async () => {
        const items = await connectionsOf(b!.url, b!.adminToken, 'v-e3');
        return items[0]?.disconnectedAt ? items : undefined;
      },
      { timeout: 60_000, what: "e3's connection through A ended" },
    );
    expect(e3[0]!.reason).toBe(`hub replica ${aId} (${a.url}) stopped answering (its lease expired)`);
    expect(Date.parse(e3[0]!.disconnectedAt!)).toBeLessThanOrEqual(Date.now());
    const e3view = (await hubApi(bApi(), 'GET', '/api/v1/projects/default/edges/v-e3')).json;
    expect(e3view.status.servedBy).toBeUndefined();
    expect(e3view.status.connectedSince).toBeUndefined();
  }, 150_000);

  it('the CLI logged in to both URLs keeps working with the first down, and says which one answered', async () => {
    const config = path.join(dir, 'cli.json');
    const login = await runCli(['login', '--hub', `${a.url},${b!.url}`, '--token', b!.adminToken], {
      env: { OUTPOST_CONFIG: config },
    });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toContain(`logged in to ${a.url}, ${b!.url} (failing over in this order)`);
    expect(login.stderr).toMatch(
      new RegExp(`note: hub ${a.url} did not answer \\(ECONNREFUSED\\): answered by ${b!.url}`),
    );
    expect(JSON.parse(fs.readFileSync(config, 'utf8'))).toMatchObject({ hub: a.url, hubs: [a.url, b!.url] });

    const list = await runCli(['get', 'replicas'], { env: { OUTPOST_CONFIG: config } });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stderr).toContain(`answered by ${b!.url}`);
    expect(list.stdout).toMatch(new RegExp(`^\\*\\s+${b!.replicaId}\\s`, 'm'));
    // A POST that never reached A (refused) goes to B.
    const label = await runCli(['edge', 'label', 'v-e2', 'checked=yes'], { env: { OUTPOST_CONFIG: config } });
    expect(label.code, label.stderr).toBe(0);
    const e2 = (await hubApi(bApi(), 'GET', '/api/v1/projects/default/edges/v-e2')).json;
    expect(e2.metadata.labels.checked).toBe('yes');
  }, 60_000);
});
