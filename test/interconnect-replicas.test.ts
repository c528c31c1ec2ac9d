/**
 * Interconnect across hub replicas (docs/interconnect.md, "Hub replicas"): two `outpost hub`
 * processes on one throwaway PostgreSQL, a consuming edge `r-a` connected to replica A only and a
 * serving edge `r-b` connected to replica B only (real `outpost edge` processes, process driver).
 * A client on r-a's site gets its bytes echoed by the workload on r-b's: A relays the connection to
 * B (a signed upgrade), which opens the stream to r-b. The replicas' route refuses anyone without a
 * replica's signature.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort, Proc, startEdgeProc, startHubProc, type HubProc } from './procs.js';

const server = new TestPostgres();
let dir: string;
let www: string;
let a: HubProc;
let b: HubProc;
const running: Proc[] = [];
let echoPort: number;
let importPort: number;
const CAP = 4;

/** Connects, writes `data`, half-closes, and reads until the peer ends or resets. */
function exchange(port: number, data: Buffer): Promise<{ got: Buffer; error?: string }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const sock = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    let error: string | undefined;
    sock.on('connect', () => sock.end(data));
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', (err) => (error = (err as NodeJS.ErrnoException).code ?? err.message));
    sock.on('close', () => resolve({ got: Buffer.concat(chunks), ...(error ? { error } : {}) }));
  });
}

const leaseOf = (edge: string) => server.sql(`SELECT replica FROM edge_leases WHERE edge = '${edge}'`, 'hub');
const replicaId = (h: HubProc) => server.sql(`SELECT id FROM hub_replicas WHERE url = '${h.url}'`, 'hub');

beforeAll(async () => {
  dir = tempDir('outpost-interconnect-replicas-');
  www = path.join(dir, 'www');
  fs.mkdirSync(www);
  [echoPort, importPort] = [await freePort(), await freePort()];
  fs.writeFileSync(
    path.join(dir, 'echo.js'),
    `require('net').createServer({ allowHalfOpen: true }, (s) => { s.on('error', () => undefined); s.pipe(s); }).listen(${echoPort}, '127.0.0.1');\n`,
  );
  await server.start();
  const url = server.createDatabase('hub');
  a = await startHubProc(path.join(dir, 'hub-a'), await freePort(), ['--insecure-http', '--database', url]);
  running.push(a.proc);
  // B caps connections per address low: every relayed connection comes from A's address.
  b = await startHubProc(path.join(dir, 'hub-b'), await freePort(), [
    '--insecure-http',
    '--database',
    url,
    '--max-connections-per-address',
    String(CAP),
  ]);
  b = { ...b, token: a.token };
  running.push(b.proc);
  for (const [hub, name, role] of [
    [a, 'r-a', 'consumer'],
    [b, 'r-b', 'server'],
  ] as const) {
    const join = (await hubApi(hub, 'POST', '/api/v1/tokens/join', { labels: { role } })).json.token as string;
    running.push(
      await startEdgeProc(path.join(dir, name), [
        '--hub',
        hub.url,
        '--join-token',
        join,
        '--name',
        name,
        '--driver',
        'process',
      ]),
    );
  }
  await waitFor(() => leaseOf('r-a') === replicaId(a) && leaseOf('r-b') === replicaId(b), {
    what: 'A holding r-a and B holding r-b',
    timeout: 30_000,
  });
  // The workload through B (the replica serving its edge), the network objects through A (the
  // consuming edge's): each replica plans from the objects both read.
  const placed = await hubApi(b, 'POST', '/api/v1/apply', {
    objects: [
      hostPod('echo', `${process.execPath} ${path.join(dir, 'echo.js')}`, { pidDir: www, port: echoPort }),
      {
        kind: 'Placement',
        metadata: { name: 'echo' },
        spec: { edgeSelector: { matchLabels: { role: 'server' } }, workloads: ['echo'] },
      },
    ],
  });
  expect(placed.status, JSON.stringify(placed.json)).toBeLessThan(300);
  const wired = await hubApi(a, 'POST', '/api/v1/apply', {
    objects: [
      { kind: 'ServiceExport', metadata: { name: 'echo' }, spec: { workload: 'echo', port: echoPort } },
      {
        kind: 'ServiceImport',
        metadata: { name: 'echo' },
        spec: { export: 'echo', port: importPort, edgeSelector: { matchLabels: { role: 'consumer' } } },
      },
    ],
  });
  expect(wired.status, JSON.stringify(wired.json)).toBeLessThan(300);
  await waitFor(
    async () => (await hubApi(a, 'GET', '/api/v1/projects/default/serviceexports/echo')).json.status?.healthy === 1,
    { what: 'the echo workload Ready on r-b', timeout: 60_000 },
  );
  await waitFor(
    async () => (await hubApi(a, 'GET', '/api/v1/projects/default/serviceimports/echo')).json.status?.listening === 1,
    { what: 'r-a listening', timeout: 30_000 },
  );
}, 180_000);

afterAll(async () => {
  for (const p of running) await p.kill('SIGTERM').catch(() => undefined);
  killHostWorkloads(www);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('interconnect across hub replicas', () => {
  it('relays a connection from the edge replica A holds to the serving edge replica B holds', async () => {
    const big = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 13 + (i >> 10)) & 0xff;
    const r = await exchange(importPort, big);
    expect(r.error).toBeUndefined();
    expect(r.got.equals(big)).toBe(true);
    // A spliced it (its counts), and r-a reported the connection made.
    const served = (await hubApi(a, 'GET', '/api/v1/projects/default/serviceexports/echo')).json.status.serving[0];
    expect(served).toMatchObject({ edge: 'r-b', total: 1, failed: 0 });
    await waitFor(
      async () => {
        const e = (await hubApi(a, 'GET', '/api/v1/projects/default/serviceimports/echo')).json.status.edges[0];
        return e.total >= 1 && e.open === 0 && e.failed === 0 && e.refused === 0 && e.bytesIn === big.length;
      },
      { what: "the connection in r-a's report", timeout: 15_000 },
    );
  });

  it("holds more connections through B at once than B's per-address cap (A's relayed ones are exempt)", async () => {
    // One after another (a burst of new ones past the cap is refused at accept, before they are
    // known as A's), then all held open together and used again.
    const socks: net.Socket[] = [];
    const say = (s: net.Socket, t: string) =>
      new Promise<string>((resolve, reject) => {
        s.once('data', (c) => resolve(c.toString()));
        s.once('close', () => reject(new Error(`closed before the echo of ${t}`)));
        s.write(t);
      });
    try {
      for (let i = 0; i < CAP * 2; i++) {
        const s = await new Promise<net.Socket>((resolve, reject) => {
          const c = net.connect({ host: '127.0.0.1', port: importPort }, () => resolve(c));
          c.once('error', reject);
        });
        socks.push(s);
        expect(await say(s, `open ${i}`)).toBe(`open ${i}`);
      }
      expect(await Promise.all(socks.map((s, i) => say(s, `again ${i}`)))).toEqual(socks.map((_, i) => `again ${i}`));
    } finally {
      for (const s of socks) s.destroy();
    }
  });

  it("refuses the replicas' route to a client without a replica's signature", async () => {
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${b.url}/api/v1/replicas/interconnect/r-b/default/echo`, {
        headers: { connection: 'Upgrade', upgrade: 'outpost-interconnect', authorization: `Bearer ${b.token}` },
      });
      req.on('upgrade', (_r, s) => {
        s.destroy();
        reject(new Error('upgraded without a signature'));
      });
      req.on('response', (r) => {
        let body = '';
        r.on('data', (c) => (body += c));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(res.status).toBe(403);
    expect(res.body).toMatch(/for hub replicas relaying interconnect connections/);
  });
});
