/**
 * `outpost hub backup` and `outpost hub restore` of a hub on PostgreSQL (issue #41, item 12;
 * docs/operations.md, "Backup and restore"), against a throwaway PostgreSQL. A SQLite hub with a
 * workload is moved with `hub migrate` and started on PostgreSQL, where a second workload is
 * applied; its DATA/hub.db still holds the SQLite tables of before the migration. `hub backup
 * --data DIR` alone refuses, naming the procedure, instead of copying that stale file; with
 * `--database` it writes an archive (pg_dump of the hub's schema and the documents' file) that
 * `hub restore` puts into an empty database and a new data directory, where a hub starts with both
 * workloads. A restore into a database that holds tables, over a hub.db, or without --database is
 * refused; a SQLite hub's backup restores as before (and refuses --database).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../hub/hub.js';
import { openSqlite } from '../sync/native.js';
import { adminApi } from './fixtures/in-process-fleet.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir } from './helpers.js';
import { cli } from './procs.js';

const server = new TestPostgres();
let dir: string;
let hubDir: string;
let url: string;
let hub: Hub | undefined;
const hubs: Hub[] = [];

const workload = (name: string) => ({
  kind: 'Workload',
  metadata: { name },
  spec: {
    manifests: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: { containers: [{ name: 'c', image: 'busybox', command: ['sleep', '3600'] }] },
      },
    ],
  },
});

async function started(dataDir: string, database?: string): Promise<Hub> {
  const h = await startHub({ dataDir, listen: '127.0.0.1:0', insecureHttp: true, ...(database ? { database } : {}) });
  hubs.push(h);
  return h;
}

const workloadNames = async (h: Hub): Promise<string[]> =>
  (await adminApi<{ items: { metadata: { name: string } }[] }>(h, 'GET', '/api/v1/projects/default/workloads')).items
    .map((w) => w.metadata.name)
    .sort();

beforeAll(async () => {
  dir = tempDir('outpost-backup-pg-');
  hubDir = path.join(dir, 'hub');
  await server.start();
  url = server.createDatabase('hub');
  // A SQLite hub with one workload, stopped, backed up (its own way), and moved to PostgreSQL.
  const sqliteHub = await started(hubDir);
  await adminApi(sqliteHub, 'POST', '/api/v1/apply', { objects: [workload('before-migrate')] });
  await sqliteHub.close();
  const b = await cli(['hub', 'backup', '--data', hubDir, '--to', path.join(dir, 'sqlite-backup.db')]);
  expect(b.code, b.stderr).toBe(0);
  const moved = await cli(['hub', 'migrate', '--data', hubDir, '--database', url]);
  expect(moved.code, moved.stderr).toBe(0);
  hub = await started(hubDir, url);
  await adminApi(hub, 'POST', '/api/v1/apply', { objects: [workload('after-migrate')] });
  expect(await workloadNames(hub)).toEqual(['after-migrate', 'before-migrate']);
}, 120_000);

afterAll(async () => {
  for (const h of hubs) await h.close().catch(() => undefined);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('outpost hub backup of a hub on PostgreSQL', () => {
  it('with --data alone: refused, naming the procedure, not a copy of the stale hub.db', async () => {
    const to = path.join(dir, 'refused.bak');
    const r = await cli(['hub', 'backup', '--data', hubDir, '--to', to]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/keeps its tables in PostgreSQL \(postgres:\/\/outpost@127\.0\.0\.1:\d+\/hub/);
    expect(r.stderr).toMatch(/--database URL \(or OUTPOST_DATABASE\)/);
    expect(r.stderr).toMatch(/outpost hub restore; docs\/operations\.md, "Backup and restore"/);
    expect(fs.existsSync(to)).toBe(false);
  });

  it('with --database: one archive that hub restore brings back into an empty database', async () => {
    const to = path.join(dir, 'hub.bak');
    // While the hub runs; the database from the environment, as a unit's EnvironmentFile gives it.
    const b = await cli(['hub', 'backup', '--data', hubDir, '--to', to], { OUTPOST_DATABASE: url });
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toMatch(/the hub's tables in postgres:\/\/\S+ \(pg_dump of schema public\)/);
    expect(fs.statSync(to).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('.outpost-backup-'))).toEqual([]);

    const restoredDir = path.join(dir, 'restored');
    const target = server.createDatabase('restored');
    const r = await cli(['hub', 'restore', '--data', restoredDir, '--from', to, '--database', target]);
    expect(r.code, r.stderr).toBe(0);
    expect(server.sql("SELECT name FROM objects WHERE kind = 'Workload' ORDER BY name", 'restored')).toBe(
      'after-migrate\nbefore-migrate',
    );
    expect(fs.statSync(path.join(restoredDir, 'hub.db')).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(path.join(restoredDir, 'hub-database.json'), 'utf8')).tables).toBe('postgres');

    // A hub started on them has both workloads; the old admin token is a row of the database.
    fs.copyFileSync(path.join(hubDir, 'secrets.key'), path.join(restoredDir, 'secrets.key'));
    fs.copyFileSync(path.join(hubDir, 'admin.token'), path.join(restoredDir, 'admin.token'));
    const second = await started(restoredDir, target);
    expect(second.adminToken).toBe(hub!.adminToken);
    expect(await workloadNames(second)).toEqual(['after-migrate', 'before-migrate']);

    // Never into a database that holds tables, over a hub.db, or without the database.
    const again = await cli(['hub', 'restore', '--data', path.join(dir, 'again'), '--from', to, '--database', target]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds tables in schema public \(.*\): restore into an empty database/);
    const over = await cli(['hub', 'restore', '--data', restoredDir, '--from', to, '--database', url]);
    expect(over.stderr).toMatch(/hub\.db exists: restore into a data directory without a hub\.db/);
    const bare = await cli(['hub', 'restore', '--data', path.join(dir, 'bare'), '--from', to], {
      OUTPOST_DATABASE: '',
    });
    expect(bare.code).toBe(1);
    expect(bare.stderr).toMatch(/is the backup of a hub on PostgreSQL .*: give --database URL/);
  });

  it("a SQLite hub's backup restores as hub.db, and refuses --database", async () => {
    const from = path.join(dir, 'sqlite-backup.db');
    const refused = await cli(['hub', 'restore', '--data', path.join(dir, 's1'), '--from', from, '--database', url]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/backup of a hub on SQLite .*: restore it without --database/);
    const ok = await cli(['hub', 'restore', '--data', path.join(dir, 's2'), '--from', from]);
    expect(ok.code, ok.stderr).toBe(0);
    const db = openSqlite(path.join(dir, 's2', 'hub.db'), { readonly: true });
    try {
      expect(db.prepare("SELECT name FROM objects WHERE kind = 'Workload'").all()).toEqual([
        { name: 'before-migrate' },
      ]);
    } finally {
      db.close();
    }
  });
});
