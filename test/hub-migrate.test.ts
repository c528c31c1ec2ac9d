/**
 * `outpost hub migrate` (issue #22): a SQLite hub with an enrolled edge and a Ready placement is
 * stopped, its tables moved into an empty PostgreSQL, and the same data directory started with
 * `--database`: the edge (never restarted) reconnects with its credential, without enrolling
 * again, keeps its workload, and receives a new one. A second migrate into the same database is
 * refused; nothing is mixed. Issue #22 test 5 with one hub: objects, revisions, tokens, credentials and
 * events are all there, row for row.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../sync/native.js';
import { hostPod, killHostWorkloads } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

const server = new TestPostgres();
let dir: string;
let hubDir: string;
let pids: string;
let port: number;
let url: string;
let hub: HubProc;
let edge: Proc;
let env: Record<string, string>;

async function apply(...objects: unknown[]): Promise<void> {
  const file = path.join(dir, `apply-${Date.now()}.json`);
  fs.writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  const r = await cli(['apply', '-f', file], env);
  expect(r.code, r.stderr).toBe(0);
}

const placed = (name: string) => ({
  apiVersion: 'outpost.dev/v1alpha1',
  kind: 'Placement',
  metadata: { name },
  spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: [name] },
});

async function readyOnE1(name: string): Promise<void> {
  await waitFor(async () => new RegExp(`${name}\\s+1/1`).test((await cli(['get', 'placements'], env)).stdout), {
    timeout: 90_000,
    what: `placement ${name} Ready on e1`,
  });
}

beforeAll(async () => {
  dir = tempDir('outpost-hub-migrate-');
  hubDir = path.join(dir, 'hub');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  await server.start();
  url = server.createDatabase('hub');
  port = await freePort();
  hub = await startHubProc(hubDir, port, ['--insecure-http']);
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json'), OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token };
}, 90_000);

afterAll(async () => {
  await edge?.kill('SIGTERM').catch(() => undefined);
  await hub?.proc.kill('SIGTERM').catch(() => undefined);
  killHostWorkloads(pids);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('outpost hub migrate', () => {
  it('moves a SQLite hub into PostgreSQL; its edge reconnects with its credential and gets new work', async () => {
    const join = (await cli(['token', 'create', '--labels', 'site=a'], env)).stdout.trim();
    edge = await startEdgeProc(path.join(dir, 'edge'), [
      '--hub',
      hub.url,
      '--join-token',
      join,
      '--name',
      'e1',
      '--driver',
      'process',
    ]);
    await apply(hostPod('web', 'sleep 3600', { pidDir: pids }), placed('web'));
    await readyOnE1('web');

    await hub.proc.kill('SIGTERM');
    // What the SQLite hub holds, table by table: all of it must be in PostgreSQL after the move.
    const TABLES = [
      'objects',
      'workload_revisions',
      'events',
      'api_tokens',
      'join_tokens',
      'edge_credentials',
      'edge_runtime',
    ];
    const before = new Map<string, number>();
    const sqlite = openSqlite(path.join(hubDir, 'hub.db'), { readonly: true });
    try {
      for (const t of TABLES)
        before.set(t, (sqlite.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n);
    } finally {
      sqlite.close();
    }
    expect(before.get('events')).toBeGreaterThan(0);
    expect(before.get('workload_revisions')).toBeGreaterThan(0);
    // With the identity key, the old hub's secrets key and release key (no CA: plain HTTP) go too.
    const keyFile = path.join(dir, 'identity.key');
    fs.writeFileSync(keyFile, (await cli(['hub', 'identity-key'])).stdout, { mode: 0o600 });
    const moved = await cli(['hub', 'migrate', '--data', hubDir, '--database', url, '--identity-key', keyFile]);
    expect(moved.code, moved.stderr).toBe(0);
    // Its messages only: no JSON log line among them (issue #42, item 10).
    expect(moved.stdout.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);
    expect(moved.stdout).toMatch(/^the hub identity is in the database \(release-key, secrets-key\)/m);
    expect(server.sql('SELECT part FROM hub_identity ORDER BY part', 'hub')).toBe('release-key\nsecrets-key');
    expect(moved.stdout).toMatch(/^edge_credentials: 1 rows$/m);
    expect(moved.stdout).toMatch(/^objects: \d+ rows$/m);
    expect(moved.stdout).toMatch(/moved \d+ rows of \S+hub\.db into postgres:\/\/\S+; start the hub with/);
    expect(server.sql("SELECT name FROM objects WHERE kind = 'Placement'", 'hub')).toBe('web');
    expect(server.sql('SELECT edge FROM edge_credentials', 'hub')).toBe('e1');
    for (const t of TABLES)
      expect([t, Number(server.sql(`SELECT count(*) FROM ${t}`, 'hub'))]).toEqual([t, before.get(t)]);

    // Never twice into the same database.
    const again = await cli(['hub', 'migrate', '--data', hubDir, '--database', url]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/the database already holds hub data \(tables .*\): migrate into an empty database/);

    hub = await startHubProc(hubDir, port, ['--insecure-http', '--database', url, '--identity-key', keyFile]);
    // The same admin token (its row moved), the same edge: online again without enrolling.
    await waitFor(
      async () => {
        const r = await cli(['get', 'edges', '-o', 'json'], env);
        return r.code === 0 && JSON.parse(r.stdout).items.some((e: any) => e.status?.phase === 'Online');
      },
      { timeout: 60_000, what: 'e1 online on the PostgreSQL hub' },
    );
    await readyOnE1('web');
    // New work reaches it through the hub on PostgreSQL, and the events' ids go on from the old ones.
    await apply(hostPod('api', 'sleep 3600', { pidDir: pids }), placed('api'));
    await readyOnE1('api');
    expect(Number(server.sql("SELECT count(*) FROM objects WHERE kind = 'Workload'", 'hub'))).toBe(2);
    expect(hub.proc.err).not.toMatch(/DatabaseError|duplicate key/);
  }, 240_000);
});
