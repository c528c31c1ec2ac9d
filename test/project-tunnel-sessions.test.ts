/**
 * A project's tunnelSessions quota (issue #47, docs/projects.md "Tunnel sessions") on an in-process
 * hub with two in-process edge agents (process driver) in two projects, the CLI in-process: with a
 * quota of 1 and one `logs --follow` open, a second log stream, an exec (plain and interactive) and
 * a proxied request of the project are refused with 403 `over_quota` naming the quota, its use and
 * the fix, while the first stream goes on and the other project's sessions pass; `get projects`
 * shows the live count; once the first ends, new sessions are admitted again.
 */
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import type { Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, startInProcessHub, startProcessAgent, stopInProcess } from './fixtures/in-process-fleet.js';
import { waitFor } from './helpers.js';
import { freePort } from './ports.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
let port: number;
const agents: EdgeAgent[] = [];

const pod = (name: string, project: string, command: string[], containerPort?: number) => ({
  kind: 'Workload',
  metadata: { name, project },
  spec: {
    manifests: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'main',
              image: 'busybox:1.36',
              command,
              ...(containerPort
                ? { ports: [{ containerPort }], readinessProbe: { tcpSocket: { port: containerPort } } }
                : {}),
            },
          ],
        },
      },
    ],
  },
});
const ticker = (project: string) =>
  pod('ticker', project, ['sh', '-c', 'n=0; while true; do n=$((n+1)); echo line-$n; sleep 0.2; done']);
const placement = (project: string, workloads: string[]) => ({
  kind: 'Placement',
  metadata: { name: 'all', project },
  spec: { edgeSelector: {}, workloads },
});

const auth = () => ({ authorization: `Bearer ${hub.adminToken}` });
const edgeUrl = (edge: string, p: string) => `${hub.url}/api/v1/edges/${edge}/${p}`;
const OVER =
  /project "shop" has 1 of 1 tunnel sessions open \(quota tunnelSessions\): raise spec\.quotas\.tunnelSessions or end one of its sessions/;

/** A `logs --follow` stream held open (raw HTTP, as the CLI asks); `text` grows as lines arrive. */
async function follow(edge: string): Promise<{ text: () => string; end: () => void }> {
  const ac = new AbortController();
  const res = await fetch(edgeUrl(edge, 'logs/ticker?follow=true&tail=1'), { headers: auth(), signal: ac.signal });
  expect(res.status).toBe(200);
  let text = '';
  const reader = res.body!.getReader();
  void (async () => {
    const dec = new TextDecoder();
    for (;;) {
      const r = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (r.done) return;
      text += dec.decode(r.value);
    }
  })();
  return { text: () => text, end: () => ac.abort() };
}

const lineCount = (s: string) => (s.match(/line-\d+/g) ?? []).length;

async function sessionsColumn(project: string): Promise<string> {
  const r = await runCli(['get', 'projects'], { env });
  expect(r.code, r.stderr).toBe(0);
  const [head, ...rows] = r.stdout.trim().split('\n');
  const col = head!.indexOf('SESSIONS');
  const row = rows.find((l) => l.startsWith(`${project} `))!;
  return row.slice(col).split(/\s+/)[0]!;
}

beforeAll(async () => {
  ({ dir, hub, env } = await startInProcessHub('outpost-tunnel-sessions-'));
  port = await freePort();
  const web = pod(
    'web',
    'shop',
    [process.execPath, '-e', `require('http').createServer((q,s)=>s.end('web')).listen(${port},'127.0.0.1')`],
    port,
  );
  await adminApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      { kind: 'Project', metadata: { name: 'shop' }, spec: { quotas: { tunnelSessions: 1 } } },
      { kind: 'Project', metadata: { name: 'other' }, spec: { quotas: { tunnelSessions: 1 } } },
      ticker('shop'),
      web,
      placement('shop', ['ticker', 'web']),
      ticker('other'),
      placement('other', ['ticker']),
    ],
  });
  for (const [edge, project] of [
    ['site-a', 'shop'],
    ['site-b', 'other'],
  ] as const) {
    const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', { project, labels: {} });
    agents.push(await startProcessAgent(hub, dir, edge, join.token));
  }
  await waitFor(
    async () => {
      const a = await adminApi(hub, 'GET', '/api/v1/projects/shop/edges/site-a');
      const b = await adminApi(hub, 'GET', '/api/v1/projects/other/edges/site-b');
      return a.status?.summary?.ready === 2 && b.status?.summary?.ready === 1;
    },
    { timeout: 60_000, what: 'the workloads running on site-a (shop) and site-b (other)' },
  );
}, 90_000);

afterAll(() => stopInProcess({ agents, hub, dir }));

describe('the tunnelSessions quota', () => {
  it('refuses a second session of the project while one is open, not another project, and admits one once it ends', async () => {
    expect(await sessionsColumn('shop')).toBe('0/1');
    const first = await follow('site-a');
    await waitFor(() => lineCount(first.text()) > 0, { timeout: 20_000, what: 'a line on the first log stream' });
    expect(await sessionsColumn('shop')).toBe('1/1');

    // A second log stream, an exec (plain and interactive) and a proxied request: each refused.
    const logs = await runCli(['logs', 'edge/site-a', 'ticker', '--follow'], { env });
    expect(logs.code).not.toBe(0);
    expect(logs.stderr).toMatch(OVER);
    const exec = await runCli(['exec', 'edge/site-a', 'ticker', '--', 'echo', 'hi'], { env });
    expect(exec.code).not.toBe(0);
    expect(exec.stderr).toMatch(OVER);
    const proxied = await fetch(edgeUrl('site-a', `proxy/web/${port}/`), { headers: auth() });
    expect(proxied.status).toBe(403);
    const body = (await proxied.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('over_quota');
    expect(body.error.message).toMatch(OVER);
    const ws = new WebSocket(edgeUrl('site-a', 'exec/ticker?command=sh').replace(/^http/, 'ws'), { headers: auth() });
    const upgrade = await new Promise<number>((resolve, reject) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => reject(new Error('the interactive exec was admitted over the quota')));
      ws.once('error', reject);
    });
    expect(upgrade).toBe(403);
    expect(await sessionsColumn('shop')).toBe('1/1');

    // The other project is held to its own quota only.
    const elsewhere = await follow('site-b');
    await waitFor(() => lineCount(elsewhere.text()) > 0, { timeout: 20_000, what: "a line of other's ticker" });
    expect(await sessionsColumn('other')).toBe('1/1');
    elsewhere.end();

    // The first stream went on through all of it.
    const seen = lineCount(first.text());
    await waitFor(() => lineCount(first.text()) > seen + 1, { timeout: 20_000, what: 'new lines on the first stream' });

    first.end();
    await waitFor(async () => (await sessionsColumn('shop')) === '0/1', {
      timeout: 10_000,
      what: 'the first session no longer counted',
    });
    const again = await runCli(['exec', 'edge/site-a', 'ticker', '--', 'echo', 'hi'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('hi\n');
    const proxiedAgain = await fetch(edgeUrl('site-a', `proxy/web/${port}/`), { headers: auth() });
    expect(proxiedAgain.status).toBe(200);
    expect(await proxiedAgain.text()).toBe('web');
    await waitFor(async () => (await sessionsColumn('other')) === '0/1', {
      timeout: 10_000,
      what: "other's session no longer counted",
    });
  });
});
