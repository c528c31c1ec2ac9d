import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { captureLogs } from '../../core/logger.js';
import { parseToken } from '../../sync/pinned-ca.js';
import { secretMatches, hashSecret } from './schema.js';
import { testDbs } from '../../test/fixtures/auth-db.js';
import { createApiToken, ensureAdminToken, listApiTokens, revokeApiToken, verifyApiToken } from './tokens.js';

const FP = 'ab'.repeat(32);
const dbs = testDbs();
afterEach(() => {
  vi.restoreAllMocks();
  dbs.cleanup();
});

/** The same token with one character of the secret changed. */
function flipLast(token: string): string {
  const last = token.at(-1)!;
  return token.slice(0, -1) + (last === 'A' ? 'B' : 'A');
}

describe('API tokens', () => {
  it('creates a token carrying the CA pin, verifies it, and stores only a hash of the secret', () => {
    const { db } = dbs.open();
    const token = createApiToken(db, { role: 'operator', project: 'shop', description: 'ci', caFingerprint: FP });
    expect(token).toMatch(/^opt1\.(ab){32}\.[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
    const p = parseToken(token)!;
    expect(p.caFingerprint).toBe(FP);
    expect(verifyApiToken(db, token)).toEqual({ id: p.id, role: 'operator', project: 'shop' });

    const row = db.prepare('SELECT * FROM api_tokens').get() as Record<string, unknown>;
    expect(JSON.stringify(row)).not.toContain(p.secret);
    expect(row.secret_hash).toEqual(crypto.createHash('sha256').update(p.secret).digest());
    expect(listApiTokens(db)).toEqual([
      expect.objectContaining({
        id: p.id,
        role: 'operator',
        project: 'shop',
        description: 'ci',
        revokedAt: null,
        expiresAt: null,
      }),
    ]);
    expect(JSON.stringify(listApiTokens(db))).not.toContain(p.secret);
  });

  it('writes "none" for a hub without TLS', () => {
    const { db } = dbs.open();
    const token = createApiToken(db, { role: 'viewer', project: '*' });
    expect(token.split('.')[1]).toBe('none');
    expect(verifyApiToken(db, token)).toMatchObject({ role: 'viewer', project: '*' });
  });

  it('refuses a wrong secret, an unknown id, another kind and garbage', () => {
    const { db } = dbs.open();
    const token = createApiToken(db, { role: 'admin', project: '*' });
    expect(verifyApiToken(db, flipLast(token))).toBeNull();
    expect(verifyApiToken(db, token.replace(/\.[0-9a-f]{16}\./, '.0000000000000000.'))).toBeNull();
    expect(verifyApiToken(db, token.replace(/^opt1/, 'opj1'))).toBeNull();
    expect(verifyApiToken(db, 'Bearer nonsense')).toBeNull();
  });

  it('expires after its ttl', () => {
    const { db } = dbs.open();
    const t0 = 1_700_000_000_000;
    const token = createApiToken(db, { role: 'viewer', project: 'shop', ttlMs: 60_000 }, t0);
    expect(verifyApiToken(db, token, t0 + 59_999)).not.toBeNull();
    expect(verifyApiToken(db, token, t0 + 60_000)).toBeNull();
    expect(listApiTokens(db)[0].expiresAt).toBe(t0 + 60_000);
  });

  it('revocation takes effect at once and is reported once', () => {
    const { db } = dbs.open();
    const token = createApiToken(db, { role: 'operator', project: 'shop' });
    const other = createApiToken(db, { role: 'operator', project: 'shop' });
    const id = parseToken(token)!.id;
    expect(revokeApiToken(db, id, 1234)).toBe(true);
    expect(revokeApiToken(db, id)).toBe(false);
    expect(revokeApiToken(db, 'ffffffffffffffff')).toBe(false);
    expect(verifyApiToken(db, token)).toBeNull();
    expect(verifyApiToken(db, other)).not.toBeNull();
    expect(listApiTokens(db).find((t) => t.id === id)?.revokedAt).toBe(1234);
  });

  it('validates role, project and ttl with a message naming the field', () => {
    const { db } = dbs.open();
    expect(() => createApiToken(db, { role: 'root' as 'admin', project: 'shop' })).toThrow(
      'role "root" is not one of admin, operator, viewer',
    );
    expect(() => createApiToken(db, { role: 'admin', project: 'Shop!' })).toThrow(
      /project "Shop!" is not a valid name/,
    );
    expect(() => createApiToken(db, { role: 'admin', project: 'shop', ttlMs: 0 })).toThrow(
      /ttl must be a positive duration/,
    );
    expect(() => createApiToken(db, { role: 'admin', project: 'shop', caFingerprint: 'xyz' })).toThrow(
      /cannot build the api token/,
    );
  });

  it('compares secrets in constant time', () => {
    const { db } = dbs.open();
    const token = createApiToken(db, { role: 'viewer', project: 'shop' });
    const spy = vi.spyOn(crypto, 'timingSafeEqual');
    expect(verifyApiToken(db, flipLast(token))).toBeNull();
    expect(verifyApiToken(db, token)).not.toBeNull();
    expect(spy).toHaveBeenCalledTimes(2);
    // Any presented secret is hashed to the stored length first, so the comparison cannot throw or short-cut on length.
    expect(secretMatches('x', hashSecret('y'.repeat(500)))).toBe(false);
    expect(secretMatches('y'.repeat(500), hashSecret('y'.repeat(500)))).toBe(true);
  });
});

describe('ensureAdminToken', () => {
  it('creates an admin token for all projects once, in a file only the owner can read', () => {
    const { db, dir } = dbs.open();
    const first = ensureAdminToken(db, dir, FP);
    expect(first.created).toBe(true);
    const file = path.join(dir, 'admin.token');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(file, 'utf8')).toBe(`${first.token}\n`);
    expect(verifyApiToken(db, first.token)).toMatchObject({ role: 'admin', project: '*' });
    expect(parseToken(first.token)?.caFingerprint).toBe(FP);

    const again = ensureAdminToken(db, dir, FP);
    expect(again).toEqual({ token: first.token, created: false });
    expect(listApiTokens(db)).toHaveLength(1);
  });

  it('never rewrites an existing file, and warns when its token is no longer accepted', () => {
    const { db, dir } = dbs.open();
    const { token } = ensureAdminToken(db, dir, null);
    revokeApiToken(db, parseToken(token)!.id);
    const logs = captureLogs();
    try {
      expect(ensureAdminToken(db, dir, null)).toEqual({ token, created: false });
      expect(
        logs.parsed().some((l) => l.level === 40 && String(l.msg).includes('delete the file and restart the hub')),
      ).toBe(true);
    } finally {
      logs.stop();
    }
    // Deleting the file is how an operator gets a new one.
    fs.rmSync(path.join(dir, 'admin.token'));
    const fresh = ensureAdminToken(db, dir, null);
    expect(fresh.created).toBe(true);
    expect(fresh.token).not.toBe(token);
  });

  it('rolls the token back when the file cannot be written', () => {
    const { db, dir } = dbs.open();
    const blocked = path.join(dir, 'not-a-dir');
    fs.writeFileSync(blocked, '');
    expect(() => ensureAdminToken(db, blocked, null)).toThrow(/cannot write the admin token to .*not-a-dir/);
    expect(listApiTokens(db)).toEqual([]);
  });
});
