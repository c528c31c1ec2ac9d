/**
 * A token revoked through one hub replica loses its streams on the others (issue #41, item 8;
 * hub/auth/token-streams.ts, the replicas' bus): two in-process hubs on one throwaway PostgreSQL,
 * an in-process edge agent (process driver) served by replica B running a ticker. With one API
 * token, an event stream and an `outpost logs --follow` are opened on B, and a log follow through
 * A (forwarded to B); the token is revoked through A, and all three end at once. Prints how many
 * seconds they outlived the token.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { newIdentityKey } from '../hub/identity/key.js';
import { hostPod, killHostWorkloads } from './fixtures/host-workloads.js';
import { adminApi, startProcessAgent, stopAgents } from './fixtures/in-process-fleet.js';
import { TestPostgres } from './fixtures/postgres.js';
import { eventStream, flowing, followLogs, PROMPT_MS, secondsToEnd } from './fixtures/token-streams.js';
import { tempDir, waitFor } from './helpers.js';

const server = new TestPostgres();
let dir: string;
let www: string;
let a: Hub;
let b: Hub;
const agents: EdgeAgent[] = [];

beforeAll(async () => {
  dir = tempDir('outpost-replica-tokens-');
  www = path.join(dir, 'www');
  fs.mkdirSync(www);
  await server.start();
  const database = server.createDatabase('hub');
  // One identity, as docs/operations.md sets replicas up: the admin token is shared too.
  const identityKeyFile = path.join(dir, 'identity.key');
  fs.writeFileSync(identityKeyFile, newIdentityKey(), { mode: 0o600 });
  const replica = (name: string) =>
    startHub({ dataDir: path.join(dir, name), listen: '127.0.0.1:0', insecureHttp: true, database, identityKeyFile });
  a = await replica('hub-a');
  b = await replica('hub-b');
  const join = await adminApi<{ token: string }>(b, 'POST', '/api/v1/tokens/join', { labels: { site: 'b' } });
  agents.push(await startProcessAgent(b, dir, 'e1', join.token));
  await adminApi(b, 'POST', '/api/v1/apply', {
    objects: [
      hostPod('ticker', "sh -c 'seq 1 100000 | while read n; do echo line-$n; sleep 0.2; done'", { pidDir: www }),
      {
        kind: 'Placement',
        metadata: { name: 'all' },
        spec: { edgeSelector: { matchLabels: { site: 'b' } }, workloads: ['ticker'] },
      },
    ],
  });
  await waitFor(
    async () => (await adminApi(b, 'GET', '/api/v1/projects/default/placements/all')).status?.summary?.ready === 1,
    { timeout: 45_000, what: 'the ticker READY on the edge B serves' },
  );
  expect(b.sync.connection('e1' as never)).toBeDefined();
  expect(a.sync.connection('e1' as never)).toBeUndefined();
}, 120_000);

afterAll(async () => {
  await stopAgents(agents);
  await a?.close();
  await b?.close();
  killHostWorkloads(www);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('a token revoked through replica A', () => {
  it('ends its event stream and log follow on replica B, and its follow forwarded through A, at once', async () => {
    const t = await adminApi<{ token: string; id: string }>(a, 'POST', '/api/v1/tokens/api', {
      role: 'viewer',
      project: 'default',
      description: 'streams on B, revoked through A',
    });
    const events = eventStream(b.url, 'default', t.token);
    const onB = followLogs(b.url, t.token, 'e1', 'ticker', dir);
    const throughA = followLogs(a.url, t.token, 'e1', 'ticker', dir);
    await events.opened;
    await flowing(onB, 'the log follow on B');
    await flowing(throughA, 'the log follow through A');

    const revokedAt = Date.now();
    await adminApi(a, 'DELETE', `/api/v1/tokens/${t.id}`);
    const eventsS = await secondsToEnd(events, revokedAt, PROMPT_MS, "B's event stream to end");
    const onBS = await secondsToEnd(onB, revokedAt, PROMPT_MS, "B's log follow to end");
    const throughAS = await secondsToEnd(throughA, revokedAt, PROMPT_MS, 'the log follow through A to end');
    console.log(
      `item 8 (2 PostgreSQL replicas): revoked through A; on B the event stream ended in ${eventsS.toFixed(2)} s, logs --follow in ${onBS.toFixed(2)} s; a follow through A (forwarded to B) in ${throughAS.toFixed(2)} s`,
    );
    expect(events.events.at(-1)).toMatchObject({ event: 'unauthorized' });
    expect(events.events.at(-1)!.data.message).toMatch(new RegExp(`token ${t.id} was revoked`));
    for (const f of [onB, throughA]) expect((await f.run).stderr).toMatch(/broke off/);
  });
});
