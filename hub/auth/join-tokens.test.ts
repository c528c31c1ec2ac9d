import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers.js';
import { JOIN_TOKEN_DEFAULT_TTL_MS } from '../../core/durations.js';
import { OutpostError } from '../../core/errors.js';
import { parseToken } from '../../sync/pinned-ca.js';
import { openDatabase } from '../../sync/sqlite.js';
import { issueEdgeCredential, verifyEdgeCredential } from './edge-credentials.js';
import { consumeJoinToken, createJoinToken, listJoinTokens, revokeJoinToken } from './join-tokens.js';
import { testDbs } from '../../test/fixtures/auth-db.js';

const FP = 'cd'.repeat(32);
const dbs = testDbs();
afterEach(() => dbs.cleanup());

function refusal(fn: () => unknown): OutpostError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(OutpostError);
    return err as OutpostError;
  }
  throw new Error('expected a refusal');
}

describe('join tokens', () => {
  it('carry the CA pin and grant their project and labels', () => {
    const { db } = dbs.open();
    const now = Date.parse('2030-01-01T00:00:00Z');
    const token = createJoinToken(
      db,
      { project: 'shop', labels: { region: 'eu', 'example.com/tier': 'edge' }, caFingerprint: FP },
      now,
    );
    expect(token).toMatch(/^opj1\.(cd){32}\.[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
    expect(parseToken(token)?.caFingerprint).toBe(FP);
    expect(consumeJoinToken(db, token, now)).toEqual({
      project: 'shop',
      labels: { region: 'eu', 'example.com/tier': 'edge' },
    });
    expect(consumeJoinToken(db, token, now)).toEqual({
      project: 'shop',
      labels: { region: 'eu', 'example.com/tier': 'edge' },
    });
    // Without a ttl, the default: a join token always expires.
    expect(listJoinTokens(db)[0]).toMatchObject({
      project: 'shop',
      uses: 2,
      usesLimit: null,
      expiresAt: now + JOIN_TOKEN_DEFAULT_TTL_MS,
    });
  });

  it('expire at their ttl, with a message saying when and what to do', () => {
    const { db } = dbs.open();
    const t0 = Date.parse('2030-01-01T00:00:00Z');
    const token = createJoinToken(db, { project: 'shop', ttlMs: 3_600_000 }, t0);
    expect(consumeJoinToken(db, token, t0 + 3_599_999).project).toBe('shop');
    const err = refusal(() => consumeJoinToken(db, token, t0 + 3_600_000));
    expect(err.status).toBe(401);
    expect(err.message).toBe(
      'join token expired at 2030-01-01T01:00:00.000Z: create a new one with `outpost token create`',
    );
  });

  it('a single-use token refuses its second use, and the refusal does not count as a use', () => {
    const { db } = dbs.open();
    const token = createJoinToken(db, { project: 'shop', uses: 1 });
    consumeJoinToken(db, token);
    for (let i = 0; i < 2; i++) {
      expect(refusal(() => consumeJoinToken(db, token)).message).toBe(
        'join token already used 1 times (limit 1): create a new one with `outpost token create`',
      );
    }
    expect(listJoinTokens(db)[0].uses).toBe(1);
  });

  it('refuse a wrong secret exactly like an unknown token, and a revoked one with when', () => {
    const { db } = dbs.open();
    const token = createJoinToken(db, { project: 'shop' });
    const unknown =
      'unknown join token: check that it was copied whole, or create a new one with `outpost token create`';
    const wrong = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect(refusal(() => consumeJoinToken(db, wrong)).message).toBe(unknown);
    expect(refusal(() => consumeJoinToken(db, token.replace(/\.[0-9a-f]{16}\./, '.0000000000000000.'))).message).toBe(
      unknown,
    );
    expect(refusal(() => consumeJoinToken(db, 'opt1.none.x.y')).message).toBe(unknown);
    const id = parseToken(token)!.id;
    expect(revokeJoinToken(db, id, Date.parse('2030-01-01T00:00:00Z'))).toBe(true);
    expect(revokeJoinToken(db, id)).toBe(false);
    expect(refusal(() => consumeJoinToken(db, token)).message).toBe(
      `join token ${id} was revoked at 2030-01-01T00:00:00.000Z: create a new one with \`outpost token create\``,
    );
    expect(listJoinTokens(db)[0].uses).toBe(0);
  });

  it('validate project, labels and uses with a message naming the field', () => {
    const { db } = dbs.open();
    expect(() => createJoinToken(db, { project: '*' })).toThrow(/project "\*" is not a valid name/);
    expect(() => createJoinToken(db, { project: 'shop', labels: { region: 'not ok!' } })).toThrow(/^labels\.region: /);
    expect(() => createJoinToken(db, { project: 'shop', uses: 0 })).toThrow(/uses must be a positive whole number/);
    expect(listJoinTokens(db)).toEqual([]);
  });

  it('inside an enrollment transaction, a failure after consuming gives the use back', () => {
    const { db } = dbs.open();
    const token = createJoinToken(db, { project: 'shop', uses: 1 });
    const enroll = db.transaction(() => {
      consumeJoinToken(db, token);
      issueEdgeCredential(db, 'edge-1');
      throw new Error('creating the edge failed');
    });
    expect(() => enroll.immediate()).toThrow('creating the edge failed');
    expect(listJoinTokens(db)[0].uses).toBe(0);
    expect(db.prepare('SELECT count(*) AS n FROM edge_credentials').get()).toEqual({ n: 0 });
    const ok = db.transaction(() => ({
      grant: consumeJoinToken(db, token),
      credential: issueEdgeCredential(db, 'edge-1'),
    }))();
    expect(ok.grant.project).toBe('shop');
    expect(verifyEdgeCredential(db, ok.credential)).toEqual({ edge: 'edge-1' });
  });

  it('concurrent consumption from several processes never exceeds the limit', async () => {
    const { db, dir, file } = dbs.open();
    const LIMIT = 150;
    const PROCS = 4;
    const ATTEMPTS = 100;
    const token = createJoinToken(db, { project: 'shop', uses: LIMIT });
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
