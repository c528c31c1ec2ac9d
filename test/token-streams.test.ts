/**
 * A token's open streams end with it (issue #41, item 8; docs/security.md, "Tokens"): on an
 * in-process SQLite hub with an in-process edge agent (process driver) running a ticker, an
 * `outpost logs --follow` of the ticker and an event stream, both with one API token, end as soon
 * as the token is revoked, and a token with a short TTL loses both when it expires; a blob
 * download under way breaks off at the revocation. Each run prints how many seconds the streams
 * outlived their token. (Two PostgreSQL replicas:
 * test/hub-replica-tokens.test.ts.)
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { hostPod, killHostWorkloads } from './fixtures/host-workloads.js';
import { adminApi, startProcessAgent, stopAgents } from './fixtures/in-process-fleet.js';
import { eventStream, flowing, followLogs, PROMPT_MS, secondsToEnd } from './fixtures/token-streams.js';
import { tempDir, waitFor } from './helpers.js';

let dir: string;
let www: string;
let hub: Hub;
const agents: EdgeAgent[] = [];

beforeAll(async () => {
  dir = tempDir('outpost-token-streams-');
  www = path.join(dir, 'www');
  fs.mkdirSync(www);
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0', insecureHttp: true });
  const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', { labels: { site: 'a' } });
  agents.push(await startProcessAgent(hub, dir, 'site-a', join.token));
  await adminApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      hostPod('ticker', "sh -c 'seq 1 100000 | while read n; do echo line-$n; sleep 0.2; done'", { pidDir: www }),
      {
        kind: 'Placement',
        metadata: { name: 'all' },
        spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['ticker'] },
      },
    ],
  });
  await waitFor(
    async () => (await adminApi(hub, 'GET', '/api/v1/projects/default/placements/all')).status?.summary?.ready === 1,
    { timeout: 45_000, what: 'the ticker READY on site-a' },
  );
}, 90_000);

afterAll(async () => {
  await stopAgents(agents);
  await hub?.close();
  killHostWorkloads(www);
  fs.rmSync(dir, { recursive: true, force: true });
});

const viewerToken = (body: Record<string, unknown> = {}) =>
  adminApi<{ token: string; id: string }>(hub, 'POST', '/api/v1/tokens/api', {
    role: 'viewer',
    project: 'default',
    ...body,
  });

describe("a token's open streams end with it", () => {
  it('revoked: its logs --follow and its event stream end at once, and say why', async () => {
    const t = await viewerToken({ description: 'revoked while streaming' });
    const events = eventStream(hub.url, 'default', t.token);
    const logs = followLogs(hub.url, t.token, 'site-a', 'ticker', dir);
    await events.opened;
    await flowing(logs, 'the log follow');

    const revokedAt = Date.now();
    await adminApi(hub, 'DELETE', `/api/v1/tokens/${t.id}`);
    const logsS = await secondsToEnd(logs, revokedAt, PROMPT_MS, 'the log follow to end after the revocation');
    const eventsS = await secondsToEnd(events, revokedAt, PROMPT_MS, 'the event stream to end after the revocation');
    console.log(
      `item 8 (SQLite): after outpost token revoke, logs --follow ended in ${logsS.toFixed(2)} s, the event stream in ${eventsS.toFixed(2)} s`,
    );

    const r = await logs.run;
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/broke off .*the token was revoked or expired/);
    expect(events.events.at(-1)).toMatchObject({ event: 'unauthorized' });
    expect(events.events.at(-1)!.data.message).toMatch(new RegExp(`token ${t.id} was revoked`));
    // And a new one is refused (401), as before.
    const again = eventStream(hub.url, 'default', t.token);
    await expect(again.opened).rejects.toThrow(/401/);
  });

  it('revoked: a blob download under way breaks off', async () => {
    const bytes = crypto.randomBytes(32 * 1024 * 1024);
    const up = await fetch(`${hub.url}/api/v1/projects/default/blobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hub.adminToken}`, 'content-type': 'application/octet-stream' },
      body: bytes,
    });
    expect(up.status).toBe(201);
    const { digest } = (await up.json()) as { digest: string };
    const t = await viewerToken({ description: 'revoked while downloading' });
    const res = await fetch(`${hub.url}/api/v1/projects/default/blobs/${digest}`, {
      headers: { authorization: `Bearer ${t.token}` },
    });
    expect(res.status).toBe(200);
    // Read a little, then stop: the rest waits on the hub (backpressure) when the token is revoked.
    const reader = res.body!.getReader();
    let got = (await reader.read()).value?.length ?? 0;
    await adminApi(hub, 'DELETE', `/api/v1/tokens/${t.id}`);
    const rest = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return 'complete';
        got += value.length;
      }
    })();
    await expect(rest).rejects.toThrow();
    expect(got).toBeLessThan(bytes.length);
  });

  it('expired: a token with a short TTL loses its streams when it expires', async () => {
    const ttlMs = 6_000;
    const t = await viewerToken({ ttl: `${ttlMs / 1000}s`, description: 'short-lived' });
    const listed = await adminApi<{ items: { id: string; expiresAt: string }[] }>(hub, 'GET', '/api/v1/tokens');
    const expiresAt = Date.parse(listed.items.find((x) => x.id === t.id)!.expiresAt);
    const events = eventStream(hub.url, 'default', t.token);
    const logs = followLogs(hub.url, t.token, 'site-a', 'ticker', dir);
    await events.opened;
    await flowing(logs, 'the log follow');
    expect(events.endedAt()).toBeUndefined();

    const until = expiresAt - Date.now() + PROMPT_MS;
    const logsS = await secondsToEnd(logs, expiresAt, until, 'the log follow to end after the expiry');
    const eventsS = await secondsToEnd(events, expiresAt, until, 'the event stream to end after the expiry');
    console.log(
      `item 8 (SQLite): after a ${ttlMs / 1000} s token expired, logs --follow ended in ${logsS.toFixed(2)} s, the event stream in ${eventsS.toFixed(2)} s`,
    );
    expect((await logs.run).code).not.toBe(0);
    expect(events.events.at(-1)!.data.message).toMatch(new RegExp(`token ${t.id} expired at`));
  });
});
