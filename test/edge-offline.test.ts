/**
 * Offline autonomy with real hub and edge processes (`outpost hub`, `outpost edge`, process
 * driver, busybox httpd workloads on loopback): the scenarios users report against KubeEdge.
 *
 * One fleet is carried through the scenarios in order, as an operator would live them:
 * 1. the hub is killed: workloads keep serving and the edge keeps recording status;
 * 2. the edge is killed -9 and its workloads die too (a reboot) while the hub is still down:
 *    everything comes back from the local replica;
 * 3. the hub restarts: no edge status is lost (the status recorded while it was down arrives);
 * 4. the edge goes offline, the hub changes one workload and deletes another: after reconnect the
 *    change is applied, the deleted one is removed, and the untouched one was never restarted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostPod, killHostWorkloads } from './fixtures/host-workloads.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let hubDir: string;
let edgeDir: string;
let www: string;
let hubPort: number;
let hub: HubProc;
let edge: Proc;
const ports: Record<string, number> = {};
/**
 * Each start of the agent: a process it restarted after a crash is Ready again after 2 s of running,
 * not the default 10 s (`outpost edge --process-stable-run`), so the waits for READY take seconds.
 */
const STABLE = ['--process-stable-run', '2s'];
const running: Proc[] = [];

function web(name: string, version: string) {
  const root = path.join(www, name);
  return hostPod(name, `busybox httpd -f -p ${ports[name]} -h ${root}`, {
    pidDir: www,
    port: ports[name],
    env: [{ name: 'VERSION', value: version }],
    setup: `mkdir -p ${root} && echo "$VERSION" > ${root}/index.html`,
  });
}

async function api(method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(`${hub.url}${p}`, {
    method,
    headers: { authorization: `Bearer ${hub.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 400) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function serves(name: string): Promise<string | null> {
  try {
    const r = await fetch(`http://127.0.0.1:${ports[name]}/`, { signal: AbortSignal.timeout(2_000) });
    return r.ok ? (await r.text()).trim() : null;
  } catch {
    return null;
  }
}

const pidOf = (name: string) => Number(fs.readFileSync(path.join(www, `${name}.pid`), 'utf8'));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function localStatus(): Promise<any> {
  const http = await import('node:http');
  return new Promise((resolve, reject) => {
    http
      .get({ socketPath: path.join(edgeDir, 'agent.sock'), path: '/status' }, (res) => {
        let t = '';
        res.on('data', (c) => (t += c));
        res.on('end', () => resolve(JSON.parse(t)));
      })
      .on('error', reject);
  });
}

beforeAll(async () => {
  dir = tempDir();
  hubDir = path.join(dir, 'hub');
  edgeDir = path.join(dir, 'edge');
  www = path.join(dir, 'www');
  fs.mkdirSync(www);
  hubPort = await freePort();
  for (const n of ['keep', 'change', 'gone']) ports[n] = await freePort();
  hub = await startHubProc(hubDir, hubPort, ['--insecure-http']);
  running.push(hub.proc);
  const join = await api('POST', '/api/v1/tokens/join', { labels: { site: 'a' } });
  edge = await startEdgeProc(edgeDir, [
    '--hub',
    hub.url,
    '--join-token',
    join.token,
    '--name',
    'site-a',
    '--driver',
    'process',
    ...STABLE,
  ]);
  running.push(edge);
  await api('POST', '/api/v1/apply', {
    objects: [
      web('keep', 'v1'),
      web('change', 'v1'),
      web('gone', 'v1'),
      {
        kind: 'Placement',
        metadata: { name: 'all' },
        spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['keep', 'change', 'gone'] },
      },
    ],
  });
  await waitFor(async () => (await api('GET', '/api/v1/projects/default/placements/all')).status.summary.ready === 3, {
    timeout: 45_000,
    what: 'READY 3/3',
  });
});

afterAll(async () => {
  for (const p of running) await p.kill('SIGTERM').catch(() => undefined);
  // Workloads outlive agents by design: stop what the test started.
  killHostWorkloads(www);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('offline autonomy (real processes)', () => {
  let keepPid = 0;

  it('1. hub killed: every workload keeps running and the edge keeps recording status', async () => {
    keepPid = pidOf('keep');
    await hub.proc.kill('SIGKILL');
    for (const n of ['keep', 'change', 'gone']) expect(await serves(n)).toBe('v1');
    await waitFor(async () => (await localStatus()).connection !== 'connected', {
      what: 'edge to notice the hub is gone',
    });
    // A workload crashes while the hub is away: the edge restarts it and records it.
    process.kill(pidOf('gone'), 'SIGKILL');
    const st = await waitFor(
      async () => {
        const s = await localStatus();
        const g = s.workloads.find((w: any) => w.name === 'gone');
        return g.status.restarts >= 1 && g.status.phase === 'Ready' ? s : null;
      },
      { timeout: 30_000, what: 'restart recorded locally' },
    );
    expect(st.workloads.find((w: any) => w.name === 'gone').status.restarts).toBeGreaterThanOrEqual(1);
    expect(await serves('gone')).toBe('v1');
  });

  it('2. edge killed -9 with its workloads (a reboot) while the hub is down: workloads come back from the local replica', async () => {
    await edge.kill('SIGKILL');
    for (const n of ['keep', 'change', 'gone']) process.kill(pidOf(n), 'SIGKILL');
    await waitFor(async () => (await serves('keep')) === null, { what: 'workloads down' });
    edge = await startEdgeProc(edgeDir, STABLE);
    running.push(edge);
    for (const n of ['keep', 'change', 'gone']) await waitFor(() => serves(n), { timeout: 30_000, what: `${n} back` });
    keepPid = pidOf('keep');
    expect(alive(keepPid)).toBe(true);
  });

  it('3. the hub restarts and loses no edge status', async () => {
    hub = await startHubProc(hubDir, hubPort, ['--insecure-http']);
    running.push(hub.proc);
    const e = await waitFor(
      async () => {
        const x = await api('GET', '/api/v1/projects/default/edges/site-a');
        // The crash recorded while the hub was dead must reach it.
        const gone = x.status.workloads.find((w: any) => w.name === 'gone');
        return x.status.phase === 'Online' && x.status.summary.ready === 3 && gone.restarts >= 1 ? x : null;
      },
      { timeout: 30_000, what: 'edge online with READY 3/3 and the offline restart' },
    );
    expect(e.status.summary.broken).toEqual([]);
  });

  it('4. while the edge is offline the hub changes one workload and deletes another: after reconnect both happen, the third is not restarted', async () => {
    await edge.kill('SIGKILL');
    await api('PUT', '/api/v1/projects/default/workloads/change', web('change', 'v2'));
    await api('PUT', '/api/v1/projects/default/placements/all', {
      kind: 'Placement',
      metadata: { name: 'all' },
      spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['keep', 'change'] },
    });
    // Offline: nothing changed on the edge yet.
    expect(await serves('change')).toBe('v1');
    expect(await serves('gone')).toBe('v1');
    edge = await startEdgeProc(edgeDir, STABLE);
    running.push(edge);
    await waitFor(async () => (await serves('change')) === 'v2', { timeout: 30_000, what: 'change to serve v2' });
    await waitFor(async () => (await serves('gone')) === null, { timeout: 30_000, what: 'gone to be removed' });
    expect(pidOf('keep')).toBe(keepPid);
    expect(alive(keepPid)).toBe(true);
    const p = await waitFor(
      async () => {
        const x = await api('GET', '/api/v1/projects/default/placements/all');
        return x.status.summary.ready === 2 && x.status.summary.total === 2 ? x : null;
      },
      { timeout: 30_000, what: 'READY 2/2' },
    );
    expect(p.status.summary.worst).toBe('Ready');
  });
});
