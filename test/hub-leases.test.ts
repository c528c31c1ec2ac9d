/**
 * Edge leases (issue #22): two hub processes on one PostgreSQL, both running. An edge served by A
 * holds its lease in PostgreSQL; a newer connection of the same edge (its credential) to B takes
 * the lease, and A closes its own, older connection at its next renewal. The edge dials A again
 * and takes the lease back, and B closes the connection it had: one process serves each edge.
 */
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, encodeControl } from '../sync/messages.js';
import { edgeLocal } from './fixtures/edge-local.js';
import { hubApi } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

const server = new TestPostgres();
let dir: string;
let url: string;
let a: HubProc;
let b: HubProc;
let edge: Proc;

const holder = () => server.sql("SELECT replica FROM edge_leases WHERE edge = 'e1'", 'hub');
const pidOf = (h: HubProc) => String(h.proc.child.pid);

beforeAll(async () => {
  dir = tempDir('outpost-leases-');
  await server.start();
  url = server.createDatabase('hub');
  a = await startHubProc(path.join(dir, 'hub-a'), await freePort(), ['--insecure-http', '--database', url]);
  b = await startHubProc(path.join(dir, 'hub-b'), await freePort(), ['--insecure-http', '--database', url]);
}, 90_000);

afterAll(async () => {
  await edge?.kill('SIGTERM').catch(() => undefined);
  for (const h of [a, b]) await h?.proc.kill('SIGTERM').catch(() => undefined);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('edge leases between hub processes', () => {
  it('a newer connection on another process takes the lease; the older one is closed', async () => {
    const join = (await hubApi(a, 'POST', '/api/v1/tokens/join', { labels: { site: 'x' } })).json.token as string;
    const edgeDir = path.join(dir, 'edge');
    edge = await startEdgeProc(edgeDir, ['--hub', a.url, '--join-token', join, '--name', 'e1', '--driver', 'process']);
    await waitFor(async () => (await edgeLocal(edgeDir, '/status')).connection === 'connected', {
      what: 'e1 connected to A',
    });
    await waitFor(() => holder().split(':')[1] === pidOf(a), { what: "A holds e1's lease" });

    // The same edge (its credential) connects to B: a newer connection.
    const credential = JSON.parse(fs.readFileSync(path.join(edgeDir, 'edge.json'), 'utf8')).credential as string;
    const ws = new WebSocket(`${b.url.replace(/^http/, 'ws')}/api/v1/sync`, {
      headers: { authorization: `Bearer ${credential}` },
    });
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    ws.on('error', () => undefined);
    ws.on('open', () =>
      ws.send(encodeControl({ type: 'hello', protocol: PROTOCOL_VERSION, agentVersion: 'test', docs: [] })),
    );
    await waitFor(() => holder().split(':')[1] === pidOf(b), { what: "B took e1's lease" });

    // A closes its older connection at its next renewal (only a new handshake on A takes the lease
    // back); the agent dials A again and takes it, and B then closes the connection it had.
    await waitFor(() => holder().split(':')[1] === pidOf(a), { timeout: 30_000, what: "A holds e1's lease again" });
    expect(await closed).toBe(4001); // 'replaced'
    await waitFor(async () => (await edgeLocal(edgeDir, '/status')).connection === 'connected', {
      what: 'e1 connected to A again',
    });
  }, 120_000);
});
