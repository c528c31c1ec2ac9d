/**
 * The tunnel with real processes (`outpost hub`, `outpost edge` with the process driver, the
 * `outpost` CLI): proxy to a workload's HTTP server and WebSocket, logs --follow, exec, remote
 * actions, a 50 MB download that does not hold up mailbox sync, many concurrent streams,
 * forbidden users, and an edge that disconnects mid-stream and then is offline.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { startFleet } from './fixtures/edge-procs.js';
import { ROOT, tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, type HubProc } from './procs.js';

let dir: string;
let www: string;
let hub: HubProc;
let edge: Proc;
const running: Proc[] = [];
const ports: Record<string, number> = {};
const BIG = 50 * 1024 * 1024;
let bigSha = '';

const pod = (name: string, command: string[], port?: number) => hostPod(name, command.join(' '), { pidDir: www, port });
const api = (method: string, p: string, body?: unknown, token = hub.token) => hubApi(hub, method, p, body, token);

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${hub.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(name) && !l.startsWith('#'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

const proxy = (workload: string, p = '/') => `${hub.url}/api/v1/edges/site-a/proxy/${workload}/${ports[workload]}${p}`;
const auth = () => ({ authorization: `Bearer ${hub.token}` });
const cliEnv = () => ({ OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token, OUTPOST_CONFIG: path.join(dir, 'none.json') });

async function workloadPhase(name: string): Promise<string | undefined> {
  const e = await api('GET', '/api/v1/projects/default/edges/site-a');
  return e.json.status?.workloads?.find((w: any) => w.name === name)?.state;
}

beforeAll(async () => {
  dir = tempDir();
  www = path.join(dir, 'www');
  fs.mkdirSync(www);
  fs.writeFileSync(path.join(www, 'index.html'), 'hello through the tunnel\n');
  // Incompressible and checkable: the download must arrive whole.
  const big = crypto.randomBytes(BIG);
  bigSha = crypto.createHash('sha256').update(big).digest('hex');
  fs.writeFileSync(path.join(www, 'big.bin'), big);
  fs.writeFileSync(
    path.join(dir, 'echo.mjs'),
    `import { createRequire } from 'node:module';\nconst { WebSocketServer } = createRequire(${JSON.stringify(path.join(ROOT, 'package.json'))})('ws');\n` +
      `const wss = new WebSocketServer({ port: Number(process.argv[2]), host: '127.0.0.1' });\nwss.on('connection', (ws, req) => ws.on('message', (m) => ws.send('echo:' + m + ' at ' + req.url)));\n`,
  );
  for (const n of ['web', 'wsecho', 'marker']) ports[n] = await freePort();
  ({ hub, edge } = await startFleet({
    dir,
    edgeName: 'site-a',
    labels: { site: 'a' },
    placement: 'all',
    ready: 3,
    objects: [
      pod('web', ['busybox', 'httpd', '-f', '-p', `127.0.0.1:${ports.web}`, '-h', www], ports.web),
      pod('wsecho', [process.execPath, path.join(dir, 'echo.mjs'), String(ports.wsecho)], ports.wsecho),
      pod('ticker', ['sh', '-c', "'seq 1 100000 | while read n; do echo line-$n; sleep 0.2; done'"]),
      {
        kind: 'Placement',
        metadata: { name: 'all' },
        spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['web', 'wsecho', 'ticker'] },
      },
    ],
  }));
  running.push(hub.proc, edge);
}, 90_000);

afterAll(async () => {
  for (const p of running) await p.kill('SIGTERM').catch(() => undefined);
  // Workloads outlive agents by design: stop what the test started.
  killHostWorkloads(www);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('tunnel (real hub, edge and CLI processes)', () => {
  it('the proxy reaches a workload HTTP server, and only its declared ports', async () => {
    const res = await fetch(proxy('web', '/index.html'), { headers: auth() });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello through the tunnel\n');
    const undeclared = await fetch(`${hub.url}/api/v1/edges/site-a/proxy/web/${ports.wsecho}/`, { headers: auth() });
    expect(undeclared.status).toBe(403);
    expect(((await undeclared.json()) as any).error.message).toMatch(/does not declare port/);
  });

  it('a WebSocket passes through the proxy', async () => {
    const ws = new WebSocket(proxy('wsecho', '/chat?room=1').replace(/^http/, 'ws'), { headers: auth() });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const got = new Promise<string>((resolve) => ws.once('message', (m) => resolve(m.toString())));
    ws.send('hello');
    expect(await got).toBe('echo:hello at /chat?room=1');
    ws.close();
  });

  it('outpost logs --follow sees new lines; --tail prints the last ones', async () => {
    const tail = await cli(['logs', 'edge/site-a', 'ticker', '--tail', '2'], cliEnv());
    expect(tail.code).toBe(0);
    const lines = tail.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    const last = Number(/line-(\d+)/.exec(lines[1])?.[1]);
    const follow = new Proc(['logs', 'edge/site-a', 'ticker', '--follow', '--tail', '1'], cliEnv());
    running.push(follow);
    await waitFor(() => [...follow.out.matchAll(/line-(\d+)/g)].some((m) => Number(m[1]) > last + 2), {
      timeout: 20_000,
      what: `a line after line-${last + 2} (got ${follow.out.slice(-200)})`,
    });
    await follow.kill('SIGTERM');
  });

  it('outpost logs --timestamps stamps each line; --since-time leaves out the lines before it', async () => {
    const stamped = async (extra: string[]): Promise<Array<{ ms: number; line: string }>> => {
      const r = await cli(['logs', 'edge/site-a', 'ticker', '--timestamps', ...extra], cliEnv());
      expect(r.code, r.stderr).toBe(0);
      return r.stdout
        .trim()
        .split('\n')
        .map((l) => {
          const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z) (line-\d+)$/.exec(l);
          expect(m, `an RFC 3339 stamp on "${l}"`).not.toBeNull();
          return { ms: Date.parse(m![1]), line: m![2] };
        });
    };
    // Wait until the log holds lines of two different times (the ticker writes five a second).
    const all = await waitFor(
      async () => {
        const l = await stamped([]);
        return l.some((x) => x.ms > l[0].ms) ? l : undefined;
      },
      { timeout: 20_000, what: 'lines written at two different times' },
    );
    const bound = all[0].ms + 1;
    const firstAfter = all.find((x) => x.ms >= bound)!;
    const since = await stamped(['--since-time', new Date(bound).toISOString()]);
    expect(since[0]).toEqual(firstAfter);
    expect(since.every((x) => x.ms >= bound)).toBe(true);
    expect(since.map((x) => x.line)).not.toContain(all[0].line);
    // A duration reaches back from now; plain output carries no stamps.
    const plain = await cli(['logs', 'edge/site-a', 'ticker', '--since', '1h', '--tail', '3'], cliEnv());
    expect(plain.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^line-\d+$/),
      expect.anything(),
      expect.anything(),
    ]);

    const bad = await cli(['logs', 'edge/site-a', 'ticker', '--since', '5'], cliEnv());
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--since 5: give a duration with a unit \(30s, 5m/);
    const badApi = await fetch(`${hub.url}/api/v1/edges/site-a/logs/ticker?sinceSeconds=0`, { headers: auth() });
    expect(badApi.status).toBe(400);
    expect(await badApi.text()).toContain('sinceSeconds: must be a whole number of seconds');
  });

  it('outpost exec runs a command and exits with its exit code', async () => {
    const r = await cli(
      ['exec', 'edge/site-a', 'web', '--', 'sh', '-c', 'echo out-$((40+2)); echo err >&2; exit 3'],
      cliEnv(),
    );
    expect(r.stdout).toBe('out-42\n');
    expect(r.stderr).toContain('err');
    expect(r.code).toBe(3);
    const missing = await cli(['exec', 'edge/site-a', 'nope', '--', 'true'], cliEnv());
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/workload nope does not run on this edge/);
  });

  it('outpost edge action stops, starts and restarts a workload, recorded as events', async () => {
    const stop = await cli(['edge', 'action', 'site-a', 'stop', 'ticker'], cliEnv());
    expect(stop.stderr).toBe('');
    expect(stop.code).toBe(0);
    await waitFor(async () => (await workloadPhase('ticker')) === 'Paused', { timeout: 20_000, what: 'ticker Paused' });
    // The reason names the cause and what runs it again.
    const held = await api('GET', '/api/v1/projects/default/edges/site-a');
    expect(held.json.status.workloads.find((w: any) => w.name === 'ticker').reason).toContain(
      'stopped by a remote action: `outpost edge action site-a start ticker` runs it again',
    );
    // The placement's rollout names it too, with the edge's own words.
    const rollout = await waitFor(
      async () => {
        const r = (await api('GET', '/api/v1/projects/default/placements/all')).json.status.rollout;
        return r?.phase === 'Paused' ? r : undefined;
      },
      { timeout: 20_000, what: 'the rollout held on site-a' },
    );
    expect(rollout.reason).toContain(
      'held on site-a (stopped by a remote action: `outpost edge action site-a start ticker` runs it again)',
    );
    expect((await cli(['edge', 'action', 'site-a', 'start', 'ticker'], cliEnv())).code).toBe(0);
    await waitFor(async () => ['Ready', 'Running'].includes((await workloadPhase('ticker')) ?? ''), {
      timeout: 20_000,
      what: 'ticker running again',
    });
    expect((await cli(['edge', 'action', 'site-a', 'restart', 'ticker'], cliEnv())).code).toBe(0);
    const ev = await api('GET', '/api/v1/projects/default/events?kind=Edge&name=site-a');
    const reasons = ev.json.items.map((e: any) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['RemoteStop', 'RemoteStart', 'RemoteRestart']));
    expect(ev.json.items.find((e: any) => e.reason === 'RemoteStop').message).toMatch(
      /stop of ticker on edge site-a by admin token/,
    );
  });

  it('a 50 MB download does not hold up mailbox sync for the same edge', async () => {
    const res = await fetch(proxy('web', '/big.bin'), { headers: auth() });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const hash = crypto.createHash('sha256');
    let got = 0;
    let syncDone = false;
    let bytesWhenSynced = -1;
    // The reader keeps pulling, but waits at the half-way mark until sync finished, so the download is
    // certainly in progress (socket buffers and tunnel windows full) while sync has to get through.
    const download = (async () => {
      for (;;) {
        if (got > BIG / 2) await waitFor(() => syncDone, { timeout: 60_000, what: 'mailbox sync during the download' });
        const { done, value } = await reader.read();
        if (done) return;
        got += value.length;
        hash.update(value);
      }
    })();
    // Mailbox sync both ways: a new workload goes to the edge in its spec, and its status comes back in the report.
    await api('POST', '/api/v1/apply', {
      objects: [
        pod('marker', ['sleep', '3600']),
        {
          kind: 'Placement',
          metadata: { name: 'all' },
          spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['web', 'wsecho', 'ticker', 'marker'] },
        },
      ],
    });
    await waitFor(async () => ['Ready', 'Running'].includes((await workloadPhase('marker')) ?? ''), {
      timeout: 30_000,
      what: 'marker status from the edge',
    });
    bytesWhenSynced = got;
    syncDone = true;
    await download;
    expect(bytesWhenSynced).toBeLessThan(BIG);
    expect(got).toBe(BIG);
    expect(hash.digest('hex')).toBe(bigSha);
  }, 90_000);

  it('many concurrent streams all complete, and the hub frees them', async () => {
    const bodies = await Promise.all(
      Array.from({ length: 64 }, () => fetch(proxy('web', '/index.html'), { headers: auth() }).then((r) => r.text())),
    );
    expect(new Set(bodies)).toEqual(new Set(['hello through the tunnel\n']));
    await waitFor(async () => (await metric('outpost_hub_tunnel_streams ')) === 0, { what: 'open streams back to 0' });
  });

  it('a forbidden user gets 403/404 and nothing reaches the edge', async () => {
    const viewer = (await api('POST', '/api/v1/tokens/api', { role: 'viewer', project: 'default' })).json.token;
    const other = (await api('POST', '/api/v1/tokens/api', { role: 'operator', project: 'elsewhere' })).json.token;
    const before = await metric('outpost_hub_tunnel_streams_total');
    const asViewer = await fetch(proxy('web', '/index.html'), { headers: { authorization: `Bearer ${viewer}` } });
    expect(asViewer.status).toBe(403);
    const execViewer = await api('POST', '/api/v1/edges/site-a/exec/web', { command: ['true'] }, viewer);
    expect(execViewer.status).toBe(403);
    const asOther = await fetch(proxy('web', '/index.html'), { headers: { authorization: `Bearer ${other}` } });
    expect(asOther.status).toBe(404);
    expect((await fetch(proxy('web', '/index.html'))).status).toBe(401);
    expect(await metric('outpost_hub_tunnel_streams_total')).toBe(before);
    // Reading logs is a read: the viewer may.
    const logs = await fetch(`${hub.url}/api/v1/edges/site-a/logs/ticker?tail=1`, {
      headers: { authorization: `Bearer ${viewer}` },
    });
    expect(logs.status).toBe(200);
    await logs.text();
  });

  it('the edge disconnecting mid-stream fails the client and frees the stream; then the edge is offline (503 at once)', async () => {
    const res = await fetch(proxy('web', '/big.bin'), { headers: auth() });
    const reader = res.body!.getReader();
    await reader.read();
    await waitFor(async () => (await metric('outpost_hub_tunnel_streams ')) === 1, { what: 'one open stream' });
    await edge.kill('SIGKILL');
    await expect(
      (async () => {
        for (;;) if ((await reader.read()).done) return 'complete';
      })(),
    ).rejects.toThrow();
    await waitFor(async () => (await metric('outpost_hub_tunnel_streams ')) === 0, {
      what: 'the hub to free the stream',
    });
    const off = await fetch(proxy('web', '/index.html'), { headers: auth() });
    expect(off.status).toBe(503);
    expect(((await off.json()) as any).error.message).toMatch(/^edge site-a is offline since \d{4}-\d\d-\d\dT/);
    const cliOff = await cli(['logs', 'edge/site-a', 'ticker'], cliEnv());
    expect(cliOff.code).toBe(1);
    expect(cliOff.stderr).toMatch(/edge site-a is offline since/);
  });
});
