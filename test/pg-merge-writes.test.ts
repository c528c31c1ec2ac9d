/**
 * Deferred writes merged into one statement per table (hub/state/pg/merge-writes.ts) write what
 * they wrote one by one, on a real PostgreSQL (test/fixtures/postgres.ts): the same sequence of
 * writes (interleaved tables, an upsert and an UPDATE repeating a key, a read of a table between
 * its writes, a notification, every value type the hub binds) run statement by statement on one
 * database and deferred into one transaction on another leaves the same rows; a merged statement
 * refused outside a transaction costs only its bad row; and a hub's schema has no foreign key and no
 * trigger, which the merge's moving writes of one table past those of others relies on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergeWrites } from '../hub/state/pg/merge-writes.js';
import { numberPlaceholders, type Param } from '../hub/state/pg/statements.js';
import { SyncPostgres } from '../hub/state/pg/sync-client.js';
import { openPostgres } from '../hub/state/pg/open.js';
import { TestPostgres } from './fixtures/postgres.js';

const pg = new TestPostgres();
let one: SyncPostgres;
let merged: SyncPostgres;

const SCHEMA = `
  CREATE TABLE ev (id BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL, project TEXT, name TEXT, data BYTEA, ok BOOLEAN, score DOUBLE PRECISION);
  CREATE TABLE rt (name TEXT PRIMARY KEY, connected_since BIGINT, last_seen BIGINT, note TEXT);
  CREATE TABLE lease (edge TEXT PRIMARY KEY, replica TEXT NOT NULL, expires_at BIGINT NOT NULL);
  CREATE TABLE tally (n BIGINT NOT NULL);
`;

beforeAll(async () => {
  await pg.start();
  one = new SyncPostgres(pg.createDatabase('merge_one'), { connectTimeoutMs: 2_000, statementTimeoutMs: 5_000 });
  merged = new SyncPostgres(pg.createDatabase('merge_many'), { connectTimeoutMs: 2_000, statementTimeoutMs: 5_000 });
  one.exec(SCHEMA);
  merged.exec(SCHEMA);
}, 60_000);

afterAll(async () => {
  await one?.close();
  await merged?.close();
  await pg.remove();
});

const EV = 'INSERT INTO ev (at, project, name, data, ok, score) VALUES (?, ?, ?, ?, ?, ?)';
const SEEN = 'UPDATE rt SET connected_since = ?, last_seen = ? WHERE name = ?';
const NOTE = 'UPDATE rt SET note = ? WHERE name = ? AND connected_since IS NOT NULL';
const TAKE =
  'INSERT INTO lease (edge, replica, expires_at) VALUES (?, ?, ?) ON CONFLICT(edge) DO UPDATE SET replica = excluded.replica, expires_at = excluded.expires_at';
const RELEASE = 'DELETE FROM lease WHERE edge = ? AND replica = ?';

function writes(): { sql: string; params: Param[] }[] {
  const w: { sql: string; params: Param[] }[] = [];
  for (const n of ['a', 'b', 'c']) w.push({ sql: 'INSERT INTO rt (name) VALUES (?)', params: [n] });
  for (const [i, n] of ['a', 'b', 'c', 'a'].entries()) {
    w.push({ sql: SEEN, params: [1_795_000_000_000 + i, 1_795_000_000_000 + i, n] });
    w.push({ sql: EV, params: [i, 'p1', n, Buffer.from([i, 0, 255]), i % 2 === 0, i + 0.5] });
    w.push({ sql: TAKE, params: [n, `r${i}`, 100 + i] });
    w.push({ sql: 'SELECT pg_notify(?, ?)', params: ['merge_test', n] });
  }
  // A read of ev between its writes: the later ones stay after it.
  w.push({ sql: 'INSERT INTO tally (n) SELECT count(*) FROM ev', params: [] });
  w.push({ sql: EV, params: [10, null, 'late', null, null, null] });
  w.push({ sql: EV, params: [11, 'p2', "it's", null, true, -1] });
  // A lone surrogate (a hostile edge's agent version) is written as U+FFFD, merged or not.
  w.push({ sql: EV, params: [12, 'p2', 'bad\ud800', null, null, null] });
  w.push({ sql: EV, params: [13, 'p2', 'good', null, null, null] });
  w.push({ sql: NOTE, params: ['hello', 'a'] });
  w.push({ sql: NOTE, params: ['there', 'b'] });
  w.push({ sql: RELEASE, params: ['b', 'r1'] });
  w.push({ sql: RELEASE, params: ['c', 'nobody'] });
  w.push({ sql: TAKE, params: ['d', 'r9', 9] });
  return w;
}

const TABLES = {
  ev: 'SELECT * FROM ev ORDER BY id',
  rt: 'SELECT * FROM rt ORDER BY name',
  lease: 'SELECT * FROM lease ORDER BY edge',
  tally: 'SELECT * FROM tally',
};

describe('merged deferred writes on PostgreSQL', () => {
  it('write the rows the same writes wrote one statement at a time', () => {
    const w = writes();
    // The sequence does merge: fewer statements than writes.
    const sent = mergeWrites(w.map((x) => ({ sql: numberPlaceholders(x.sql), params: x.params })));
    expect(sent.length).toBeLessThan(w.length - 8);
    for (const x of w) one.run(x.sql, ...x.params);
    merged.transaction(() => {
      for (const x of w) merged.defer(x.sql, ...x.params);
    });
    for (const [table, sql] of Object.entries(TABLES)) expect(merged.all(sql), table).toEqual(one.all(sql));
    expect(one.all(TABLES.tally)).toEqual([{ n: 4 }]);
    expect(one.all<{ note: string | null }>('SELECT note FROM rt ORDER BY name').map((r) => r.note)).toEqual([
      'hello',
      'there',
      null,
    ]);
    expect(one.all<{ edge: string; replica: string }>('SELECT edge, replica FROM lease ORDER BY edge')).toEqual([
      { edge: 'a', replica: 'r3' },
      { edge: 'c', replica: 'r2' },
      { edge: 'd', replica: 'r9' },
    ]);
  });

  it('fail the transaction whole when one row is refused inside it, as the single write did', () => {
    expect(() =>
      merged.transaction(() => {
        merged.defer(EV, 20, 'p', 'x', null, null, null);
        merged.defer(EV, 'not a number', 'p', 'y', null, null, null);
        merged.defer(EV, 22, 'p', 'z', null, null, null);
      }),
    ).toThrow(/bigint/);
    expect(merged.all("SELECT name FROM ev WHERE project = 'p'")).toEqual([]);
  });

  it('outside a transaction, a refused merged statement goes again write by write: only the bad row is lost', () => {
    merged.defer(EV, 30, 'q', 'x', null, null, null);
    merged.defer(EV, 'not a number', 'q', 'y', null, null, null);
    merged.defer(EV, 32, 'q', 'z', null, null, null);
    // This statement carries the merged one, which is refused; the next carries them one by one.
    merged.all('SELECT 1');
    merged.all('SELECT 1');
    expect(merged.all("SELECT name FROM ev WHERE project = 'q' ORDER BY id")).toEqual([{ name: 'x' }, { name: 'z' }]);
    // Two merged statements refused in one request: their writes go again once each, in order.
    merged.defer(EV, 40, 'r', 'x', null, null, null);
    merged.defer(EV, 'not a number', 'r', 'y', null, null, null);
    merged.defer(SEEN, 'not a number either', 1, 'a');
    merged.defer(SEEN, 41, 41, 'b');
    merged.defer(EV, 42, 'r', 'z', null, null, null);
    merged.all('SELECT 1');
    merged.all('SELECT 1');
    expect(merged.all("SELECT name FROM ev WHERE project = 'r' ORDER BY id")).toEqual([{ name: 'x' }, { name: 'z' }]);
    expect(merged.one('SELECT last_seen FROM rt WHERE name = ?', 'b')).toEqual({ last_seen: 41 });
  });

  it("may move writes of one table past others': a hub's schema links no table to another", async () => {
    const hub = await openPostgres(pg.createDatabase('merge_hub_schema'));
    try {
      const tables = hub.all<{ n: number }>("SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'");
      expect(tables[0]!.n).toBeGreaterThan(20);
      // A foreign key or a trigger would make a write touch another table: merge-writes.ts would
      // have to keep the writes of linked tables in their places.
      expect(hub.all("SELECT conname FROM pg_constraint WHERE contype = 'f'")).toEqual([]);
      expect(
        hub.all(
          `SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'`,
        ),
      ).toEqual([]);
    } finally {
      await hub.close();
    }
  });
});
