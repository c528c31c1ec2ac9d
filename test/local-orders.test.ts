/**
 * Local orders on site (`outpost edge local ...`, through the agent's unix socket) with the hub
 * unreachable, and the merge rule when hub and site change the same workload while apart, in both
 * orders. The network between edge and hub is a TCP proxy the test severs and heals.
 *
 * The rule (core/mailbox.ts localState): the hub's spec is the base, the site's intents not yet
 * cleared by the hub are applied over it in order; so the site wins on the paths it overrode and
 * the hub everywhere else, until the hub clears the intents.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from './helpers.js';
import { cli, CuttableProxy, freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let edgeDir: string;
let hub: HubProc;
let edge: Proc;
let proxy: CuttableProxy;
let port: number;
let www: string;

const app = (version: string, motd: string) => ({
  kind: 'Workload',
  metadata: { name: 'app' },
  spec: {
    manifests: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'app' },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'web',
              image: 'localhost/outpost-busybox:latest',
              command: [
                'sh',
                '-c',
                `mkdir -p ${www} && echo "$VERSION $MOTD" > ${www}/index.html && exec busybox httpd -f -p ${port} -h ${www}`,
              ],
              env: [
                { name: 'VERSION', value: version },
                { name: 'MOTD', value: motd },
              ],
              readinessProbe: { tcpSocket: { port }, periodSeconds: 1 },
            },
          ],
        },
      },
    ],
  },
});

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

async function serving(): Promise<string | null> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2_000) });
    return r.ok ? (await r.text()).trim() : null;
  } catch {
    return null;
  }
}
const local = (...args: string[]) => cli(['edge', 'local', ...args, '--data', edgeDir]);
const hubEdgeIntents = async () =>
  (await api('GET', '/api/v1/projects/default/edges/site-b')).status.localIntents.app ?? null;

beforeAll(async () => {
  dir = tempDir();
  edgeDir = path.join(dir, 'edge');
  www = path.join(dir, 'www');
  port = await freePort();
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http']);
  proxy = new CuttableProxy(Number(new URL(hub.url).port));
  await proxy.listen();
  const join = await api('POST', '/api/v1/tokens/join', {});
  edge = await startEdgeProc(edgeDir, [
    '--hub',
    `http://127.0.0.1:${proxy.port}`,
    '--join-token',
    join.token,
    '--name',
    'site-b',
    '--driver',
    'process',
  ]);
  await api('POST', '/api/v1/apply', {
    objects: [
      app('v1', 'hello'),
      { kind: 'Placement', metadata: { name: 'p' }, spec: { edges: ['site-b'], workloads: ['app'] } },
    ],
  });
  await waitFor(async () => (await serving()) === 'v1 hello', { timeout: 45_000, what: 'app serving v1' });
});

afterAll(async () => {
  // Workloads outlive their agent by design: have the edge remove the app before stopping it.
  proxy?.heal();
  await api('DELETE', '/api/v1/projects/default/placements/p').catch(() => undefined);
  await waitFor(async () => (await serving()) === null, { timeout: 20_000, what: 'app removed' }).catch(
    () => undefined,
  );
  await edge?.kill('SIGTERM');
  await hub?.proc.kill('SIGTERM');
  await proxy?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('local orders on site', () => {
  it('work with the hub unreachable, take effect at once, and reach the hub on reconnect with time and origin', async () => {
    proxy.sever();
    await waitFor(async () => !(await local('status', '-o', 'json')).stdout.includes('"connection": "connected"'), {
      what: 'edge to see the link down',
    });
    const paused = await local('pause', 'app');
    expect(paused.code).toBe(0);
    expect(paused.stdout).toMatch(/pause recorded as local intent #1/);
    await waitFor(async () => (await serving()) === null, { what: 'app stopped by the local pause' });
    const st = JSON.parse((await local('status', '-o', 'json')).stdout);
    expect(st.workloads[0].status.phase).toBe('Paused');
    expect(await hubEdgeIntents()).toBeNull(); // the hub cannot know yet

    proxy.heal();
    const seen = await waitFor(hubEdgeIntents, { timeout: 40_000, what: 'intent at the hub' });
    expect(seen.paused).toBe(true);
    expect(seen.intents[0]).toMatchObject({ action: 'pause', origin: expect.stringMatching(/^local:/) });
    const described = await cli(['describe', 'edge', 'site-b'], {
      OUTPOST_HUB: hub.url,
      OUTPOST_TOKEN: hub.token,
      OUTPOST_CONFIG: path.join(dir, 'cli.json'),
    });
    expect(described.stdout).toMatch(/Local intents made on site/);
    expect(described.stdout).toMatch(/pause/);
    expect((await local('resume', 'app')).code).toBe(0);
    await waitFor(async () => (await serving()) === 'v1 hello', { timeout: 30_000, what: 'app back after resume' });
  });

  it('site first, then hub, on the same field while apart: the site override wins, the hub wins elsewhere, and both sides agree', async () => {
    proxy.sever();
    expect((await local('override', 'app', '--set', 'Pod/app:spec.containers.0.env.1.value=from-site')).code).toBe(0);
    await waitFor(async () => (await serving()) === 'v1 from-site', { what: 'site override applied offline' });
    await api('PUT', '/api/v1/projects/default/workloads/app', app('v2', 'from-hub'));
    proxy.heal();
    await waitFor(async () => (await serving()) === 'v2 from-site', {
      timeout: 40_000,
      what: 'hub version with the site override',
    });
    const atHub = await waitFor(
      async () =>
        (await hubEdgeIntents())?.overrides?.['Pod/app:spec.containers.0.env.1.value'] === 'from-site'
          ? hubEdgeIntents()
          : null,
      { timeout: 20_000, what: 'hub sees the override' },
    );
    const atEdge = JSON.parse((await local('status', '-o', 'json')).stdout).workloads[0].local;
    expect(atEdge.overrides).toEqual(atHub.overrides);
    expect(atEdge.paused).toBe(atHub.paused);
  });

  it('hub first, then site, while apart: the same rule gives the same result; the hub can clear the override', async () => {
    proxy.sever();
    await api('PUT', '/api/v1/projects/default/workloads/app', app('v3', 'hub-again'));
    expect((await local('override', 'app', '--set', 'Pod/app:spec.containers.0.env.1.value=site-again')).code).toBe(0);
    await waitFor(async () => (await serving()) === 'v2 site-again', { what: 'new site override on the old hub spec' });
    proxy.heal();
    await waitFor(async () => (await serving()) === 'v3 site-again', {
      timeout: 40_000,
      what: 'hub v3 with the site override',
    });

    const cleared = await cli(['edge', 'clear', 'site-b', 'app'], {
      OUTPOST_HUB: hub.url,
      OUTPOST_TOKEN: hub.token,
      OUTPOST_CONFIG: path.join(dir, 'cli.json'),
    });
    expect(cleared.code).toBe(0);
    await waitFor(async () => (await serving()) === 'v3 hub-again', {
      timeout: 30_000,
      what: 'hub spec after the clear',
    });
    await waitFor(async () => (await hubEdgeIntents()) === null, {
      timeout: 20_000,
      what: 'no intents left at the hub',
    });
    expect(JSON.parse((await local('status', '-o', 'json')).stdout).workloads[0].local).toBeNull();
  });

  it('a local pause plus a hub change while apart: the hub shows the edge Paused (held on the edge, paused on site), the rollout counts it held, and the fleet can find it', async () => {
    const cliEnv = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token, OUTPOST_CONFIG: path.join(dir, 'cli.json') };
    proxy.sever();
    expect((await local('pause', 'app')).code).toBe(0);
    await waitFor(async () => (await serving()) === null, { what: 'app stopped by the local pause' });
    await api('PUT', '/api/v1/projects/default/workloads/app', app('v4', 'while-paused'));
    proxy.heal();

    const rollout = await waitFor(
      async () => {
        const r = (await api('GET', '/api/v1/projects/default/placements/p')).status;
        return r.rollout?.phase === 'Paused' && r.rollout.counts?.held === 1 ? r : null;
      },
      { timeout: 40_000, what: 'rollout Paused, site-b held' },
    );
    // The rollout names why, as the edge says it.
    expect(rollout.rollout.reason).toMatch(
      /held on site-b \(paused on site: `outpost edge local resume \S+` there, or `outpost edge clear site-b \S+`, runs it again\)/,
    );
    expect(rollout.heldLocally).toEqual([{ edge: 'site-b', workload: 'app' }]);
    const w = (await api('GET', '/api/v1/projects/default/edges/site-b')).status.workloads[0];
    expect(w.state).toBe('Paused');
    expect(w.reason).toMatch(
      /^paused on site: `outpost edge local resume \S+` there, or `outpost edge clear site-b \S+`, runs it again \(held on the edge\): generation \d+ waits/,
    );
    const listed = await api('GET', '/api/v1/projects/default/edges?local=true');
    expect(listed.items.map((e: any) => e.metadata.name)).toEqual(['site-b']);
    expect(listed.matched).toBe(1);
    const table = await cli(['get', 'edges'], cliEnv);
    expect(table.stdout).toMatch(/LOCAL\s+LABELS/);
    expect(table.stdout).toMatch(/site-b .* app:paused /);
    expect((await cli(['get', 'edges', '--local', '-o', 'json'], cliEnv)).stdout).toMatch(/"name": "site-b"/);
    const described = await cli(['describe', 'placement', 'p'], cliEnv);
    expect(described.stdout).toMatch(/Held on site:\s+site-b \(app\)/);
    expect(described.stdout).toMatch(/Progress:\s+1\/1 edge updated, 0 ready, 0 failed, 1 held/);

    expect((await local('resume', 'app')).code).toBe(0);
    await waitFor(async () => (await serving()) === 'v4 while-paused', { timeout: 30_000, what: 'v4 after resume' });
    await waitFor(
      async () => (await api('GET', '/api/v1/projects/default/placements/p')).status.rollout?.phase === 'Complete',
      { timeout: 30_000, what: 'rollout Complete' },
    );
    const none = await cli(['get', 'edges', '--local'], cliEnv);
    expect(none.stderr).toMatch(/No edges found in project default holding intents made on site\./);
  });
});
