/**
 * The hub's state modules on a real PostgreSQL (issue #22): the same suites that hub/state/*.test.ts
 * run on SQLite (test/fixtures/state-suites.ts), through the synchronous client, each test on a
 * fresh schema migrated from the hub's one list of migrations. And issue #22's test 4 at the
 * schema level: three processes migrating one empty database at the same moment apply each
 * migration once between them (the advisory lock).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUB_MIGRATIONS } from '../hub/db.js';
import { migratePostgres } from '../hub/state/pg/schema.js';
import { SyncPostgres } from '../hub/state/pg/sync-client.js';
import { postgresHubState } from '../hub/state/index.js';
import { TestPostgres } from './fixtures/postgres.js';
import {
  assignmentStoreSuite,
  edgeStateSuite,
  eventLogSuite,
  objectStateSuite,
  statusStateSuite,
} from './fixtures/state-suites.js';

const server = new TestPostgres();
let pg: SyncPostgres;
let url: string;
let schemas = 0;

beforeAll(async () => {
  await server.start();
  url = server.createDatabase('hub_state');
  pg = new SyncPostgres(url);
}, 60_000);

afterAll(async () => {
  await pg?.close();
  await server.remove();
});

/** A fresh schema on the one connection, migrated: what the suites get for each test. */
function freshDb(): SyncPostgres {
  const schema = `t${++schemas}`;
  pg.exec(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
  migratePostgres(pg);
  return pg;
}
const fresh = () => postgresHubState(freshDb());

describe('hub state on PostgreSQL', () => {
  objectStateSuite(fresh);
  edgeStateSuite(fresh);
  eventLogSuite(fresh);
  assignmentStoreSuite(freshDb);
  statusStateSuite(() => {
    const db = freshDb();
    return { db, state: postgresHubState(db) };
  });

  it('three replicas migrating an empty database at the same moment apply each migration once', async () => {
    const url = server.createDatabase('hub_race');
    const at = String(Date.now() + 5_000);
    const script = path.join(import.meta.dirname, 'fixtures', 'migrate-postgres.ts');
    const runs = await Promise.all(
      [1, 2, 3].map(
        () =>
          new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
            const child = spawn(process.execPath, ['--import', 'tsx', script, url, at], { stdio: 'pipe' });
            let out = '';
            let err = '';
            child.stdout.on('data', (c) => (out += c));
            child.stderr.on('data', (c) => (err += c));
            child.on('close', (code) => resolve({ code, out, err }));
          }),
      ),
    );
    for (const r of runs) expect(r.code, r.err).toBe(0);
    const applied = runs.map((r) => Number(r.out.trim()));
    expect(applied.reduce((a, b) => a + b, 0)).toBe(HUB_MIGRATIONS.length);
    const check = new SyncPostgres(url);
    try {
      expect(check.one("SELECT version FROM schema_versions WHERE component = 'hub'")).toEqual({
        version: Math.max(...HUB_MIGRATIONS.map((m) => m.version)),
      });
    } finally {
      await check.close();
    }
  }, 60_000);
});
