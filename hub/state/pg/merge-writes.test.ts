/**
 * Which deferred writes `mergeWrites` makes one statement, and which it leaves alone (the module's
 * rules); test/pg-merge-writes.test.ts proves on a real PostgreSQL that the merged statements write
 * what the single ones did.
 */
import { describe, expect, it } from 'vitest';
import { mergeWrites, MAX_MERGED_ROWS, type Write } from './merge-writes.js';

const EVENT = 'INSERT INTO events (at, project, kind, name, reason, message) VALUES ($1, $2, $3, $4, $5, $6)';
const RUNTIME = 'UPDATE edge_runtime SET connected_since = $1, last_seen = $2 WHERE name = $3';
const CONNECTION = 'INSERT INTO connections (edge, connected_at, remote_address) VALUES ($1, $2, $3)';
const LEASE =
  'INSERT INTO edge_leases (edge, replica, expires_at, taken_at) VALUES ($1, $2, $3, $4) ON CONFLICT(edge) DO UPDATE SET replica = excluded.replica';

const event = (name: string): Write => ({ sql: EVENT, params: [1, 'p', 'Edge', name, 'Connected', `edge ${name}`] });
const runtime = (name: string): Write => ({ sql: RUNTIME, params: [1, 2, name] });
const connection = (name: string): Write => ({ sql: CONNECTION, params: [name, 1, '127.0.0.1'] });
const lease = (name: string): Write => ({ sql: LEASE, params: [name, 'r1', 3, 1] });

/** The statements sent, as which writes each stands for. */
const shape = (writes: Write[]) => mergeWrites(writes).map((m) => m.from);

describe('mergeWrites', () => {
  it("makes a batch's interleaved writes of four tables four statements, each row as JSON in $1", () => {
    const writes = ['a', 'b', 'c'].flatMap((n) => [runtime(n), connection(n), event(n), lease(n)]);
    const merged = mergeWrites(writes);
    expect(merged.map((m) => m.from)).toEqual([
      [0, 4, 8],
      [1, 5, 9],
      [2, 6, 10],
      [3, 7, 11],
    ]);
    expect(merged[0]!.sql).toBe(
      'UPDATE edge_runtime SET connected_since = _m._p1, last_seen = _m._p2 FROM json_array_elements($1::json) WITH ORDINALITY AS _e(v, i), LATERAL (SELECT _r.connected_since AS _p1, _r.last_seen AS _p2, _r.name AS _p3 FROM json_populate_record(null::edge_runtime, _e.v) _r) _m WHERE name = _m._p3',
    );
    expect(JSON.parse(merged[0]!.params[0] as string)).toEqual([
      { connected_since: 1, last_seen: 2, name: 'a' },
      { connected_since: 1, last_seen: 2, name: 'b' },
      { connected_since: 1, last_seen: 2, name: 'c' },
    ]);
    expect(merged[3]!.sql).toMatch(
      /^INSERT INTO edge_leases \(edge, replica, expires_at, taken_at\) SELECT _m\._p1, _m\._p2, _m\._p3, _m\._p4 FROM .* ORDER BY _e\.i ON CONFLICT\(edge\) DO UPDATE SET replica = excluded\.replica$/,
    );
  });

  it('gives values a JSON form PostgreSQL reads as the parameter (bytea as \\x hex, bigint as text)', () => {
    const sql = 'INSERT INTO blobs (digest, data, size) VALUES ($1, $2, $3)';
    const merged = mergeWrites([
      { sql, params: ['a', Buffer.from([1, 255]), 10n] },
      { sql, params: ['b', null, 2] },
    ]);
    expect(JSON.parse(merged[0]!.params[0] as string)).toEqual([
      { digest: 'a', data: '\\x01ff', size: '10' },
      { digest: 'b', data: null, size: 2 },
    ]);
  });

  it('keeps a write from moving past a statement that mentions its table, or one it mentions', () => {
    const count = { sql: 'INSERT INTO tallies (n) SELECT count(*) FROM events', params: [] };
    expect(shape([event('a'), count, event('b')])).toEqual([[0], [1], [2]]);
    // A write of another table that the later write's text names (a column called like it).
    const other = { sql: 'UPDATE project SET n = $1 WHERE id = $2', params: [1, 2] };
    expect(shape([event('a'), other, event('b')])).toEqual([[0], [1], [2]]);
    // A notification between them moves nothing out of order.
    const notify = { sql: 'SELECT pg_notify($1, $2)', params: ['c', 'x'] };
    expect(shape([event('a'), notify, event('b')])).toEqual([[0, 2], [1]]);
  });

  it('ends every group at BEGIN, COMMIT, a savepoint or any other statement', () => {
    for (const sql of ['BEGIN', 'SAVEPOINT s1', 'RELEASE SAVEPOINT s1', 'SELECT 1'])
      expect(shape([event('a'), { sql, params: [] }, event('b')])).toEqual([[0], [1], [2]]);
  });

  it('never lets two rows of an UPDATE or an upsert name the same row: the second starts a group', () => {
    expect(shape([runtime('a'), runtime('b'), runtime('a'), runtime('c')])).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(shape([lease('a'), lease('a')])).toEqual([[0], [1]]);
    // An INSERT without ON CONFLICT, or DO NOTHING, has no such rule; a DELETE neither.
    expect(shape([event('a'), event('a')])).toEqual([[0, 1]]);
    const del = { sql: 'DELETE FROM edge_leases WHERE edge = $1 AND replica = $2', params: ['a', 'r'] };
    expect(shape([del, del])).toEqual([[0, 1]]);
  });

  it('leaves alone what it cannot prove the same merged', () => {
    const alone = [
      'UPDATE t SET n = $1 WHERE a = $2 OR b = $3', // rows of different keys may meet
      'UPDATE t SET n = n + $1 WHERE a = $2', // a parameter that is not a column's value
      'UPDATE t SET a = $1 WHERE a = $2', // sets what another row compares
      'UPDATE t SET n = $1 WHERE a IS NULL', // no key: every row the same rows
      'UPDATE t SET n = $1 WHERE a = $2 RETURNING a',
      'UPDATE t SET n = $1 FROM u WHERE t.a = u.a AND u.b = $2',
      'DELETE FROM t WHERE a = $1 AND NOT b = $2',
      'DELETE FROM t WHERE a IN (SELECT a FROM u WHERE b = $1)',
      'INSERT INTO t (a, b) VALUES ($1, lower($2))',
      'INSERT INTO t (a, b) SELECT $1, $2',
      'INSERT INTO t (a, b) VALUES ($1, $2) ON CONFLICT (a) DO UPDATE SET b = $3',
      "INSERT INTO t (a, b) VALUES ($1, 'cost: $2')",
    ];
    for (const sql of alone)
      expect(
        shape([
          { sql, params: [1, 2, 3] },
          { sql, params: [4, 5, 6] },
        ]),
        sql,
      ).toEqual([[0], [1]]);
    // IS NOT NULL in a conjunction is fine.
    const sql = 'UPDATE connections SET disconnected_at = $1 WHERE edge = $2 AND disconnected_at IS NULL';
    expect(
      shape([
        { sql, params: [1, 'a'] },
        { sql, params: [1, 'b'] },
      ]),
    ).toEqual([[0, 1]]);
  });

  it('leaves in its place a write marked single, or with a value without a JSON form, and bounds a group', () => {
    // The writes of its text around it stay on their side of it.
    expect(shape([event('a'), event('b'), { ...event('c'), single: true }, event('d'), event('e')])).toEqual([
      [0, 1],
      [2],
      [3, 4],
    ]);
    const nan = { sql: RUNTIME, params: [Number.NaN, 1, 'b'] };
    expect(shape([runtime('a'), nan, runtime('c')])).toEqual([[0], [1], [2]]);
    const surrogate = { sql: RUNTIME, params: [1, 2, 'b\ud800'] };
    expect(shape([runtime('a'), surrogate, runtime('c')])).toEqual([[0], [1], [2]]);
    const many = Array.from({ length: MAX_MERGED_ROWS + 1 }, (_, i) => event(`e${i}`));
    expect(shape(many).map((f) => f.length)).toEqual([MAX_MERGED_ROWS, 1]);
  });
});
