/**
 * A SQLite hub is its own only replica (issue #42, "hub replicas are invisible"), in-process with
 * an in-process edge agent and the CLI in-process: `outpost get replicas` lists it (alive, the
 * leader, the edge it serves), `describe edge` says it serves the edge and why each connection
 * ended. Connection history says who ended a connection and why: the agent stopped by an operator,
 * the hub stopped by an operator, a hub killed -9 (one spawned process, the only way to die
 * without recording anything), whose connection the next start ends so that none overlap; the
 * runs before are not listed as replicas.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { assertNoOverlap, connectionsOf } from './fixtures/connection-history.js';
import { adminApi, startProcessAgent, stopAgents } from './fixtures/in-process-fleet.js';
import { tempDir, waitFor } from './helpers.js';
import { startHubProc, type HubProc } from './procs.js';

let dir: string;
let dataDir: string;
let hub: Hub | undefined;
let spawned: HubProc | undefined;
let agent: EdgeAgent | undefined;
let join: string;
const EDGE = 's-e1';

const env = () => ({ OUTPOST_HUB: hub!.url, OUTPOST_TOKEN: hub!.adminToken });
const history = () => connectionsOf(hub!.url, hub!.adminToken, EDGE);

/** The hub in-process on the data directory, on `port` (0: any). */
async function startOn(port: number): Promise<Hub> {
  return startHub({ dataDir, listen: `127.0.0.1:${port}`, insecureHttp: true });
}

/** Waits until the agent is connected and the hub's newest connection of it is open, through `replica`. */
async function connectedThrough(replica: string): Promise<void> {
  await waitFor(
    async () => {
      if (agent?.sync.state !== 'connected') return false;
      const [newest] = await history();
      return newest?.disconnectedAt === undefined && newest?.servedBy?.replica === replica;
    },
    { timeout: 60_000, what: `${EDGE} connected through ${replica}` },
  );
}

beforeAll(async () => {
  dir = tempDir('outpost-replicas-single-');
  dataDir = path.join(dir, 'hub');
  hub = await startOn(0);
  join = (await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', { project: 'default', labels: {} }))
    .token;
  agent = await startProcessAgent(hub, dir, EDGE, join);
  await connectedThrough(hub.replicaId);
}, 60_000);

afterAll(async () => {
  if (agent) await stopAgents([agent]);
  await hub?.close().catch(() => undefined);
  await spawned?.proc.kill('SIGKILL').catch(() => undefined);
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('a SQLite hub is its one replica', () => {
  it('get replicas lists it alive, the leader, serving the edge; describe edge says it serves it', async () => {
    const id = hub!.replicaId;
    const table = await runCli(['get', 'replicas'], { env: env() });
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^CURRENT\s+REPLICA\s+URL\s+ALIVE\s+LEADER\s+EDGES\s+LAST HEARTBEAT$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(new RegExp(`^\\*\\s+${id}\\s+${hub!.url}\\s+yes\\s+yes\\s+1\\s+\\d+s ago$`));

    const json = await runCli(['get', 'replicas', '-o', 'json'], { env: env() });
    expect(JSON.parse(json.stdout).items).toEqual([
      expect.objectContaining({ id, url: hub!.url, alive: true, leader: true, self: true, edges: 1 }),
    ]);

    const who = await runCli(['whoami'], { env: env() });
    expect(who.stdout).toContain(`replica:  ${id} (${hub!.url})`);

    const d = await runCli(['describe', 'edge', EDGE], { env: env() });
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toMatch(new RegExp(`Served by:\\s+hub replica ${id} \\(${hub!.url}\\)`));
    expect(d.stdout).toMatch(
      /Connections \(newest first\):\n\s+CONNECTED\s+ENDED\s+DURATION\s+REPLICA\s+FROM\s+REASON/,
    );
    expect(d.stdout).toMatch(new RegExp(`\\(open\\)\\s+\\S+\\s+${hub!.url}\\s+127\\.0\\.0\\.1`));
  });

  it('the edge stopped by an operator: its connection ended saying so', async () => {
    await agent!.close('agent stopped by SIGTERM: an operator stop or restart');
    agent = await startProcessAgent(hub!, dir, EDGE, join);
    await connectedThrough(hub!.replicaId);
    const [, stopped] = await history();
    expect(stopped?.reason).toBe('closed by the edge (1001: agent stopped by SIGTERM: an operator stop or restart)');
    const d = await runCli(['describe', 'edge', EDGE], { env: env() });
    expect(d.stdout).toContain('closed by the edge (1001: agent stopped by SIGTERM: an operator stop or restart)');
    assertNoOverlap(await history());
  });

  it('the hub stopped by an operator: its connections ended saying so; the next run is the one replica', async () => {
    const before = hub!.replicaId;
    const port = hub!.port;
    await hub!.close('SIGTERM: an operator stop or restart');
    hub = await startOn(port);
    expect(hub.replicaId).not.toBe(before);
    await connectedThrough(hub.replicaId);
    const [, stopped] = await history();
    expect(stopped?.reason).toBe(`hub replica ${before} stopped (SIGTERM: an operator stop or restart)`);
    expect(stopped?.servedBy?.replica).toBe(before);
    const json = await runCli(['get', 'replicas', '-o', 'json'], { env: env() });
    expect(JSON.parse(json.stdout).items.map((r: { id: string }) => r.id)).toEqual([hub.replicaId]);
    assertNoOverlap(await history());
  });

  it('a hub killed -9 leaves its connection open; the next start ends it before the edge connects again', async () => {
    const port = hub!.port;
    await hub!.close();
    hub = undefined;
    spawned = await startHubProc(dataDir, port, ['--insecure-http']);
    const replicas = await fetch(`${spawned.url}/api/v1/replicas`, {
      headers: { authorization: `Bearer ${spawned.token}` },
    });
    const killedId = ((await replicas.json()) as { items: { id: string; self: boolean }[] }).items.find(
      (r) => r.self,
    )!.id;
    await waitFor(
      async () => {
        const [newest] = await connectionsOf(spawned!.url, spawned!.token, EDGE);
        return agent?.sync.state === 'connected' && newest?.servedBy?.replica === killedId && !newest.disconnectedAt;
      },
      { timeout: 60_000, what: `${EDGE} connected to the spawned hub` },
    );
    await spawned.proc.kill('SIGKILL');
    hub = await startOn(port);
    await connectedThrough(hub.replicaId);
    const items = await history();
    const killed = items.find((c) => c.servedBy?.replica === killedId)!;
    expect(killed.reason).toBe(`the hub (${killedId}) stopped without recording it: killed, or it crashed`);
    expect(killed.disconnectedAt).toBeDefined();
    assertNoOverlap(items);
    // Only the newest connection is open, and the replicas are this run alone.
    expect(items.filter((c) => c.disconnectedAt === undefined)).toHaveLength(1);
    const json = await runCli(['get', 'replicas', '-o', 'json'], { env: env() });
    expect(JSON.parse(json.stdout).items).toEqual([
      expect.objectContaining({ id: hub.replicaId, alive: true, leader: true, edges: 1 }),
    ]);
  }, 120_000);
});
