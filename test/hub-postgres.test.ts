/**
 * `outpost hub --database postgres://...` (issue #22): a real hub process keeps its tables in a
 * real PostgreSQL (test/fixtures/postgres.ts) and its edges' documents in --data. An edge agent
 * (process driver) enrolls, a placement reaches Ready, and the objects, the edge and its status
 * are rows of PostgreSQL. With PostgreSQL stopped for 20 s (issue #22's test 3, one hub), /readyz
 * says so, the API answers 503 naming the database and the edge's workload keeps running; started
 * again, the same hub process records heartbeats and delivers a new placement without a restart.
 * Two hub processes started at once on an empty database migrate it once (issue #22's test 4 with
 * real processes; test/hub-state-postgres.test.ts races three at the schema level). A wrong URL or a
 * database that cannot be reached ends the start with a message naming the problem and the fix.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubSchemas } from '../hub/state/schema/index.js';
import { openSqlite } from '../sync/native.js';
import { TestPostgres } from './fixtures/postgres.js';
import { fetchIdempotent, tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startHubProc, type HubProc } from './procs.js';

const server = new TestPostgres();
let dir: string;
let url: string;
let hub: HubProc;
let env: Record<string, string>;
const procs: Proc[] = [];
const pidFiles: string[] = [];

/** GET with the admin token (the hub serves plain HTTP here). */
async function get(p: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetchIdempotent(`${hub.url}${p}`, { headers: { authorization: `Bearer ${hub.token}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  dir = tempDir('outpost-hub-pg-');
  await server.start();
  url = server.createDatabase('hub');
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http', '--database', url]);
  procs.push(hub.proc);
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json'), OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token };
}, 90_000);

afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM');
  for (const f of pidFiles) {
    try {
      process.kill(Number(fs.readFileSync(f, 'utf8').trim()), 'SIGKILL');
    } catch {
      /* gone already, or never started */
    }
  }
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('outpost hub --database', () => {
  it('keeps the hub’s tables in PostgreSQL: an edge enrolls and a placement reaches Ready', async () => {
    const join = (await cli(['token', 'create', '--labels', 'site=a'], env)).stdout.trim();
    expect(join).toMatch(/^opj1\./);
    const edge = new Proc(['edge', '--data', path.join(dir, 'edge'), '--hub', hub.url, '--name', 'e1'], {
      OUTPOST_JOIN_TOKEN: join,
    });
    procs.push(edge);
    const pid = path.join(dir, 'web.pid');
    pidFiles.push(pid);
    const file = path.join(dir, 'web.yaml');
    fs.writeFileSync(
      file,
      `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata: { name: web }
spec:
  manifests:
    - apiVersion: v1
      kind: Pod
      metadata: { name: web }
      spec:
        terminationGracePeriodSeconds: 1
        containers:
          - name: main
            image: localhost/outpost-busybox:latest
            command: [sh, -c, 'echo $$$$ > ${pid} && exec sleep 3600']
---
apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata: { name: web }
spec:
  edgeSelector: { matchLabels: { site: a } }
  workloads: [web]
`,
    );
    const applied = await cli(['apply', '-f', file], env);
    expect(applied.code, applied.stderr).toBe(0);
    await waitFor(async () => (/web\s+1\/1/.test((await cli(['get', 'placements'], env)).stdout) ? true : null), {
      timeout: 90_000,
      what: `placement web Ready on e1 (edge log: ${edge.err.slice(-500)})`,
    });

    // The same facts are rows of PostgreSQL, not of the SQLite file in --data.
    expect(
      server.sql("SELECT name FROM objects WHERE kind IN ('Workload', 'Placement') ORDER BY kind, name", 'hub'),
    ).toBe('web\nweb');
    expect(server.sql('SELECT name, approved FROM edge_runtime', 'hub')).toBe('e1|1');
    expect(server.sql('SELECT edge FROM edge_credentials', 'hub')).toBe('e1');
    expect(server.sql("SELECT phase FROM workload_status WHERE edge = 'e1' AND workload = 'web'", 'hub')).toBe('Ready');
    expect(Number(server.sql("SELECT count(*) FROM api_tokens WHERE role = 'admin'", 'hub'))).toBe(1);
    expect(await get('/readyz')).toEqual({ status: 200, body: { ready: true } });
    // The SQLite file of --data holds the edges' documents, none of the hub's tables.
    const hubDb = openSqlite(path.join(dir, 'hub', 'hub.db'), { readonly: true });
    try {
      const tables = (
        hubDb.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]
      ).map((t) => t.name);
      expect(tables).toContain('docs');
      expect(tables.filter((t) => ['objects', 'edge_runtime', 'api_tokens', 'workload_status'].includes(t))).toEqual(
        [],
      );
    } finally {
      hubDb.close();
    }
    // No statement of the hub's was refused by PostgreSQL (SQL that only SQLite takes).
    expect(hub.proc.err).not.toMatch(/DatabaseError/);
  }, 180_000);

  it('is not ready and answers 503 naming the database while PostgreSQL is stopped for 20 s, and converges by itself', async () => {
    const workload = Number(fs.readFileSync(path.join(dir, 'web.pid'), 'utf8').trim());
    await server.stop();
    const stoppedAt = Date.now();
    const down = await get('/readyz');
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ ready: false });
    expect(String(down.body.reason)).toMatch(
      /the database at postgres:\/\/outpost@127\.0\.0\.1:\d+\/hub is unreachable/,
    );
    const api = await get('/api/v1/projects/default/workloads');
    expect(api.status).toBe(503);
    expect(api.body).toMatchObject({ error: { code: 'unavailable' } });
    expect(JSON.stringify(api.body)).toMatch(/the database at postgres:\/\/.*\/hub is unreachable/);
    const listed = await cli(['get', 'workloads'], env);
    expect(listed.code).toBe(1);
    expect(listed.stderr).toMatch(/database at postgres:\/\/.*unreachable/);

    // The outage of issue #22's test 3: the edge keeps running its workload meanwhile.
    await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + 20_000 - Date.now())));
    expect(() => process.kill(workload, 0)).not.toThrow();
    expect(hub.proc.alive).toBe(true);

    await server.start();
    const restartedAt = Date.now();
    await waitFor(async () => ((await get('/readyz')).status === 200 ? true : null), {
      what: 'the hub to be ready again',
    });
    // Converged without a restart: the edge's heartbeats reach PostgreSQL again, and a change
    // applied now reaches the edge and runs.
    await waitFor(
      () => Number(server.sql("SELECT last_seen FROM edge_runtime WHERE name = 'e1'", 'hub')) > restartedAt,
      {
        timeout: 60_000,
        what: "e1's heartbeats to be recorded again",
      },
    );
    const apiPid = path.join(dir, 'api.pid');
    pidFiles.push(apiPid);
    const file = path.join(dir, 'api.yaml');
    fs.writeFileSync(
      file,
      `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata: { name: api }
spec:
  manifests:
    - apiVersion: v1
      kind: Pod
      metadata: { name: api }
      spec:
        terminationGracePeriodSeconds: 1
        containers:
          - name: main
            image: localhost/outpost-busybox:latest
            command: [sh, -c, 'echo $$$$ > ${apiPid} && exec sleep 3600']
---
apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata: { name: api }
spec:
  edgeSelector: { matchLabels: { site: a } }
  workloads: [api]
`,
    );
    const applied = await cli(['apply', '-f', file], env);
    expect(applied.code, applied.stderr).toBe(0);
    await waitFor(
      async () =>
        /api\s+1\/1/.test((await cli(['get', 'placements'], env)).stdout) && fs.existsSync(apiPid) ? true : null,
      { timeout: 90_000, what: 'placement api Ready on e1 after the outage' },
    );
    expect((await cli(['get', 'placements'], env)).stdout).toMatch(/web\s+1\/1/);
    expect(() => process.kill(workload, 0)).not.toThrow();
    expect(hub.proc.alive).toBe(true);
  }, 180_000);

  it('two hub processes started at the same moment on an empty database migrate it once, and both serve', async () => {
    const empty = server.createDatabase('twins');
    // Their logs on (OUTPOST_TEST_LOG: a child of vitest drops them otherwise): each says how many
    // migrations it applied.
    const hubs = await Promise.all(
      ['a', 'b'].map(async (n) => {
        const data = path.join(dir, `twin-${n}`);
        const proc = new Proc(
          ['hub', '--data', data, '--listen', `127.0.0.1:${await freePort()}`, '--insecure-http', '--database', empty],
          { OUTPOST_TEST_LOG: '1' },
        );
        const url = await waitFor(
          () =>
            /listening on (\S+)/.exec(proc.err)?.[1] ??
            (proc.alive ? null : Promise.reject(new Error(`hub ${n} exited: ${proc.err}`))),
          { timeout: 30_000, what: `hub ${n} to listen` },
        );
        // One admin token per database (no --identity-key here): only the twin that made it has the file.
        const file = path.join(data, 'admin.token');
        return { proc, url, token: fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : '' };
      }),
    );
    try {
      for (const h of hubs) procs.push(h.proc);
      const applied = hubs.map((h) => {
        const line = h.proc.out.split('\n').find((l) => l.includes('database schema up to date'));
        return Number((JSON.parse(line!) as { migrationsApplied: number }).migrationsApplied);
      });
      const all = hubSchemas().reduce((n, c) => n + c.migrations.length, 0);
      expect(applied.sort()).toEqual([0, all]);
      expect(Number(server.sql('SELECT count(*) FROM schema_versions', 'twins'))).toBe(hubSchemas().length);
      for (const h of hubs) expect(await (await fetch(`${h.url}/readyz`)).json()).toEqual({ ready: true });
      // One admin token for the database, made by one of them, known to both.
      const tokens = hubs.map((h) => h.token).filter(Boolean);
      expect(tokens).toHaveLength(1);
      for (const h of hubs) {
        const r = await fetch(`${h.url}/api/v1/projects/default/workloads`, {
          headers: { authorization: `Bearer ${tokens[0]}` },
        });
        expect(r.status).toBe(200);
      }
    } finally {
      for (const h of hubs) await h.proc.kill('SIGTERM');
    }
  }, 120_000);

  it('refuses to start on a wrong URL or a database it cannot use, naming the problem and the fix', async () => {
    const start = async (database: string) => {
      const r = await cli(
        ['hub', '--data', path.join(dir, 'refused'), '--listen', `127.0.0.1:${await freePort()}`, '--insecure-http'],
        { OUTPOST_DATABASE: database },
      );
      expect(r.code).not.toBe(0);
      return r.stderr;
    };
    expect(await start('mysql://u:secret@localhost/db')).toMatch(
      /--database mysql:\/\/u:\*\*\*@localhost\/db: it is a mysql URL: use postgres:\/\/USER:PASSWORD@HOST:PORT\/DATABASE/,
    );
    const closed = `postgres://outpost:secret@127.0.0.1:${await freePort()}/hub`;
    const unreachable = await start(closed);
    expect(unreachable).toMatch(/cannot reach the hub database at postgres:\/\/outpost:\*\*\*@127\.0\.0\.1:\d+\/hub/);
    expect(unreachable).toMatch(/check that PostgreSQL runs there/);
    expect(unreachable).not.toContain('secret');
    expect(await start(server.url('nowhere'))).toMatch(/the database does not exist: create it/);
  }, 90_000);
});
