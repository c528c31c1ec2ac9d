import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../test/helpers.js';
import { cachedStatement, inSavepoint, inTransaction, openDatabase, type SqliteDatabase } from './sqlite.js';

let db: SqliteDatabase | undefined;
afterEach(() => {
  db?.close();
  db = undefined;
});

function open(): SqliteDatabase {
  db = openDatabase(path.join(tempDir('outpost-sqlite-'), 'x.db'));
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, at INTEGER, data BLOB)');
  db.exec('CREATE TABLE u (id INTEGER PRIMARY KEY, name TEXT NOT NULL)');
  const ins = db.prepare('INSERT INTO t (name, at, data) VALUES (?, ?, ?)');
  for (let i = 0; i < 6; i++) ins.run(`n${i % 3}`, i, i % 2 ? Buffer.from([i]) : null);
  db.prepare("INSERT INTO u (id, name) VALUES (1, 'u1')").run();
  return db;
}

/** Calls of the global Function constructor while fn runs (better-sqlite3 builds row objects with it). */
function functionCalls(fn: () => void): number {
  const original = globalThis.Function;
  let n = 0;
  globalThis.Function = new Proxy(original, {
    apply(target, self, args) {
      n++;
      return Reflect.apply(target, self, args) as unknown;
    },
  });
  try {
    fn();
  } finally {
    globalThis.Function = original;
  }
  return n;
}

describe('cachedStatement', () => {
  it('returns the same rows as better-sqlite3 itself: get, all, iterate, no row, duplicate names, blobs', () => {
    const d = open();
    const queries: [string, unknown[]][] = [
      ['SELECT * FROM t WHERE name = ? ORDER BY at DESC', ['n1']],
      ['SELECT DISTINCT name FROM t ORDER BY name', []],
      ['SELECT t.id, u.id, t.name AS tname FROM t JOIN u ON u.id = t.id', []],
      ['SELECT id, data FROM t WHERE id = ?', [2]],
      ['SELECT id FROM t WHERE name = ?', ['nobody']],
    ];
    for (const [sql, params] of queries) {
      const own = d.prepare(sql);
      const cached = cachedStatement(d, sql);
      expect(cached.get(...params)).toEqual(own.get(...params));
      expect(cached.all(...params)).toEqual(own.all(...params));
      expect([...cached.iterate(...params)]).toEqual([...own.iterate(...params)]);
      for (const row of cached.all(...params))
        expect(Object.keys(row as object)).toEqual(Object.keys(own.get(...params) as object));
    }
    expect(cachedStatement(d, 'SELECT id FROM t WHERE name = ?').get('nobody')).toBeUndefined();
    expect(cachedStatement(d, "UPDATE t SET at = at + 1 WHERE name = 'n0'").run().changes).toBe(2);
    expect(cachedStatement(d, 'UPDATE t SET at = 0 WHERE id = ? RETURNING id, at').all(3)).toEqual([{ id: 3, at: 0 }]);
  });

  it('compiles no function per execution of a statement that sorts or deduplicates', () => {
    const d = open();
    const sorted = 'SELECT id, at FROM t WHERE name = ? ORDER BY at DESC';
    const distinct = 'SELECT DISTINCT name FROM t WHERE at > ?';
    cachedStatement(d, sorted).get('n0');
    cachedStatement(d, distinct).all(0);
    const n = functionCalls(() => {
      for (let i = 0; i < 50; i++) {
        cachedStatement(d, sorted).get(`n${i % 3}`);
        cachedStatement(d, sorted).all(`n${i % 3}`);
        cachedStatement(d, distinct).all(i % 6);
      }
    });
    expect(n).toBe(0);
  });
});

describe('inSavepoint', () => {
  const names = (d: SqliteDatabase) =>
    (d.prepare('SELECT name FROM u ORDER BY id').all() as { name: string }[]).map((r) => r.name);

  it('undoes only its own writes inside a batch; the batch commits the others', () => {
    const d = open();
    const add = (id: number) => d.prepare('INSERT INTO u (id, name) VALUES (?, ?)').run(id, `u${id}`);
    inTransaction(d, () => {
      inSavepoint(d, () => add(2));
      expect(() =>
        inSavepoint(d, () => {
          add(3);
          add(1); // the primary key is taken: this unit fails, after writing u3
        }),
      ).toThrow(/UNIQUE/);
      inSavepoint(d, () => add(4));
    });
    expect(names(d)).toEqual(['u1', 'u2', 'u4']);
    expect(d.inTransaction).toBe(false);
  });

  it('is a transaction of its own outside one', () => {
    const d = open();
    expect(() =>
      inSavepoint(d, () => {
        d.prepare("INSERT INTO u (id, name) VALUES (5, 'u5')").run();
        throw new Error('no');
      }),
    ).toThrow('no');
    expect(names(d)).toEqual(['u1']);
    expect(d.inTransaction).toBe(false);
  });
});
