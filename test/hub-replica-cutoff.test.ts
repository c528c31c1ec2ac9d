/**
 * A hub replica cut off from PostgreSQL for longer than its lease (issue #42): two replicas on one
 * real PostgreSQL, A spawned and reaching it through a TCP proxy the test cuts (A's database client
 * waits synchronously: the proxy must not share its event loop), B in-process, and an in-process
 * edge agent that lists A then B. While A is away (no session, its row expired) the planning replica
 * ends the connection A left open in the tables, at the end of A's lease, so the edge does not show
 * connected through a replica taken for dead. When A is back the edge is recorded anew through A,
 * with no two of its connections overlapping: A closes the connection it finds no longer recorded
 * (hub/replicas/membership.test.ts proves that step alone), unless the edge gave up on A already (A's
 * event loop waits on its database calls while it is away, and may miss the edge's pings).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReplicaView } from '../core/api/views.js';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { newIdentityKey } from '../hub/identity/key.js';
import { assertNoOverlap, connectionsOf } from './fixtures/connection-history.js';
import { adminApi, stopAgents } from './fixtures/in-process-fleet.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir, waitFor } from './helpers.js';
import { CuttableProxy, freePort, startHubProc, type HubProc } from './procs.js';
import { TEST_REPLICA_LEASE, TEST_REPLICA_LEASE_MS } from './fixtures/replicas.js';

const server = new TestPostgres();
let dir: string;
let proxy: CuttableProxy;
let a: HubProc | undefined;
/** A's id among the replicas (as B lists it). */
let aId: string;
let b: Hub | undefined;
let agent: EdgeAgent | undefined;
const EDGE = 'c-e1';

const history = () => connectionsOf(b!.url, b!.adminToken, EDGE);

beforeAll(async () => {
  dir = tempDir('outpost-replica-cutoff-');
  await server.start();
  server.createDatabase('hub');
  proxy = new CuttableProxy(server.port);
  await proxy.listen();
  // One identity for the two replicas, as docs/operations.md sets them up (one admin token too).
  const identityKeyFile = path.join(dir, 'identity.key');
  fs.writeFileSync(identityKeyFile, newIdentityKey(), { mode: 0o600 });
  a = await startHubProc(path.join(dir, 'hub-a'), await freePort(), [
    '--insecure-http',
    '--database',
    `postgres://${server.role}@127.0.0.1:${proxy.port}/hub`,
    '--identity-key',
    identityKeyFile,
    ...TEST_REPLICA_LEASE,
  ]);
  b = await startHub({
    dataDir: path.join(dir, 'hub-b'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    database: server.url('hub'),
    identityKeyFile,
    replicaLeaseMs: TEST_REPLICA_LEASE_MS,
  });
  aId = (await adminApi<{ items: ReplicaView[] }>(b, 'GET', '/api/v1/replicas')).items.find(
    (r) => r.url === a!.url,
  )!.id;
  const join = await adminApi<{ token: string }>(b, 'POST', '/api/v1/tokens/join', { project: 'default' });
  agent = await startEdgeAgent({
    dataDir: path.join(dir, EDGE),
    hub: `${a.url},${b.url}`,
    joinToken: join.token,
    name: EDGE,
    driver: 'process',
    heartbeatMs: 1_000,
  });
  await waitFor(async () => agent!.sync.state === 'connected' && (await history())[0]?.servedBy?.replica === aId, {
    timeout: 60_000,
    what: `${EDGE} connected through A`,
  });
}, 120_000);

afterAll(async () => {
  if (agent) await stopAgents([agent]);
  proxy?.heal();
  await b?.close().catch(() => undefined);
  await a?.proc.kill('SIGTERM').catch(() => undefined);
  await proxy?.close();
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('a replica cut off from its database past its lease', () => {
  it('its connections end at its lease while it is away, and come back recorded when it returns', async () => {
    proxy.sever();
    const replicaA = async () =>
      (await adminApi<{ items: ReplicaView[] }>(b!, 'GET', '/api/v1/replicas')).items.find((r) => r.id === aId);
    await waitFor(async () => (await replicaA())?.alive === false, { timeout: 15_000, what: 'A shown not alive' });
    // The planning replica (B: A lost its session, and the lock with it) ends A's connection once
    // A's lease expired: the edge, still connected to A, is not recorded as connected through it.
    const ended = await waitFor(
      async () => {
        const [newest] = await history();
        return newest?.disconnectedAt ? newest : undefined;
      },
      { timeout: 60_000, what: "A's connection ended in the tables" },
    );
    expect(ended.servedBy?.replica).toBe(aId);
    expect(ended.reason).toBe(`hub replica ${aId} (${a!.url}) stopped answering (its lease expired)`);
    const view = await adminApi(b!, 'GET', `/api/v1/projects/default/edges/${EDGE}`);
    expect(view.status.servedBy).toBeUndefined();

    proxy.heal();
    // A renews and closes the connection no longer recorded (or the edge left it meanwhile): the
    // edge comes back to A (its home URL) and is recorded anew.
    await waitFor(
      async () => {
        const [newest] = await history();
        return (
          agent!.sync.state === 'connected' &&
          newest?.disconnectedAt === undefined &&
          newest?.servedBy?.replica === aId &&
          Date.parse(newest.connectedAt) > Date.parse(ended.disconnectedAt!)
        );
      },
      { timeout: 60_000, what: `${EDGE} recorded connected through A again` },
    ).catch(async (err: Error) => {
      // Seen twice in full runs on a loaded machine (2026-12-07), never alone: say what A and the
      // edge were doing, so the next failure explains itself.
      const tail = (a!.proc.out + a!.proc.err).split('\n').slice(-40).join('\n');
      throw new Error(
        `${err.message}\nedge: ${agent!.sync.state}; history: ${JSON.stringify((await history()).slice(0, 3))}\nA's last log lines:\n${tail}`,
      );
    });
    const back = await adminApi(b!, 'GET', `/api/v1/projects/default/edges/${EDGE}`);
    expect(back.status.phase).toBe('Online');
    expect(back.status.servedBy).toEqual({ replica: aId, url: a!.url });
    assertNoOverlap(await history());
    await waitFor(async () => (await replicaA())?.alive, { timeout: 20_000, what: 'A shown alive again' });
  }, 150_000);
});
