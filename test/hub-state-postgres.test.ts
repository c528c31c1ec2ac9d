/**
 * The hub's state modules on a real PostgreSQL (issue #22): the same suites that hub/state/*.test.ts
 * run on SQLite (test/fixtures/state-suites.ts), through the synchronous client, each test on a
 * fresh schema migrated from the hub's one list of migrations. And issue #22's test 4 at the
 * schema level: three processes migrating one empty database at the same moment apply each
 * migration once between them (the advisory lock).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJoinToken } from '../hub/auth/join-tokens.js';
import { sqlAuthTables } from '../hub/state/auth.js';
import { hubSchemas } from '../hub/state/schema/index.js';
import { migratePostgres } from '../hub/state/pg/schema.js';
import { recordConnects, recordDisconnects } from '../hub/edges/history.js';
import { alreadyWritten, write } from '../hub/state/sql.js';
import { recordEvent } from '../hub/state/events.js';
import { SyncPostgres } from '../hub/state/pg/sync-client.js';
import {
  postgresHubState,
  prefetchDisconnects,
  prefetchHandshakes,
  type HandshakeReaders,
  type HubState,
} from '../hub/state/index.js';
import { SqlAssignmentStore } from '../hub/state/assignments.js';
import { edgeReads, sqlEdgeState } from '../hub/state/edges.js';
import {
  blobIndexSuite,
  catalogStateSuite,
  dataFileSuite,
  imagePinSuite,
  imageTagSuite,
} from './fixtures/artifact-suites.js';
import { hubIdentitySuite, identityStoreSuite } from './fixtures/identity-suites.js';
import { apiTokenSuite, edgeCredentialSuite, joinTokenSuite, proxySessionSuite } from './fixtures/auth-suites.js';
import { psqlBinary, TestPostgres } from './fixtures/postgres.js';
import { tempDir } from './helpers.js';
import { clusterStateSuite } from './fixtures/cluster-state-suite.js';
import {
  agentUpgradeSuite,
  assignmentStoreSuite,
  dataProgressSuite,
  edgeLeaseSuite,
  hubReplicaSuite,
  edgeStateSuite,
  eventLogSuite,
  imageStagingSuite,
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

const dirs: string[] = [];

/**
 * What the four kinds of orders declare they read at a handshake (each source's `handshakeReads`:
 * hub/scheduler/index.ts, hub/upgrades/controller.ts, hub/images/staging.ts, hub/data/delivery.ts),
 * as the hub's order engine gathers them.
 */
const kindReads = (state: HubState): HandshakeReaders => ({
  handshakeReads: (edge) => [
    ...state.schedulerEdges.handshakeReads(edge),
    ...state.assignments.handshakeReads(edge),
    ...state.agentUpgrades.handshakeReads(edge),
    ...state.imageStaging.handshakeReads(edge),
    state.readsAhead.edgeRuntime(edge),
  ],
  projectReads: (project) => [state.readsAhead.objects('DataObject', project)],
});
afterAll(async () => {
  await pg?.close();
  await server.remove();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A fresh schema on the one connection, migrated: what the suites get for each test. */
function freshDb(): SyncPostgres {
  const schema = `t${++schemas}`;
  pg.exec(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
  migratePostgres(pg);
  return pg;
}
const fresh = () => postgresHubState(freshDb());
/** A fresh schema and a data directory, for the suites of hub/auth, hub/tunnel and the artifact tables. */
const open = () => {
  const dir = tempDir('outpost-pg-suite-');
  dirs.push(dir);
  return { db: freshDb(), dir };
};

/** Runs a script in its own process: `node --import tsx SCRIPT ARGS...`. */
function runScript(script: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: 'pipe' });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('hub state on PostgreSQL', () => {
  objectStateSuite(fresh);
  edgeStateSuite(fresh);
  eventLogSuite(fresh);
  dataProgressSuite(fresh);
  agentUpgradeSuite(fresh);
  imageStagingSuite(fresh);
  clusterStateSuite(fresh);
  assignmentStoreSuite(freshDb);
  edgeLeaseSuite(freshDb);
  hubReplicaSuite(freshDb);
  statusStateSuite(() => {
    const db = freshDb();
    return { db, state: postgresHubState(db) };
  });
  apiTokenSuite(open);
  joinTokenSuite(open);
  edgeCredentialSuite(open);
  proxySessionSuite(open);
  blobIndexSuite(open);
  dataFileSuite(open);
  catalogStateSuite(open);
  imageTagSuite(open);
  imagePinSuite(open);
  identityStoreSuite(freshDb);
  hubIdentitySuite(open);

  it('join token uses consumed by processes at once on one database never pass the limit', async () => {
    const url = server.createDatabase('join_race');
    const setup = new SyncPostgres(url);
    let token: string;
    try {
      migratePostgres(setup);
      token = createJoinToken(sqlAuthTables(setup), { project: 'shop', uses: 60 });
    } finally {
      await setup.close();
    }
    const dir = tempDir('outpost-pg-race-');
    dirs.push(dir);
    const go = path.join(dir, 'go');
    const script = path.join(import.meta.dirname, 'fixtures', 'join-race.ts');
    const runs = [1, 2, 3].map(() => runScript(script, [url, token, '40', go]));
    // The processes spin until the file appears; they load within seconds of each other.
    setTimeout(() => fs.writeFileSync(go, ''), 3_000);
    const results = await Promise.all(runs);
    for (const r of results) expect(r.code, r.err).toBe(0);
    const parsed = results.map((r) => JSON.parse(r.out.replace(/^ready\n/, '')) as { ok: number; errors: string[] });
    expect(parsed.reduce((n, r) => n + r.ok, 0)).toBe(60);
    expect(new Set(parsed.flatMap((r) => r.errors))).toEqual(
      new Set(['join token already used 60 times (limit 60): create a new one with `outpost token create`']),
    );
    expect(server.sql('SELECT uses FROM join_tokens', 'join_race')).toBe('60');
  }, 60_000);

  it('three replicas migrating an empty database at the same moment apply each migration once', async () => {
    const url = server.createDatabase('hub_race');
    const at = String(Date.now() + 5_000);
    const script = path.join(import.meta.dirname, 'fixtures', 'migrate-postgres.ts');
    const runs = await Promise.all([1, 2, 3].map(() => runScript(script, [url, at])));
    for (const r of runs) expect(r.code, r.err).toBe(0);
    const applied = runs.map((r) => Number(r.out.trim()));
    const schemas = hubSchemas();
    expect(applied.reduce((a, b) => a + b, 0)).toBe(schemas.reduce((n, c) => n + c.migrations.length, 0));
    const check = new SyncPostgres(url);
    try {
      expect(check.all('SELECT component, version FROM schema_versions ORDER BY component')).toEqual(
        schemas
          .map((c) => ({ component: c.component, version: Math.max(...c.migrations.map((m) => m.version)) }))
          .sort((a, b) => (a.component < b.component ? -1 : 1)),
      );
    } finally {
      await check.close();
    }
  }, 60_000);
});

describe('reads given ahead on PostgreSQL (hub/state/index.ts prefetchHandshakes)', () => {
  it("answers an edge handshake's reads from one round trip, until a write to their table", async () => {
    const db = freshDb();
    const state = postgresHubState(db);
    state.edges.enroll({ name: 'e1', project: 'shop', approved: true, at: 1 });
    state.events.record({ project: 'shop', kind: 'Edge', name: 'e1', reason: 'Connected', message: 'first', at: 2 });
    let trips = db.roundTrips;
    prefetchHandshakes(db, ['e1'], kindReads(state));
    // The edges' projects (once), then the reads; then, its project known, one round trip.
    expect(db.roundTrips - trips).toBe(2);
    await new Promise((r) => setImmediate(r));
    trips = db.roundTrips;
    prefetchHandshakes(db, ['e1'], kindReads(state));
    expect(db.roundTrips - trips).toBe(1);
    // What the handshake's writers and its connection history read: no round trip of their own.
    expect(state.edges.get('e1')?.project).toBe('shop');
    expect(new SqlAssignmentStore(db).specInputs(['e1']).get('e1')?.keys).toEqual([]);
    expect(state.agentUpgrades.order('e1')).toBeUndefined();
    expect(state.imageStaging.ordersOf('e1')).toEqual([]);
    expect(state.objects.list('DataObject', 'shop')).toEqual([]);
    expect(state.events.last('shop', 'Edge', 'e1')?.message).toBe('first');
    expect(db.roundTrips - trips).toBe(1);
    // A write to a table forgets what was read ahead from it, and only that.
    state.events.record({ project: 'shop', kind: 'Edge', name: 'e1', reason: 'Connected', message: 'second', at: 3 });
    const after = db.roundTrips;
    expect(state.edges.projectOf('e1')).toBe('shop');
    expect(db.roundTrips).toBe(after);
    expect(state.events.last('shop', 'Edge', 'e1')?.message).toBe('second');
    // Read again: the round trip it saved before.
    expect(db.roundTrips).toBe(after + 1);
  });

  it('reads and records the handshakes of a whole batch of edges in two round trips', async () => {
    const db = freshDb();
    const state = postgresHubState(db);
    const edges = ['b1', 'b2', 'b3', 'b4', 'b5'];
    const projectOf = (name: string) => (name < 'b4' ? 'shop' : 'farm');
    for (const [i, name] of edges.entries()) {
      state.edges.enroll({ name, project: projectOf(name), approved: true, at: 1 });
      // b5 left long ago: its connection is a new event; the others' update their last one.
      const at = name === 'b5' ? 1 : Date.now() - 1000 + i;
      state.events.record({
        project: projectOf(name),
        kind: 'Edge',
        name,
        reason: 'Disconnected',
        message: 'gone',
        at,
      });
    }
    prefetchHandshakes(db, edges, kindReads(state)); // learns the edges' projects
    await new Promise((r) => setImmediate(r));
    const trips = db.roundTrips;
    // The reads of every edge, each kind as one statement for all (sql.ts keyed), split by edge.
    prefetchHandshakes(db, edges, kindReads(state));
    for (const name of edges) {
      expect(state.edges.get(name)?.project).toBe(projectOf(name));
      expect(new SqlAssignmentStore(db).specInputs([name]).get(name)?.keys).toEqual([]);
      expect(state.agentUpgrades.order(name)).toBeUndefined();
      expect(state.imageStaging.ordersOf(name)).toEqual([]);
    }
    recordConnects(
      state,
      edges.map((edge) => ({ edge, remoteAddress: '10.0.0.9', agentVersion: 't', replica: 'r1', connection: edge })),
    );
    // One round trip reads for all, one records all (BEGIN, the writes and COMMIT pipelined).
    expect(db.roundTrips - trips).toBe(2);
    for (const name of edges) {
      const last = state.events.last(projectOf(name), 'Edge', name);
      expect(last?.reason).toBe(name === 'b5' ? 'Connected' : 'Reconnected');
      expect(last?.message).toContain(`edge ${name} `);
      expect(state.edges.get(name)?.connectedSince).toBeGreaterThan(0);
    }
    expect(state.events.list('shop', { limit: 100 }).length + state.events.list('farm', { limit: 100 }).length).toBe(6);
  });

  it("reads and records a turn's disconnections in two round trips, an edge closed twice in order", async () => {
    const db = freshDb();
    const state = postgresHubState(db);
    const edges = ['d1', 'd2', 'd3', 'd4'];
    const projectOf = (name: string) => (name === 'd4' ? 'farm' : 'shop');
    for (const name of edges) {
      state.edges.enroll({ name, project: projectOf(name), approved: true, at: 1 });
      state.edges.connected(name, {
        at: 2,
        agentVersion: 't',
        remoteAddress: '10.0.0.9',
        replica: 'r1',
        connection: name,
      });
      state.events.record({ project: projectOf(name), kind: 'Edge', name, reason: 'Connected', message: 'up', at: 2 });
    }
    prefetchHandshakes(db, edges, kindReads(state)); // learns the edges' projects
    await new Promise((r) => setImmediate(r));
    const trips = db.roundTrips;
    prefetchDisconnects(db, edges);
    recordDisconnects(
      state,
      edges.map((edge) => ({ edge, connection: edge, code: 1006, reason: '' })),
    );
    // One round trip reads for all, one records all.
    expect(db.roundTrips - trips).toBe(2);
    for (const name of edges) {
      expect(state.events.last(projectOf(name), 'Edge', name)?.message).toBe(
        `edge ${name} disconnected: connection lost (1006: no close from the edge: a network cut, or its process ended)`,
      );
      expect(state.edges.get(name)?.connectedSince).toBeUndefined();
    }
    // d1 reconnects (its last event becomes Reconnected), then two of its connections close in one
    // turn: the first turns that event into Disconnected, the second, recorded after it, adds one.
    recordConnects(state, [
      { edge: 'd1', remoteAddress: '10.0.0.9', agentVersion: 't', replica: 'r1', connection: 'd1b' },
    ]);
    recordDisconnects(state, [
      { edge: 'd1', connection: 'd1b', code: 1000, reason: 'first' },
      { edge: 'd2', connection: 'd2', code: 1000, reason: '' },
      { edge: 'd1', connection: 'd1c', code: 1001, reason: 'second' },
    ]);
    // Newest first.
    expect(state.events.list('shop', { name: 'd1', limit: 2 }).map((e) => e.message)).toEqual([
      'edge d1 disconnected: closed by the edge (1001: second)',
      expect.stringMatching(/^edge d1 disconnected after 1 reconnect since .*: closed by the edge \(1000: first\)$/),
    ]);
  });

  it("finds one edge's rows by index among thousands (a list parameter is no scan of the table)", () => {
    const db = freshDb();
    db.exec(
      "INSERT INTO edge_runtime (name, project, approved, enrolled_at) SELECT 'e' || g, 'shop', 1, 1 FROM generate_series(1, 5000) g; ANALYZE edge_runtime",
    );
    type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] };
    const [
      {
        'QUERY PLAN': [{ Plan }],
      },
    ] = db.all<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) ${edgeReads.enrolledLabels(db, ['e42']).sql}`,
      JSON.stringify(['e42']),
    );
    const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
    const onRuntime = nodes(Plan).filter((n) => n['Relation Name'] === 'edge_runtime');
    expect(onRuntime.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    expect(nodes(Plan).map((n) => n['Index Name'])).toContain('edge_runtime_pkey');
    expect(sqlEdgeState(db).enrolledLabels(['e42', 'e4242', 'nope'])).toEqual(
      new Map([
        ['e42', undefined],
        ['e4242', undefined],
      ]),
    );
  });

  it('forgets everything read ahead at the end of the turn', async () => {
    const db = freshDb();
    const state = postgresHubState(db);
    state.edges.enroll({ name: 'e2', project: 'shop', approved: true, at: 1 });
    prefetchHandshakes(db, ['e2'], kindReads(state));
    await new Promise((r) => setImmediate(r));
    const trips = db.roundTrips;
    expect(state.edges.projectOf('e2')).toBe('shop');
    expect(db.roundTrips).toBe(trips + 1);
  });
});

describe('the unit of work on PostgreSQL (hub/state/sql.ts write)', () => {
  const seen = (k: string) => server.sql(`SELECT v FROM deferred.kv WHERE k = '${k}'`, 'hub_state');
  beforeAll(() => {
    pg.exec('CREATE SCHEMA deferred; CREATE TABLE deferred.kv (k TEXT PRIMARY KEY, v BIGINT NOT NULL CHECK (v >= 0))');
  });

  it('go with the next statement, in order, or at the end of the turn without one', async () => {
    const trips = pg.roundTrips;
    write(pg, 'INSERT INTO deferred.kv (k, v) VALUES (?, ?)', 'a', 1);
    write(pg, 'UPDATE deferred.kv SET v = ? WHERE k = ?', 2, 'a');
    expect(seen('a')).toBe(''); // not sent yet: nothing else went to the database
    expect(pg.roundTrips).toBe(trips);
    // A read after them on this connection sees them: they go first, in the same round trip.
    expect(pg.one<{ v: number }>("SELECT v FROM deferred.kv WHERE k = 'a'")?.v).toBe(2);
    expect(pg.roundTrips).toBe(trips + 1);
    write(pg, 'INSERT INTO deferred.kv (k, v) VALUES (?, ?)', 'b', 3);
    const deadline = Date.now() + 10_000;
    while (seen('b') !== '3' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(seen('b')).toBe('3');
  });

  it('inside a transaction: committed with it, or gone with its rollback', () => {
    pg.transaction(() => write(pg, 'INSERT INTO deferred.kv (k, v) VALUES (?, ?)', 'c', 4));
    expect(seen('c')).toBe('4');
    expect(() =>
      pg.transaction(() => {
        write(pg, 'INSERT INTO deferred.kv (k, v) VALUES (?, ?)', 'd', 5);
        throw new Error('changed its mind');
      }),
    ).toThrow('changed its mind');
    expect(pg.one("SELECT v FROM deferred.kv WHERE k = 'd'")).toBeUndefined();
  });

  it('a refused one fails the transaction it was in, whole, thrown to its caller; outside one it is logged, counted and the rest go on', () => {
    expect(() =>
      pg.transaction(() => {
        pg.run('INSERT INTO deferred.kv (k, v) VALUES (?, ?)', 'e', 6);
        write(pg, 'INSERT INTO deferred.kv (k, v) VALUES (?, ?)', 'f', -1); // the CHECK refuses it
      }),
    ).toThrow(/check constraint.*in a deferred write: INSERT INTO deferred\.kv/);
    expect(pg.one("SELECT v FROM deferred.kv WHERE k IN ('e', 'f')")).toBeUndefined();
    const lost = pg.lostWrites;
    write(pg, 'INSERT INTO deferred.kv (k, v) VALUES (?, ?)', 'g', -1);
    write(pg, 'INSERT INTO deferred.kv (k, v) VALUES (?, ?)', 'h', 8);
    expect(pg.one<{ v: number }>("SELECT v FROM deferred.kv WHERE k = 'h'")?.v).toBe(8);
    expect(pg.one("SELECT v FROM deferred.kv WHERE k = 'g'")).toBeUndefined();
    expect(pg.lostWrites).toBe(lost + 1);
  });

  it('the skip cache does not outlive a write the unit lost: the projection is written again', () => {
    expect(alreadyWritten(pg, 'edge-1', 'status', '{"a":1}')).toBe(false);
    expect(alreadyWritten(pg, 'edge-1', 'status', '{"a":1}')).toBe(true);
    write(pg, 'INSERT INTO deferred.kv (k, v) VALUES (?, ?)', 'i', -1); // refused, outside a transaction
    pg.one('SELECT 1');
    expect(alreadyWritten(pg, 'edge-1', 'status', '{"a":1}')).toBe(false);
    expect(alreadyWritten(pg, 'edge-1', 'status', '{"a":1}')).toBe(true);
    // Nothing is recorded inside a transaction, which may roll back.
    pg.transaction(() => expect(alreadyWritten(pg, 'edge-2', 'status', 'x')).toBe(false));
    expect(alreadyWritten(pg, 'edge-2', 'status', 'x')).toBe(false);
  });

  it('an event recorded outside a transaction costs no round trip of its own and is written once', () => {
    const db = freshDb();
    const state = postgresHubState(db);
    const trips = db.roundTrips;
    recordEvent(db, { project: 'p', kind: 'Edge', name: 'u1', reason: 'Connected', message: 'one', at: 1 });
    state.events.record({ project: 'p', kind: 'Edge', name: 'u1', reason: 'Connected', message: 'two', at: 2 });
    expect(db.roundTrips).toBe(trips);
    expect(state.events.list('p', { limit: 10 }).map((e) => e.message)).toEqual(['two', 'one']);
    expect(db.roundTrips).toBe(trips + 1);
  });

  it('a connection lost in the middle: a write that ran is not sent again, those after it are', async () => {
    pg.exec(
      'CREATE TABLE deferred.once (n INT); CREATE TABLE deferred.armed (armed BOOLEAN); INSERT INTO deferred.armed VALUES (true)',
    );
    const SLEEP = 'SELECT pg_sleep(8) FROM deferred.armed WHERE armed';
    // Another session ends this client's connection while the second of its queued statements runs
    // (and disarms it, so that it does not wait again when it goes once more).
    const killer = spawn(psqlBinary(), [
      '-X',
      '-q',
      '-v',
      'ON_ERROR_STOP=1',
      '-d',
      url,
      '-c',
      `DO $$ BEGIN FOR i IN 1..600 LOOP
         PERFORM pg_stat_clear_snapshot();
         IF EXISTS (SELECT 1 FROM pg_stat_activity WHERE query = '${SLEEP}' AND pid <> pg_backend_pid()) THEN
           UPDATE deferred.armed SET armed = false;
           PERFORM pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = '${SLEEP}' AND pid <> pg_backend_pid();
           RETURN;
         END IF;
         PERFORM pg_sleep(0.05);
       END LOOP; RAISE EXCEPTION 'the statement to end never ran'; END $$`,
    ]);
    const ended = new Promise<number | null>((r) => killer.on('exit', r));
    pg.defer('INSERT INTO deferred.once (n) VALUES (?)', 1);
    pg.defer(SLEEP);
    pg.defer('INSERT INTO deferred.once (n) VALUES (?)', 2);
    expect(() => pg.one('SELECT 1')).toThrow(/unreachable/);
    expect(await ended).toBe(0);
    expect(pg.all<{ n: number }>('SELECT n FROM deferred.once ORDER BY n').map((r) => r.n)).toEqual([1, 2]);
  }, 60_000);
});

describe('edge state on PostgreSQL: the inventory a process stored', () => {
  const INV = {
    hostname: 'h',
    os: 'linux',
    arch: 'arm64',
    cpus: 2,
    memoryBytes: 1024,
    runtimes: [],
    driver: 'process',
    agentVersion: '1',
  };
  it('is not read back for an unchanged one, and stored again once the edge connects (another replica stored one meanwhile)', () => {
    const db = freshDb();
    const here = sqlEdgeState(db);
    const other = sqlEdgeState(db); // another replica's
    here.enroll({ name: 'x', project: 'p', approved: true, at: 1 });
    expect(here.storeInventory('x', INV)).toBe(true);
    expect(here.storeInventory('x', INV)).toBe(false);
    other.storeInventory('x', { ...INV, arch: 'amd64' });
    expect(here.get('x')?.inventory?.arch).toBe('amd64');
    here.connected('x', { at: 2, agentVersion: '1', remoteAddress: '10.0.0.1', replica: 'a', connection: 'x2' });
    expect(here.storeInventory('x', INV)).toBe(true);
    expect(here.get('x')?.inventory).toEqual(INV);
  });
});

describe('report projections on PostgreSQL: what a process wrote is not written again', () => {
  const row = (workload: string, phase: string, observedGeneration = 1) => ({
    workload,
    observedGeneration,
    phase,
    since: 5,
    restarts: 0,
    objects: {},
  });

  it('skips rows written unchanged, writes a workload back after it left the report, and writes again once the edge connects (another replica wrote meanwhile)', async () => {
    const db = server.createDatabase('projections');
    const a = new SyncPostgres(db);
    const b = new SyncPostgres(db); // another replica: its own client and memory
    try {
      migratePostgres(a);
      const here = postgresHubState(a);
      const other = postgresHubState(b);
      here.edges.enroll({ name: 'x', project: 'p', approved: true, at: 1 });
      // Projections are deferred writes: they go with each client's next statement.
      const sent = () => [a, b].forEach((c) => c.all('SELECT 1'));
      const phases = (st: typeof here) => {
        sent();
        return Object.fromEntries(['web', 'db'].map((w) => [w, st.status.reported('x', w)?.phase]));
      };
      const blobs = () => {
        sent();
        return here.dataProgress.byObject('blob').size;
      };

      here.status.project('x', [row('web', 'Ready'), row('db', 'Ready')]);
      here.dataProgress.project('x', {});
      here.agentUpgrades.projectProgress('x', undefined);
      here.imageStaging.projectReport('x', undefined);
      expect(phases(other)).toEqual({ web: 'Ready', db: 'Ready' });

      // The other replica serves the edge for a while and writes what it reported there.
      other.edges.connected('x', {
        at: 2,
        agentVersion: '1',
        remoteAddress: '10.0.0.2',
        replica: 'b',
        connection: 'x2',
      });
      other.status.project('x', [row('web', 'Failed', 2), row('db', 'Ready')]);
      other.dataProgress.project('x', {
        blob: { version: '1', digest: 'sha256:ab', path: 'blob', state: 'Delivered', at: 2 },
      });
      expect(blobs()).toBe(1);

      // The same report again here, without a connect in between: nothing is written (the rows
      // still say what the other replica wrote: this is what a connect is for).
      here.status.project('x', [row('web', 'Ready'), row('db', 'Ready')]);
      here.dataProgress.project('x', {});
      expect(phases(other).web).toBe('Failed');
      expect(blobs()).toBe(1);

      // The edge comes back here: its next report is written whole.
      here.edges.connected('x', {
        at: 3,
        agentVersion: '1',
        remoteAddress: '10.0.0.1',
        replica: 'a',
        connection: 'x3',
      });
      here.status.project('x', [row('web', 'Ready'), row('db', 'Ready')]);
      here.dataProgress.project('x', {});
      expect(phases(other)).toEqual({ web: 'Ready', db: 'Ready' });
      expect(blobs()).toBe(0);

      // A workload leaves the report and comes back unchanged: its row is written again.
      here.status.project('x', [row('web', 'Ready')]);
      expect(phases(other)).toEqual({ web: 'Ready', db: undefined });
      here.status.project('x', [row('web', 'Ready'), row('db', 'Ready')]);
      expect(phases(other)).toEqual({ web: 'Ready', db: 'Ready' });

      // A decommission forgets the rows and what was written: a new edge of that name starts clean.
      here.status.forgetEdge('x');
      here.status.project('x', [row('web', 'Ready'), row('db', 'Ready')]);
      expect(phases(other)).toEqual({ web: 'Ready', db: 'Ready' });
    } finally {
      await a.close();
      await b.close();
    }
  });
});
