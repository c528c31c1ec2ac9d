/**
 * The synchronous PostgreSQL client of the hub's state layer (hub/state/pg/sync-client.ts, issue
 * #22 groundwork) against a real PostgreSQL (test/fixtures/postgres.ts): statements with `?`
 * placeholders, one transaction that commits, one that rolls back on a throw, nested transactions
 * joining, SQL errors with their SQLSTATE, and a database that is down giving one clear error
 * quickly, then working again once it is back, with the same client; and every statement gets its
 * own answer even when the waiting thread is woken without one (a late notify of the previous
 * answer, which a preempted worker thread sends after setting the flag: found by
 * `npm run bench -- --scenario failover`, docs/benchmarks.md), or when the answer to a statement
 * given up on at its deadline comes afterwards (answers carry their statement's id).
 */
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseError, DatabaseUnavailable, numberPlaceholders, redactUrl } from '../hub/state/pg/statements.js';
import { SyncPostgres } from '../hub/state/pg/sync-client.js';
import { toOutpostError } from '../core/errors.js';
import { TestPostgres } from './fixtures/postgres.js';

const pg = new TestPostgres();
let db: SyncPostgres;

beforeAll(async () => {
  await pg.start();
  db = new SyncPostgres(pg.createDatabase('sync_client'), { connectTimeoutMs: 2_000, statementTimeoutMs: 5_000 });
}, 60_000);

afterAll(async () => {
  await db?.close();
  await pg.remove();
});

describe('numberPlaceholders / redactUrl', () => {
  it("numbers ? outside quotes and masks a URL's password", () => {
    expect(numberPlaceholders("SELECT * FROM t WHERE a = ? AND b = '?' AND c = ?")).toBe(
      "SELECT * FROM t WHERE a = $1 AND b = '?' AND c = $2",
    );
    expect(redactUrl('postgres://hub:s3cret@db:5432/outpost')).toBe('postgres://hub:***@db:5432/outpost');
  });
});

describe('SyncPostgres (real PostgreSQL)', () => {
  it('runs statements synchronously with ? placeholders', () => {
    db.run('CREATE TABLE objects (name text PRIMARY KEY, n integer NOT NULL, body jsonb)');
    expect(db.run('INSERT INTO objects (name, n, body) VALUES (?, ?, ?)', 'a', 1, '{"x":1}')).toBe(1);
    expect(db.one<{ name: string; n: number; body: unknown }>('SELECT * FROM objects WHERE name = ?', 'a')).toEqual({
      name: 'a',
      n: 1,
      body: { x: 1 },
    });
    expect(db.one('SELECT * FROM objects WHERE name = ?', 'none')).toBeUndefined();
  });

  it("gives a BYTEA value as a Buffer of its own bytes (not a view of the worker's shared pool, which each answer copied whole)", () => {
    const row = db.one<{ b: Buffer }>("SELECT '\\x0102ff'::bytea AS b, ?::bytea AS c", Buffer.from([7, 8]))!;
    expect(Buffer.isBuffer(row.b)).toBe(true);
    expect([...row.b]).toEqual([1, 2, 255]);
    expect(row.b.buffer.byteLength).toBe(3);
    expect([...(row as unknown as { c: Buffer }).c]).toEqual([7, 8]);
  });

  it('commits a transaction, and rolls the whole of it back when its function throws (nested ones join)', () => {
    db.transaction(() => {
      db.run('INSERT INTO objects (name, n) VALUES (?, ?)', 'b', 2);
      db.transaction(() => db.run('INSERT INTO objects (name, n) VALUES (?, ?)', 'c', 3));
    });
    expect(() =>
      db.transaction(() => {
        db.run('INSERT INTO objects (name, n) VALUES (?, ?)', 'd', 4);
        db.transaction(() => db.run('UPDATE objects SET n = ? WHERE name = ?', 20, 'b'));
        throw new Error('changed my mind');
      }),
    ).toThrow('changed my mind');
    expect(db.all<{ name: string; n: number }>('SELECT name, n FROM objects ORDER BY name')).toEqual([
      { name: 'a', n: 1 },
      { name: 'b', n: 2 },
      { name: 'c', n: 3 },
    ]);
  });

  it('sends the writes waiting with a statement, pipelined in order, and the last ones when it closes', async () => {
    const url = pg.createDatabase('sync_client_close');
    const a = new SyncPostgres(url);
    a.run('CREATE TABLE log (n integer PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())');
    for (let n = 1; n <= 50; n++) a.defer('INSERT INTO log (n) VALUES (?)', n);
    // Run in the order given, before the statement they go with.
    expect(a.all<{ n: number }>('SELECT n FROM log ORDER BY at, n').map((r) => r.n)).toEqual(
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    a.defer('INSERT INTO log (n) VALUES (?)', 51);
    await a.close();
    const b = new SyncPostgres(url);
    try {
      expect(b.one<{ c: number }>('SELECT COUNT(*) AS c FROM log')?.c).toBe(51);
    } finally {
      await b.close();
    }
  });

  it('sends BEGIN with the first statement of a transaction: refusals before it are logged, those inside fail it whole', () => {
    db.run('CREATE TABLE tx (n integer PRIMARY KEY)');
    db.run('INSERT INTO tx (n) VALUES (1)');
    // Deferred writes only: BEGIN, the writes and COMMIT are one round trip.
    let trips = db.roundTrips;
    db.transaction(() => {
      db.defer('INSERT INTO tx (n) VALUES (?)', 2);
      db.defer('INSERT INTO tx (n) VALUES (?)', 3);
    });
    expect(db.roundTrips - trips).toBe(1);
    // A refused write deferred before the transaction is not the transaction's: it commits.
    db.defer('INSERT INTO tx (n) VALUES (?)', 1);
    trips = db.roundTrips;
    db.transaction(() => {
      expect(db.one<{ c: number }>('SELECT count(*)::int AS c FROM tx')?.c).toBe(3);
      db.defer('INSERT INTO tx (n) VALUES (?)', 4);
    });
    expect(db.roundTrips - trips).toBe(2);
    // One refused inside fails the whole transaction, its statements and deferred writes alike;
    // a write deferred before it still goes.
    db.defer('INSERT INTO tx (n) VALUES (?)', 5);
    expect(() =>
      db.transaction(() => {
        db.run('INSERT INTO tx (n) VALUES (?)', 6);
        db.defer('INSERT INTO tx (n) VALUES (?)', 2);
      }),
    ).toThrow(DatabaseError);
    // A transaction that throws before any statement sends nothing of its own and keeps what was
    // deferred before it.
    db.defer('INSERT INTO tx (n) VALUES (?)', 7);
    trips = db.roundTrips;
    expect(() =>
      db.transaction(() => {
        db.defer('INSERT INTO tx (n) VALUES (?)', 8);
        throw new Error('changed my mind');
      }),
    ).toThrow('changed my mind');
    expect(db.roundTrips).toBe(trips);
    expect(db.all<{ n: number }>('SELECT n FROM tx ORDER BY n').map((r) => r.n)).toEqual([1, 2, 3, 4, 5, 7]);
  });

  it("names PostgreSQL's refusal with its SQLSTATE, and the connection goes on", () => {
    try {
      db.run('INSERT INTO objects (name, n) VALUES (?, ?)', 'a', 9);
      expect.unreachable('a duplicate key must be refused');
    } catch (err) {
      expect(err).toBeInstanceOf(DatabaseError);
      expect((err as DatabaseError).code).toBe('23505');
      expect((err as Error).message).toMatch(/duplicate key value violates unique constraint/);
    }
    expect(db.one<{ n: number }>('SELECT count(*)::int AS n FROM objects')).toEqual({ n: 3 });
  });

  it('gives one clear error while the database is down, and works again once it is back', async () => {
    await pg.stop();
    try {
      db.all('SELECT 1');
      expect.unreachable('the database is down');
    } catch (err) {
      // One error, mapped to 503 by the API's one mapping (core/errors.ts).
      expect(err).toBeInstanceOf(DatabaseUnavailable);
      expect(toOutpostError(err)).toMatchObject({ code: 'unavailable', status: 503 });
    }
    expect(() => db.all('SELECT 1')).toThrow(
      /the database at postgres:\/\/outpost@127\.0\.0\.1:\d+\/sync_client is unreachable/,
    );
    await pg.start();
    expect(db.one<{ n: number }>('SELECT count(*)::int AS n FROM objects')).toEqual({ n: 3 });
  }, 60_000);

  it('gives each statement its own answer when the wait is woken without one (a late notify)', async () => {
    // A thread that wakes the client's wait every millisecond with nothing to read, as the late
    // Atomics.notify of the previous answer does.
    const flag = (db as unknown as { worker: { done: Int32Array } }).worker.done.buffer as SharedArrayBuffer;
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const waker = new Worker(
      `const { workerData } = require('node:worker_threads');
       const done = new Int32Array(workerData.flag);
       const stop = new Int32Array(workerData.stop);
       while (Atomics.load(stop, 0) === 0) { Atomics.notify(done, 0); Atomics.wait(stop, 0, 0, 1); }`,
      { eval: true, workerData: { flag, stop: stop.buffer } },
    );
    try {
      await new Promise((r) => waker.once('online', r));
      for (let i = 0; i < 200; i++)
        expect(db.one<{ n: number }>('SELECT ?::int AS n, pg_sleep(0.003)::text AS s', i)?.n).toBe(i);
    } finally {
      Atomics.store(stop, 0, 1);
      Atomics.notify(stop, 0);
      await waker.terminate();
    }
  }, 60_000);

  it("never reads an answer that came after its statement gave up as the next statement's", async () => {
    // A proxy in front of PostgreSQL that can hold back the server's answers, then drop the link:
    // the statement gives up at its deadline, and its answer (an error) comes afterwards. In a
    // thread of its own: the client blocks this one while it waits.
    const held = new Int32Array(new SharedArrayBuffer(4));
    const proxy = new Worker(
      `const net = require('node:net');
       const { workerData, parentPort } = require('node:worker_threads');
       const held = new Int32Array(workerData.held);
       const links = new Set();
       const server = net.createServer((client) => {
         const upstream = net.connect(workerData.target, '127.0.0.1');
         links.add(client).add(upstream);
         const drop = () => { client.destroy(); upstream.destroy(); };
         client.on('error', drop).on('close', drop);
         upstream.on('error', drop).on('close', drop);
         client.pipe(upstream);
         upstream.on('data', (chunk) => { if (Atomics.load(held, 0) === 0) client.write(chunk); });
       });
       server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
       parentPort.on('message', () => { for (const l of links) l.destroy(); });`,
      { eval: true, workerData: { held: held.buffer, target: pg.port } },
    );
    const port = await new Promise<number>((r) => proxy.once('message', r));
    const c = new SyncPostgres(`postgres://${pg.role}@127.0.0.1:${port}/sync_client`, {
      connectTimeoutMs: 3_000,
      statementTimeoutMs: 500,
    });
    try {
      expect(c.one<{ n: number }>('SELECT 1 AS n')).toEqual({ n: 1 });
      Atomics.store(held, 0, 1);
      expect(() => c.one('SELECT 2 AS n')).toThrow(/did not answer within/);
      // Now the link drops: the client's worker answers the statement given up on, late.
      Atomics.store(held, 0, 0);
      proxy.postMessage('drop');
      await new Promise((r) => setTimeout(r, 500));
      expect(c.one<{ n: number }>('SELECT 3 AS n')).toEqual({ n: 3 });
      expect(c.one<{ n: number }>('SELECT 4 AS n')).toEqual({ n: 4 });
    } finally {
      await c.close();
      await proxy.terminate();
    }
  }, 60_000);
});
