/**
 * The tunnel's interactive and stateful parts with real processes (`outpost hub`, `outpost edge`
 * with the process driver, the `outpost` CLI): `outpost exec -it` with stdin from a pipe, browser
 * sessions for the service proxy (link -> cookie -> pages and WebSockets, scoped to one port,
 * expiring), and a remote `stop` that holds across a kill -9 of the agent.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { startFleet } from './fixtures/edge-procs.js';
import { ROOT, tempDir, waitFor } from './helpers.js';
import { cli, freePort, outpostArgs, Proc, startEdgeProc, type HubProc } from './procs.js';

let dir: string;
let www: string;
let hub: HubProc;
let edge: Proc;
const running: Proc[] = [];
const ports: Record<string, number> = {};

// The pid file lets the test see whether (and when) the workload was started, and clean up.
const pod = (name: string, command: string, port?: number) =>
  hostPod(name, command, { pidDir: www, port, env: [{ name: 'GREETING', value: `hello from ${name}` }] });
const api = (method: string, p: string, body?: unknown, token = hub.token) => hubApi(hub, method, p, body, token);

const cliEnv = () => ({ OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token, OUTPOST_CONFIG: path.join(dir, 'none.json') });

async function workloadState(name: string): Promise<string | undefined> {
  const e = await api('GET', '/api/v1/projects/default/edges/site-b');
  return e.json.status?.workloads?.find((w: any) => w.name === name)?.state;
}

function pidOf(name: string): number {
  return Number(fs.readFileSync(path.join(www, `${name}.pid`), 'utf8'));
}

function alive(pid: number): boolean {
  try {
    // A zombie is not running: the supervisor may not have reaped it yet.
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** `outpost exec ... -i` with a piped stdin: the test types into it and reads what comes back. */
function interactive(args: string[]) {
  const child = spawn(process.execPath, [...outpostArgs(), 'exec', ...args], {
    cwd: ROOT,
    env: { ...process.env, OUTPOST_LOG_LEVEL: 'warn', ...cliEnv() },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const s = { out: '', err: '', child, code: new Promise<number>((r) => child.on('exit', (c) => r(c ?? 1))) };
  child.stdout.on('data', (c: Buffer) => (s.out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (s.err += c.toString()));
  return s;
}

/** Follows a proxy link by hand, as a browser would: the cookie it sets and where it redirects. */
async function openLink(
  url: string,
): Promise<{ status: number; location: string | null; setCookie: string; cookie: string }> {
  const res = await fetch(url, { redirect: 'manual' });
  await res.text();
  const setCookie = res.headers.get('set-cookie') ?? '';
  return { status: res.status, location: res.headers.get('location'), setCookie, cookie: setCookie.split(';')[0] };
}

beforeAll(async () => {
  dir = tempDir();
  www = path.join(dir, 'www');
  fs.mkdirSync(www);
  fs.writeFileSync(path.join(www, 'index.html'), 'hello through a browser session\n');
  // Echoes the message and the Cookie header it got: the hub must pass the app's cookies and keep its own.
  fs.writeFileSync(
    path.join(dir, 'echo.mjs'),
    `import { createRequire } from 'node:module';\nconst { WebSocketServer } = createRequire(${JSON.stringify(path.join(ROOT, 'package.json'))})('ws');\n` +
      `const wss = new WebSocketServer({ port: Number(process.argv[2]), host: '127.0.0.1' });\nwss.on('connection', (ws, req) => ws.on('message', (m) => ws.send('echo:' + m + ' cookie:' + (req.headers.cookie ?? ''))));\n`,
  );
  for (const n of ['web', 'wsecho', 'marker']) ports[n] = await freePort();
  ({ hub, edge } = await startFleet({
    dir,
    edgeName: 'site-b',
    labels: { site: 'b' },
    placement: 'b',
    ready: 3,
    objects: [
      pod('web', `busybox httpd -f -p 127.0.0.1:${ports.web} -h ${www}`, ports.web),
      pod('wsecho', `${process.execPath} ${path.join(dir, 'echo.mjs')} ${ports.wsecho}`, ports.wsecho),
      pod('sleeper', 'sleep 3600'),
      {
        kind: 'Placement',
        metadata: { name: 'b' },
        spec: { edgeSelector: { matchLabels: { site: 'b' } }, workloads: ['web', 'wsecho', 'sleeper'] },
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

describe('outpost exec -it (process driver, through hub and edge)', () => {
  it('a shell reads lines from stdin, answers on stdout and stderr, and its exit code is the CLI exit code', async () => {
    const sh = interactive(['edge/site-b', 'web', '-it', '--', 'sh']);
    try {
      sh.child.stdin.write('echo "$GREETING in $(pwd)"; echo out-$((6*7))\n');
      await waitFor(() => /out-42/.test(sh.out), {
        timeout: 20_000,
        what: `the shell's answer (stdout: ${sh.out}, stderr: ${sh.err})`,
      });
      // The container's env and workingDir, not the agent's.
      expect(sh.out).toMatch(new RegExp(`^hello from web in ${path.join(dir, 'edge')}/\\S*/workloads/web/work\n`));
      sh.child.stdin.write('echo to-stderr >&2\n');
      await waitFor(() => sh.err.includes('to-stderr'), { what: 'stderr from the shell' });
      // A second round trip on the same session: the shell is still reading.
      sh.child.stdin.write('echo second-$((1+1))\n');
      await waitFor(() => sh.out.includes('second-2'), { what: 'the second answer' });
      sh.child.stdin.write('exit 7\n');
      expect(await sh.code).toBe(7);
    } finally {
      sh.child.kill('SIGKILL');
    }
  });

  it('the end of the CLI stdin is the end of the command input', async () => {
    const cat = interactive([
      'edge/site-b',
      'web',
      '-i',
      '--',
      'sh',
      '-c',
      'n=0; while read l; do n=$((n+1)); done; echo "lines=$n"',
    ]);
    cat.child.stdin.end('a\nb\nc\n');
    expect(await cat.code).toBe(0);
    expect(cat.out).toBe('lines=3\n');
  });

  it('a command that does not exist fails with a message, not a hang', async () => {
    const r = interactive(['edge/site-b', 'web', '-i', '--', 'no-such-command-here']);
    r.child.stdin.end();
    expect(await r.code).not.toBe(0);
    expect(r.err).toMatch(/no-such-command-here: command not found/);
  });
});

describe('browser sessions for the service proxy', () => {
  const proxyPath = (w: string, port = ports[w]) => `/api/v1/edges/site-b/proxy/${w}/${port}/`;

  it('`outpost edge proxy-url` prints a link that sets a path-scoped cookie once; the cookie then opens the app', async () => {
    const r = await cli(['edge', 'proxy-url', 'site-b', 'web', String(ports.web)], cliEnv());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const url = r.stdout.trim();
    expect(url).toMatch(new RegExp(`^${hub.url}${proxyPath('web')}\\?session=[0-9a-f]{16}\\.[A-Za-z0-9_-]{43}$`));

    const first = await openLink(url);
    expect(first.status).toBe(303);
    expect(first.location).toBe(proxyPath('web'));
    expect(first.setCookie).toMatch(/^outpost_proxy=[^;]+;/);
    expect(first.setCookie).toContain(`Path=${proxyPath('web')}`);
    expect(first.setCookie).toContain('HttpOnly');
    expect(first.setCookie).toContain('SameSite=Strict');
    expect(first.setCookie).not.toContain('Secure'); // a plain-HTTP hub: Secure would drop the cookie

    const page = await fetch(`${hub.url}${first.location}index.html`, {
      headers: { cookie: first.cookie },
      redirect: 'manual',
    });
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('hello through a browser session\n');

    // The link works once: opened again without the cookie it is refused.
    const again = await openLink(url);
    expect(again.status).toBe(401);
    // No cookie at all: refused, and the message says how to get in.
    const none = await fetch(`${hub.url}${proxyPath('web')}index.html`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).error.message).toMatch(/proxy-url/);
  });

  it('a WebSocket upgrade authenticates by the cookie; the app sees its own cookies but never the session', async () => {
    const link = await api('POST', '/api/v1/edges/site-b/proxy-session', { workload: 'wsecho', port: ports.wsecho });
    expect(link.status).toBe(201);
    const { cookie } = await openLink(`${hub.url}${link.json.path}`);
    expect(cookie).toMatch(/^outpost_proxy=/);
    const ws = new WebSocket(`${hub.url.replace(/^http/, 'ws')}${proxyPath('wsecho')}chat`, {
      headers: { cookie: `app=1; ${cookie}` },
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const got = new Promise<string>((resolve) => ws.once('message', (m) => resolve(m.toString())));
    ws.send('hi');
    expect(await got).toBe('echo:hi cookie:app=1');
    ws.close();
  });

  it('a session is refused outside its own workload port, and a viewer cannot create one', async () => {
    const link = await api('POST', '/api/v1/edges/site-b/proxy-session', { workload: 'web', port: ports.web });
    const { cookie } = await openLink(`${hub.url}${link.json.path}`);
    expect((await fetch(`${hub.url}${proxyPath('web')}index.html`, { headers: { cookie } })).status).toBe(200);
    const otherWorkload = await fetch(`${hub.url}${proxyPath('wsecho')}`, { headers: { cookie } });
    expect(otherWorkload.status).toBe(401);
    expect(((await otherWorkload.json()) as any).error.message).toMatch(/not valid here/);
    expect((await fetch(`${hub.url}${proxyPath('web', ports.wsecho)}`, { headers: { cookie } })).status).toBe(401);
    const ws = new WebSocket(`${hub.url.replace(/^http/, 'ws')}${proxyPath('wsecho')}`, { headers: { cookie } });
    ws.on('error', () => undefined); // terminate() before the handshake completes reports one
    const refused = await new Promise<number>((resolve) =>
      ws.once('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0)).once('open', () => resolve(101)),
    );
    ws.terminate();
    expect(refused).toBe(401);

    const viewer = (await api('POST', '/api/v1/tokens/api', { role: 'viewer', project: 'default' })).json.token;
    expect(
      (await api('POST', '/api/v1/edges/site-b/proxy-session', { workload: 'web', port: ports.web }, viewer)).status,
    ).toBe(403);
    expect(
      (await api('POST', '/api/v1/edges/site-b/proxy-session', { workload: 'web', port: ports.web, ttlSeconds: 0 }))
        .status,
    ).toBe(422);
  });

  it('an expired session is refused, link and cookie alike', async () => {
    const unused = await api('POST', '/api/v1/edges/site-b/proxy-session', {
      workload: 'web',
      port: ports.web,
      ttlSeconds: 1,
    });
    const used = await api('POST', '/api/v1/edges/site-b/proxy-session', {
      workload: 'web',
      port: ports.web,
      ttlSeconds: 5,
    });
    const { cookie } = await openLink(`${hub.url}${used.json.path}`);
    expect((await fetch(`${hub.url}${proxyPath('web')}index.html`, { headers: { cookie } })).status).toBe(200);
    // Both expiries are the hub's clock on this machine: wait past them, then try.
    await waitFor(() => Date.now() > Date.parse(used.json.expiresAt) + 200, {
      timeout: 15_000,
      what: 'the session to expire',
    });
    expect((await fetch(`${hub.url}${proxyPath('web')}index.html`, { headers: { cookie } })).status).toBe(401);
    expect(Date.now()).toBeGreaterThan(Date.parse(unused.json.expiresAt));
    expect((await openLink(`${hub.url}${unused.json.path}`)).status).toBe(401);
  });
});

describe('a remote stop', () => {
  it('holds across a kill -9 of the agent; start brings the workload back', async () => {
    const before = pidOf('sleeper');
    const stop = await cli(['edge', 'action', 'site-b', 'stop', 'sleeper'], cliEnv());
    expect(stop.stderr).toBe('');
    expect(stop.code).toBe(0);
    await waitFor(async () => (await workloadState('sleeper')) === 'Paused' && !alive(before), {
      timeout: 20_000,
      what: 'sleeper Paused and its process gone',
    });

    await edge.kill('SIGKILL');
    edge = await startEdgeProc(path.join(dir, 'edge'));
    running.push(edge);
    // Proof that the new agent reconciled and reported: a workload added now becomes ready.
    await api('POST', '/api/v1/apply', {
      objects: [
        pod('marker', `busybox httpd -f -p 127.0.0.1:${ports.marker} -h ${www}`, ports.marker),
        {
          kind: 'Placement',
          metadata: { name: 'b' },
          spec: { edgeSelector: { matchLabels: { site: 'b' } }, workloads: ['web', 'wsecho', 'sleeper', 'marker'] },
        },
      ],
    });
    await waitFor(async () => ['Ready', 'Running'].includes((await workloadState('marker')) ?? ''), {
      timeout: 30_000,
      what: 'marker ready under the restarted agent',
    });
    expect(await workloadState('sleeper')).toBe('Paused');
    expect(pidOf('sleeper')).toBe(before);

    expect((await cli(['edge', 'action', 'site-b', 'start', 'sleeper'], cliEnv())).code).toBe(0);
    await waitFor(
      async () =>
        ['Ready', 'Running'].includes((await workloadState('sleeper')) ?? '') &&
        pidOf('sleeper') !== before &&
        alive(pidOf('sleeper')),
      { timeout: 20_000, what: 'sleeper running again' },
    );
  }, 90_000);
});
