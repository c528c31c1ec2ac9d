/**
 * The live-update stream and the fleet endpoints on a real in-process hub over loopback HTTP:
 * change events on object changes, on edge enrollment and approval, authentication, and a hub
 * that closes while a browser still listens.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../../test/helpers.js';
import { startHub, type Hub } from '../hub.js';
import { EVENTS_POLL_MS } from '../changes/feed.js';
import { STREAM_KEEPALIVE_MS, STREAM_THROTTLE_MS } from './stream.js';
import { hubDatabaseOption } from '../../test/fixtures/backend.js';
import { readSse } from '../../test/fixtures/sse.js';

let dir: string;
let hub: Hub;

const headers = (token = hub.adminToken) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
async function api(method: string, p: string, body?: unknown, token?: string): Promise<{ status: number; json: any }> {
  const res = await fetch(hub.url + p, {
    method,
    headers: headers(token),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

/** Reads a stream's events as they come. */
function listen(p: string, token = hub.adminToken) {
  const events: { event: string; data: any }[] = [];
  const ctl = new AbortController();
  let ended = false;
  const done = (async () => {
    const res = await fetch(hub.url + p, { headers: { authorization: `Bearer ${token}` }, signal: ctl.signal });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    await readSse(res, (e) => events.push(e));
  })()
    .catch(() => undefined)
    .finally(() => (ended = true));
  return { events, close: () => ctl.abort(), done, ended: () => ended };
}

beforeAll(async () => {
  dir = tempDir('outpost-stream-test-');
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    ...(await hubDatabaseOption()),
    requireApproval: true,
  });
});
afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const workload = (name: string, project = 'default') => ({
  kind: 'Workload',
  metadata: { name, project },
  spec: {
    manifests: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: { containers: [{ name: 'c', image: 'x', command: ['true'] }] },
      },
    ],
  },
});

describe('GET /api/v1/projects/:project/stream', () => {
  it('needs the bearer token, and a viewer of another project cannot listen', async () => {
    expect((await fetch(`${hub.url}/api/v1/projects/default/stream`)).status).toBe(401);
    const other = await api('POST', '/api/v1/tokens/api', { role: 'viewer', project: 'other' });
    expect(
      (
        await fetch(`${hub.url}/api/v1/projects/default/stream`, {
          headers: { authorization: `Bearer ${other.json.token}` },
        })
      ).status,
    ).toBe(404);
  });

  it('says hello, then emits change events for object changes of its project only, coalesced', async () => {
    const s = listen('/api/v1/projects/default/stream');
    await waitFor(() => s.events.some((e) => e.event === 'hello'), { what: 'hello' });
    expect(s.events[0].data).toMatchObject({ project: 'default', keepaliveMs: STREAM_KEEPALIVE_MS });
    expect((await api('POST', '/api/v1/apply', { objects: [workload('other-w', 'other')] })).status).toBe(200);
    // Proving that something does not arrive takes a window: one events poll plus one throttle
    // interval (and a margin), from the stream's own constants, so the window follows them.
    await new Promise((r) => setTimeout(r, EVENTS_POLL_MS + STREAM_THROTTLE_MS + 500));
    expect(s.events.filter((e) => e.event === 'change')).toEqual([]);
    expect(
      (await api('POST', '/api/v1/apply', { objects: [workload('a'), workload('b'), workload('c')] })).status,
    ).toBe(200);
    await waitFor(() => s.events.some((e) => e.event === 'change'), { what: 'change event' });
    const changes = s.events.filter((e) => e.event === 'change');
    expect(changes[0].data.topics).toContain('objects');
    // Three objects changed in one request: the throttle makes that one or two events, not three.
    await new Promise((r) => setTimeout(r, 3 * STREAM_THROTTLE_MS));
    expect(s.events.filter((e) => e.event === 'change').length).toBeLessThanOrEqual(2);
    s.close();
  });

  it('reports enrollment and approval (recorded as events) to the edge’s project', async () => {
    const s = listen('/api/v1/projects/default/stream');
    await waitFor(() => s.events.some((e) => e.event === 'hello'), { what: 'hello' });
    const join = await api('POST', '/api/v1/tokens/join', { project: 'default' });
    const enrolled = await fetch(`${hub.url}/api/v1/enroll`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ joinToken: join.json.token, name: 'edge-1' }),
    });
    expect(enrolled.status).toBe(201);
    await waitFor(() => s.events.some((e) => e.event === 'change'), { what: 'change after enrollment' });
    const before = s.events.length;
    expect((await api('POST', '/api/v1/projects/default/edges/edge-1/approve')).status).toBe(200);
    await waitFor(() => s.events.slice(before).some((e) => e.event === 'change' && e.data.topics.includes('events')), {
      what: 'change after approval',
    });
    s.close();
  });
});

describe('fleet endpoints', () => {
  it('list the projects a token sees, count edges by phase, chart edges online and list connections', async () => {
    const projects = await api('GET', '/api/v1/projects');
    // Project objects since issue #47 (docs/projects.md): their names in metadata.
    const names = (items: { metadata: { name: string } }[]) => items.map((p) => p.metadata.name);
    expect(names(projects.json.items)).toEqual(['default', 'other']);
    const scoped = await api('POST', '/api/v1/tokens/api', { role: 'viewer', project: 'other' });
    expect(names((await api('GET', '/api/v1/projects', undefined, scoped.json.token)).json.items)).toEqual(['other']);

    const fleet = await api('GET', '/api/v1/projects/default/fleet');
    expect(fleet.json).toEqual({ edges: { total: 1, Online: 0, Offline: 1, Pending: 0 }, workloads: 3, placements: 0 });
    const hist = await api('GET', '/api/v1/projects/default/edges-online?hours=2');
    expect(hist.json.points).toHaveLength(60);
    expect(hist.json.points.every((p: { online: number }) => p.online === 0)).toBe(true);
    expect((await api('GET', '/api/v1/projects/default/edges-online?hours=0')).status).toBe(400);
    expect((await api('GET', '/api/v1/projects/default/edges/edge-1/connections')).json).toEqual({ items: [] });
    expect((await api('GET', '/api/v1/projects/other/edges/edge-1/connections')).status).toBe(404);
  });
});

describe('hub shutdown', () => {
  it('ends open streams so close() returns', async () => {
    const s = listen('/api/v1/projects/default/stream');
    await waitFor(() => s.events.some((e) => e.event === 'hello'), { what: 'hello' });
    await hub.close();
    await waitFor(() => s.ended(), { timeout: 5_000, what: 'stream ended by the hub' });
    hub = undefined as unknown as Hub;
  });
});
