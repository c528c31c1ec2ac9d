/**
 * The PostgreSQL test fixture (test/fixtures/postgres.ts) that the hub's PostgreSQL backend
 * (issue #22) is to be tested against: a real server from Debian's package, in a temp dir, on a
 * loopback port, answering SQL, stopped at the end with nothing left listening.
 */
import fs from 'node:fs';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { TestPostgres } from './fixtures/postgres.js';

const pg = new TestPostgres();

afterAll(async () => {
  await pg.remove();
  expect(fs.existsSync(pg.dir)).toBe(false);
});

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

describe('TestPostgres', () => {
  it('starts a throwaway cluster on loopback, answers SQL in a fresh database, and stops', async () => {
    await pg.start();
    expect(await listening(pg.port)).toBe(true);
    expect(pg.sql('SHOW server_version_num')).toMatch(/^\d{6}$/);
    const url = pg.createDatabase('fixture_check');
    expect(url).toBe(`postgres://outpost@127.0.0.1:${pg.port}/fixture_check`);
    pg.sql('CREATE TABLE t (id integer PRIMARY KEY, v text)', 'fixture_check');
    pg.sql("INSERT INTO t VALUES (1, 'one')", 'fixture_check');
    expect(pg.sql('SELECT v FROM t WHERE id = 1', 'fixture_check')).toBe('one');
    expect(() => pg.sql('SELECT * FROM missing', 'fixture_check')).toThrow(/relation "missing" does not exist/);
    await pg.stop();
    expect(await listening(pg.port)).toBe(false);
    // Its data survives a restart (a test can stop the database and start it again).
    await pg.start();
    expect(pg.sql('SELECT v FROM t WHERE id = 1', 'fixture_check')).toBe('one');
  }, 120_000);
});
