/**
 * Tunnels across hub replicas (issue #22): two `outpost hub` processes on one throwaway PostgreSQL,
 * a real edge (process driver) connected to replica B only. Through replica A: the proxy (HTTP and
 * WebSocket), a browser proxy session, `outpost logs` (and --follow), `outpost exec` (output and
 * exit code) and the kube route (the process driver has no cluster API: the edge's own answer
 * proves the request reached it) are forwarded to B and work as on B. A client's made-up
 * forwarding header is refused. B killed: A answers 503 naming the edge and B at once, then, once
 * B's lease expired, "offline".
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureLogs } from '../core/logger.js';
import { startHub } from '../hub/hub.js';
import { ensureHubTls } from '../hub/tls.js';
import { signForward } from '../hub/tunnel/forward.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { ROOT, tempDir, waitFor } from './helpers.js';
import { cli, freePort, outpostArgs, Proc, startEdgeProc, startHubProc, type HubProc } from './procs.js';
import { TEST_REPLICA_LEASE } from './fixtures/replicas.js';

const server = new TestPostgres();
let dir: string;
let www: string;
let a: HubProc;
let b: HubProc;
let edge: Proc;
let bId: string;
const running: Proc[] = [];
const ports: Record<string, number> = {};
const CAP = 4;

const auth = (h: HubProc) => ({ authorization: `Bearer ${h.token}` });
const proxy = (h: HubProc, workload: string, p = '/') =>
  `${h.url}/api/v1/edges/e1/proxy/${workload}/${ports[workload]}${p}`;
const cliEnv = (h: HubProc) => ({
  OUTPOST_HUB: h.url,
  OUTPOST_TOKEN: h.token,
  OUTPOST_CONFIG: path.join(dir, 'none.json'),
});

async function metric(h: HubProc, name: string): Promise<number> {
  const text = await (await fetch(`${h.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(name) && !l.startsWith('#'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

beforeAll(async () => {
  dir = tempDir('outpost-replica-tunnel-');
  www = path.join(dir, 'www');
  fs.mkdirSync(www);
  fs.writeFileSync(path.join(www, 'index.html'), 'hello from the edge B serves\n');
  fs.writeFileSync(
    path.join(dir, 'echo.mjs'),
    `import { createRequire } from 'node:module';\nconst { WebSocketServer } = createRequire(${JSON.stringify(path.join(ROOT, 'package.json'))})('ws');\n` +
      `const wss = new WebSocketServer({ port: Number(process.argv[2]), host: '127.0.0.1' });\nwss.on('connection', (ws, req) => ws.on('message', (m) => ws.send('echo:' + m + ' at ' + req.url + ' for ' + req.headers['x-forwarded-for'])));\n`,
  );
  for (const n of ['web', 'wsecho']) ports[n] = await freePort();
  await server.start();
  const url = server.createDatabase('hub');
  // Their logs on (a child of vitest drops them otherwise): the forward is logged on both sides.
  const logs = { OUTPOST_TEST_LOG: '1' };
  a = await startHubProc(
    path.join(dir, 'hub-a'),
    await freePort(),
    ['--insecure-http', '--database', url, ...TEST_REPLICA_LEASE],
    logs,
  );
  running.push(a.proc);
  // B caps connections per address low: every forwarded request comes from A's address.
  b = await startHubProc(
    path.join(dir, 'hub-b'),
    await freePort(),
    ['--insecure-http', '--database', url, ...TEST_REPLICA_LEASE, '--max-connections-per-address', String(CAP)],
    logs,
  );
  // One admin token per database: A made it, and it works on B (B has no admin.token of its own).
  b = { ...b, token: a.token };
  running.push(b.proc);
  bId = server.sql(`SELECT id FROM hub_replicas WHERE url = '${b.url}'`, 'hub');
  expect(bId).toMatch(new RegExp(`:${b.proc.child.pid}:`));

  const join = (await hubApi(b, 'POST', '/api/v1/tokens/join', { labels: { site: 'b' } })).json.token as string;
  edge = await startEdgeProc(path.join(dir, 'edge'), [
    '--hub',
    b.url,
    '--join-token',
    join,
    '--name',
    'e1',
    '--driver',
    'process',
  ]);
  running.push(edge);
  // Applied through B, the replica that serves the edge (an apply on A reaching B's edges is the
  // lead's change propagation, not this test's subject).
  const applied = await hubApi(b, 'POST', '/api/v1/apply', {
    objects: [
      hostPod('web', `busybox httpd -f -p 127.0.0.1:${ports.web} -h ${www}`, { pidDir: www, port: ports.web }),
      hostPod('wsecho', `${process.execPath} ${path.join(dir, 'echo.mjs')} ${ports.wsecho}`, {
        pidDir: www,
        port: ports.wsecho,
      }),
      hostPod('ticker', "sh -c 'seq 1 100000 | while read n; do echo line-$n; sleep 0.2; done'", { pidDir: www }),
      {
        kind: 'Placement',
        metadata: { name: 'all' },
        spec: { edgeSelector: { matchLabels: { site: 'b' } }, workloads: ['web', 'wsecho', 'ticker'] },
      },
    ],
  });
  expect(applied.status, JSON.stringify(applied.json)).toBeLessThan(300);
  await waitFor(
    async () => (await hubApi(b, 'GET', '/api/v1/projects/default/placements/all')).json.status?.summary?.ready === 3,
    { timeout: 45_000, what: 'READY 3/3 on the edge B serves' },
  );
  await waitFor(() => server.sql("SELECT replica FROM edge_leases WHERE edge = 'e1'", 'hub') === bId, {
    what: "B holds e1's lease",
  });
}, 120_000);

afterAll(async () => {
  for (const p of running) await p.kill('SIGTERM').catch(() => undefined);
  killHostWorkloads(www);
  killHostWorkloads(path.join(dir, 'www-tls'));
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('tunnel requests through a replica that does not serve the edge', () => {
  it('the proxy: HTTP and a WebSocket through A reach the workload on the edge B serves', async () => {
    const res = await fetch(proxy(a, 'web', '/index.html'), { headers: auth(a) });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello from the edge B serves\n');
    // The edge's own refusal (an undeclared port) comes back through both replicas.
    const undeclared = await fetch(`${a.url}/api/v1/edges/e1/proxy/web/${ports.wsecho}/`, { headers: auth(a) });
    expect(undeclared.status).toBe(403);
    expect(((await undeclared.json()) as any).error.message).toMatch(/does not declare port/);

    const ws = new WebSocket(proxy(a, 'wsecho', '/chat?room=7').replace(/^http/, 'ws'), { headers: auth(a) });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const got = new Promise<string>((resolve) => ws.once('message', (m) => resolve(m.toString())));
    ws.send('hello');
    // X-Forwarded-For: the client (as A saw it), then A (as B saw it); all on loopback here.
    expect(await got).toBe('echo:hello at /chat?room=7 for 127.0.0.1, 127.0.0.1');
    ws.close();

    expect(await metric(a, 'outpost_hub_tunnel_forwarded_total{result="ok"}')).toBeGreaterThanOrEqual(3);
    // A logged where it sent them, B the forwarding replica next to the user and the target.
    const forwarded = a.proc.out
      .split('\n')
      .filter((l) => l.includes('tunnel request forwarded'))
      .map((l) => JSON.parse(l));
    expect(forwarded[0]).toMatchObject({ edge: 'e1', replica: bId, url: b.url });
    expect(forwarded[0].user).toEqual(expect.any(String));
    expect(forwarded[0].target).toMatch(/^proxy\/web\/\d+\/index.html GET$/);
    const aId = server.sql(`SELECT id FROM hub_replicas WHERE url = '${a.url}'`, 'hub');
    expect(b.proc.out).toContain(`"forwardedBy":"${aId}"`);
  });

  it('a proxy session made on A opens the app through A (link, cookie, page)', async () => {
    const made = await hubApi(a, 'POST', '/api/v1/edges/e1/proxy-session', { workload: 'web', port: ports.web });
    expect(made.status).toBe(201);
    const link = await fetch(`${a.url}${made.json.path}`, { redirect: 'manual' });
    expect(link.status).toBe(303);
    const cookie = link.headers.get('set-cookie')!.split(';')[0];
    const page = await fetch(`${a.url}${link.headers.get('location')}index.html`, { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('hello from the edge B serves\n');
  });

  it('outpost logs (--tail, --follow) and outpost exec through A', async () => {
    const tail = await cli(['logs', 'edge/e1', 'ticker', '--tail', '2'], cliEnv(a));
    expect(tail.code, tail.stderr).toBe(0);
    const lines = tail.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    const last = Number(/line-(\d+)/.exec(lines[1])?.[1]);
    const follow = new Proc(['logs', 'edge/e1', 'ticker', '--follow', '--tail', '1'], cliEnv(a));
    running.push(follow);
    await waitFor(() => [...follow.out.matchAll(/line-(\d+)/g)].some((m) => Number(m[1]) > last + 2), {
      timeout: 20_000,
      what: `a line after line-${last + 2} through A (got ${follow.out.slice(-200)})`,
    });
    await follow.kill('SIGTERM');

    const r = await cli(
      ['exec', 'edge/e1', 'web', '--', 'sh', '-c', 'echo out-$((40+2)); echo err >&2; exit 3'],
      cliEnv(a),
    );
    expect(r.stdout).toBe('out-42\n');
    expect(r.stderr).toContain('err');
    expect(r.code).toBe(3);
  });

  it('outpost exec -i through A: stdin in, output and exit code back (a WebSocket piped A <-> B)', async () => {
    const child = spawn(
      process.execPath,
      [
        ...outpostArgs(),
        'exec',
        'edge/e1',
        'web',
        '-i',
        '--',
        'sh',
        '-c',
        'n=0; while read l; do n=$((n+1)); done; echo "lines=$n"; exit 5',
      ],
      { cwd: ROOT, env: { ...process.env, OUTPOST_LOG_LEVEL: 'warn', ...cliEnv(a) }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const code = new Promise<number>((r) => child.on('exit', (c) => r(c ?? 1)));
    child.stdin.end('a\nb\nc\n');
    expect(await code).toBe(5);
    expect(out).toBe('lines=3\n');
  });

  it("more long streams through A than B's per-address cap: replica connections are not capped", async () => {
    const streams: AbortController[] = [];
    try {
      for (let i = 0; i < CAP + 2; i++) {
        const ac = new AbortController();
        streams.push(ac);
        const res = await fetch(`${a.url}/api/v1/edges/e1/logs/ticker?follow=true&tail=1`, {
          headers: auth(a),
          signal: ac.signal,
        });
        expect(res.status).toBe(200);
        const first = await res.body!.getReader().read();
        expect(Buffer.from(first.value!).toString()).toMatch(/line-\d+/);
      }
    } finally {
      for (const ac of streams) ac.abort();
    }
  });

  it('the kube route is forwarded too: the edge itself answers, as through B', async () => {
    const through = async (h: HubProc) => {
      const res = await fetch(`${h.url}/api/v1/edges/e1/kube/api/v1/namespaces`, { headers: auth(h) });
      return { status: res.status, body: (await res.json()) as any };
    };
    const viaA = await through(a);
    expect(viaA).toEqual(await through(b));
    expect(viaA.status).toBe(404);
    expect(viaA.body).toMatchObject({
      kind: 'Status',
      message: expect.stringMatching(/process driver: it has no Kubernetes API/),
    });
  });

  it("a client's forwarding header is refused, never forwarded", async () => {
    const before = await metric(a, 'outpost_hub_tunnel_forwarded_total');
    for (const [h, headers] of [
      [a, { 'x-outpost-forwarded-by': bId }],
      [a, { 'x-outpost-forwarded-by': bId, 'x-outpost-forward-signature': `t=${Date.now()};to=x;sig=AAAA` }],
      [b, { 'x-outpost-forwarded-by': 'me', 'x-outpost-forward-signature': `t=${Date.now()};to=${bId};sig=AAAA` }],
    ] as const) {
      const res = await fetch(proxy(h, 'web', '/index.html'), { headers: { ...auth(h), ...headers } });
      expect(res.status).toBe(401);
      expect(((await res.json()) as any).error.message).toMatch(/set only by hub replicas/);
    }
    // An upgrade with the claim is refused as well.
    const ws = new WebSocket(proxy(a, 'wsecho', '/').replace(/^http/, 'ws'), {
      headers: { ...auth(a), 'x-outpost-forwarded-by': bId },
    });
    const status = await new Promise<number>((resolve) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => resolve(101));
      ws.once('error', () => undefined);
    });
    expect(status).toBe(401);
    expect(await metric(a, 'outpost_hub_tunnel_forwarded_total')).toBe(before);
  });

  it('a forwarded request is checked again by the receiving replica and never forwarded again', async () => {
    // What a replica holds: the shared key, from the database.
    const key = Buffer.from(server.sql('SELECT key FROM hub_forward_key', 'hub'), 'base64');
    const aId = server.sql(`SELECT id FROM hub_replicas WHERE url = '${a.url}'`, 'hub');
    const p = `/api/v1/edges/e1/proxy/web/${ports.web}/index.html`;
    // Signed by A for B, with the user's token: served.
    const ok = await fetch(`${b.url}${p}`, { headers: { ...auth(b), ...signForward(key, aId, bId, 'GET', p) } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('hello from the edge B serves\n');
    // B checks the user again: a made-up token is refused though the signature is good.
    const bad = await fetch(`${b.url}${p}`, {
      headers: { authorization: 'Bearer outpost_api_made.up', ...signForward(key, aId, bId, 'GET', p) },
    });
    expect(bad.status).toBe(401);
    // Signed by B for A (as if B had forwarded it): A does not serve e1 and does not send it on.
    const before = await metric(a, 'outpost_hub_tunnel_forwarded_total');
    const loop = await fetch(`${a.url}${p}`, { headers: { ...auth(a), ...signForward(key, bId, aId, 'GET', p) } });
    expect(loop.status).toBe(503);
    expect(((await loop.json()) as any).error.message).toBe(
      `edge e1 is not connected to hub replica ${aId} any more (hub replica ${bId} forwarded the request here): it moved or went offline; try again`,
    );
    expect(await metric(a, 'outpost_hub_tunnel_forwarded_total')).toBe(before);
  });

  it('outpost hub refuses --advertise-url without --database, and one that is not an origin', async () => {
    const alone = await cli(['hub', '--data', path.join(dir, 'alone'), '--advertise-url', 'https://hub-1:7443']);
    expect(alone.code).not.toBe(0);
    expect(alone.stderr).toContain('--advertise-url needs --database');
    const bad = await cli([
      'hub',
      '--data',
      path.join(dir, 'alone'),
      '--database',
      'postgres://nobody@127.0.0.1:1/x',
      '--advertise-url',
      'https://hub-1:7443/outpost',
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--advertise-url https://hub-1:7443/outpost: give only https://HOST:PORT');
    const lease = await cli(['hub', '--data', path.join(dir, 'alone'), '--replica-lease', '5s']);
    expect(lease.code).toBe(2);
    expect(lease.stderr).toContain('--replica-lease needs --database');
    const short = await cli([
      'hub',
      '--data',
      path.join(dir, 'alone'),
      '--database',
      'postgres://nobody@127.0.0.1:1/x',
      '--replica-lease',
      '1s',
    ]);
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('--replica-lease 1s: give at least 3s');
  });

  it('B killed: A answers 503 naming the edge and B at once; once the lease expired, offline', async () => {
    await b.proc.kill('SIGKILL');
    const res = await fetch(proxy(a, 'web', '/index.html'), { headers: auth(a) });
    expect(res.status).toBe(503);
    const msg = ((await res.json()) as any).error.message as string;
    expect(msg).toContain(`edge e1 is served by hub replica ${bId}`);
    expect(msg).toContain('cannot be reached');
    const logs = await cli(['logs', 'edge/e1', 'ticker', '--tail', '1'], cliEnv(a));
    expect(logs.code).toBe(1);
    expect(logs.stderr).toContain(`hub replica ${bId}`);
    expect(await metric(a, 'outpost_hub_tunnel_forwarded_total{result="unreachable"}')).toBeGreaterThanOrEqual(2);
    // B's lease (and its row) expire: the edge is nobody's, so offline.
    await waitFor(
      async () => {
        const r = await fetch(proxy(a, 'web', '/index.html'), { headers: auth(a) });
        const body = (await r.json()) as any;
        return r.status === 503 && /^edge e1 is offline since/.test(body.error.message);
      },
      { timeout: 30_000, what: 'e1 offline once B is gone' },
    );
  }, 60_000);
});

/** A GET over TLS that trusts `ca` only. */
function httpsGet(url: string, headers: Record<string, string>, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { headers, ca }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

describe('between replicas over TLS (one hub identity: --identity-key)', () => {
  let ta: HubProc;
  let tb: HubProc;
  let webPort: number;
  let caFile: string;
  let tlsDatabase: string;
  let tlsKeyFile: string;

  beforeAll(async () => {
    const url = (tlsDatabase = server.createDatabase('hubtls'));
    const pids = path.join(dir, 'www-tls');
    fs.mkdirSync(pids);
    fs.writeFileSync(path.join(pids, 'index.html'), 'over TLS\n');
    // One hub identity for both (the CA sealed in the database with the key every replica is
    // given): B issues its own server certificate from the same CA.
    const keyFile = (tlsKeyFile = path.join(dir, 'identity.key'));
    fs.writeFileSync(keyFile, (await cli(['hub', 'identity-key'])).stdout, { mode: 0o600 });
    const flags = ['--database', url, '--identity-key', keyFile, ...TEST_REPLICA_LEASE];
    ta = await startHubProc(path.join(dir, 'tls-a'), await freePort(), flags);
    running.push(ta.proc);
    tb = await startHubProc(path.join(dir, 'tls-b'), await freePort(), flags);
    running.push(tb.proc);
    expect(tb.ca).toBe(ta.ca);
    caFile = path.join(dir, 'tls-a', 'tls', 'ca.pem');
    webPort = await freePort();

    const join = await httpsPost(tb, '/api/v1/tokens/join', { labels: { site: 't' } });
    running.push(
      await startEdgeProc(path.join(dir, 'edge-tls'), [
        '--hub',
        tb.url,
        '--join-token',
        join.token,
        '--name',
        't1',
        '--driver',
        'process',
      ]),
    );
    await httpsPost(tb, '/api/v1/apply', {
      objects: [
        hostPod('tweb', `busybox httpd -f -p 127.0.0.1:${webPort} -h ${pids}`, { pidDir: pids, port: webPort }),
        {
          kind: 'Placement',
          metadata: { name: 'tls' },
          spec: { edgeSelector: { matchLabels: { site: 't' } }, workloads: ['tweb'] },
        },
      ],
    });
    await waitFor(
      async () =>
        JSON.parse((await httpsGet(`${tb.url}/api/v1/projects/default/placements/tls`, auth(tb), tb.ca!)).body).status
          ?.summary?.ready === 1,
      { timeout: 45_000, what: 'READY 1/1 on the edge B serves' },
    );
  }, 90_000);

  /** A JSON POST over TLS to `h`, with its admin token. */
  function httpsPost(h: HubProc, p: string, body: unknown): Promise<any> {
    return new Promise((resolve, reject) => {
      const req = https.request(
        `${h.url}${p}`,
        { method: 'POST', ca: h.ca, headers: { ...auth(h), 'content-type': 'application/json' } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () =>
            (res.statusCode ?? 0) < 300
              ? resolve(JSON.parse(text))
              : reject(new Error(`${p}: ${res.statusCode} ${text}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
  }

  it('a replica started beside live ones with another --replica-lease warns, naming their lease, its own and the fix', async () => {
    const logs = captureLogs();
    const other = await startHub({
      dataDir: path.join(dir, 'tls-c'),
      listen: '127.0.0.1:0',
      insecureHttp: true,
      database: tlsDatabase,
      identityKeyFile: tlsKeyFile,
      replicaLeaseMs: 6_000,
    });
    try {
      const warned = logs.lines.filter((l) => l.includes('give every replica the same --replica-lease'));
      expect(warned.join('\n')).toContain(`(${ta.url}) runs with a lease of 5 s, this one with 6 s`);
      expect(warned.join('\n')).toContain(`(${tb.url}) runs with a lease of 5 s, this one with 6 s`);
    } finally {
      logs.stop();
      await other.close();
    }
  });

  it('A forwards to B over TLS, checking B against the hub CA', async () => {
    const r = await httpsGet(`${ta.url}/api/v1/edges/t1/proxy/tweb/${webPort}/index.html`, auth(ta), ta.ca!);
    expect(r).toEqual({ status: 200, body: 'over TLS\n' });
    const run = await cli(['exec', 'edge/t1', 'tweb', '--', 'sh', '-c', 'echo tls-$((6*7))'], {
      OUTPOST_HUB: ta.url,
      OUTPOST_TOKEN: ta.token,
      OUTPOST_CA: caFile,
      OUTPOST_CONFIG: path.join(dir, 'none.json'),
    });
    expect(run.stdout).toBe('tls-42\n');
    expect(run.code).toBe(0);
  });

  it("a replica whose certificate is not from the hub's CA is not trusted", async () => {
    // A TLS server with another CA's certificate for 127.0.0.1, put in B's place in hub_replicas.
    const other = await ensureHubTls(path.join(dir, 'other-ca'), { hosts: ['127.0.0.1'] });
    const impostor = https.createServer({ cert: other.certPem, key: other.keyPem }, (_req, res) => res.end('impostor'));
    await new Promise<void>((r) => impostor.listen(0, '127.0.0.1', r));
    const bUrl = tb.url;
    const fake = `https://127.0.0.1:${(impostor.address() as { port: number }).port}`;
    try {
      server.sql(`UPDATE hub_replicas SET url = '${fake}' WHERE url = '${bUrl}'`, 'hubtls');
      const r = await httpsGet(`${ta.url}/api/v1/edges/t1/proxy/tweb/${webPort}/index.html`, auth(ta), ta.ca!);
      expect(r.status).toBe(503);
      expect(JSON.parse(r.body).error.message).toMatch(
        new RegExp(
          `edge t1 is served by hub replica \\S+ \\(${fake.replace(/\./g, '\\.')}\\), which cannot be reached from this replica: \\w+: its certificate does not check out against this hub's CA`,
        ),
      );
    } finally {
      server.sql(`UPDATE hub_replicas SET url = '${bUrl}' WHERE url = '${fake}'`, 'hubtls');
      impostor.close();
    }
  });

  it('a replica that stops deletes its row; its edges are then offline on A at once', async () => {
    expect(server.sql('SELECT count(*) FROM hub_replicas', 'hubtls')).toBe('2');
    await tb.proc.kill('SIGTERM');
    expect(server.sql(`SELECT count(*) FROM hub_replicas WHERE url = '${tb.url}'`, 'hubtls')).toBe('0');
    const r = await httpsGet(`${ta.url}/api/v1/edges/t1/proxy/tweb/${webPort}/index.html`, auth(ta), ta.ca!);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body).error.message).toMatch(/^edge t1 is offline since/);
  });
});
