/**
 * Join tokens on SQLite files (the suite runs on PostgreSQL too), and consumption racing between
 * processes on one file.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers.js';
import { openDatabase } from '../../sync/sqlite.js';
import { createJoinToken } from './join-tokens.js';
import { sqlAuthTables } from '../state/auth.js';
import { testDbs } from '../../test/fixtures/auth-db.js';
import { joinTokenSuite } from '../../test/fixtures/auth-suites.js';

const dbs = testDbs();
afterEach(() => dbs.cleanup());

joinTokenSuite(() => dbs.open());

describe('join tokens on one SQLite file', () => {
  it('concurrent consumption from several processes never exceeds the limit', async () => {
    const { db, dir, file } = dbs.open();
    const LIMIT = 150;
    const PROCS = 4;
    const ATTEMPTS = 100;
    const token = createJoinToken(sqlAuthTables(db), { project: 'shop', uses: LIMIT });
    const go = path.join(dir, 'go');
    const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/join-race.ts');
    const runs = Array.from({ length: PROCS }, () => {
      const child = spawn(process.execPath, ['--import', 'tsx', fixture, file, token, String(ATTEMPTS), go], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (c: Buffer) => (out += c));
      child.stderr.on('data', (c: Buffer) => (err += c));
      const done = new Promise<{ ok: number; errors: string[] }>((resolve, reject) => {
        child.on('error', reject);
        child.on('exit', (code) =>
          code === 0
            ? resolve(JSON.parse(out.replace(/^ready\n/, '')))
            : reject(new Error(`fixture exited ${code}: ${err.slice(-2000)}`)),
        );
      });
      return { child, done, ready: () => out.startsWith('ready\n') };
    });
    try {
      // Released together once all are loaded, so their attempts interleave.
      await waitFor(() => runs.every((r) => r.ready()), { timeout: 45_000, what: 'the racing processes to start' });
      fs.writeFileSync(go, '');
      const results = await Promise.all(runs.map((r) => r.done));
      expect(results.reduce((n, r) => n + r.ok, 0)).toBe(LIMIT);
      const errors = results.flatMap((r) => r.errors);
      expect(errors).toHaveLength(PROCS * ATTEMPTS - LIMIT);
      expect(new Set(errors)).toEqual(
        new Set([
          `join token already used ${LIMIT} times (limit ${LIMIT}): create a new one with \`outpost token create\``,
        ]),
      );
      const check = openDatabase(file);
      try {
        expect(check.prepare('SELECT uses FROM join_tokens').get()).toEqual({ uses: LIMIT });
      } finally {
        check.close();
      }
    } finally {
      for (const r of runs) if (r.child.exitCode === null) r.child.kill('SIGKILL');
    }
  });
});
