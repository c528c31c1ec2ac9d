import { afterEach, describe, expect, it } from 'vitest';
import { testDbs } from '../../test/fixtures/auth-db.js';
import { createApiToken, revokeApiToken, verifyApiToken } from '../auth/tokens.js';
import { cookieValues, ProxySessions, sessionCookie, withoutProxyCookie } from './proxy-session.js';

const dbs = testDbs();
afterEach(() => dbs.cleanup());

const web = { edge: 'shop-1', workload: 'web', port: 8080 };
const T0 = 1_800_000_000_000;

function setup(ttlMs?: number) {
  const { db } = dbs.open();
  const token = createApiToken(db, { role: 'operator', project: 'shop' });
  const v = verifyApiToken(db, token)!;
  const principal = { tokenId: v.id, role: v.role, project: v.project };
  const sessions = new ProxySessions(db);
  const { link, expiresAt } = sessions.create(principal, web, ttlMs, T0);
  return { db, principal, sessions, link, expiresAt };
}

describe('proxy sessions', () => {
  it('trade a link once for a cookie that carries the token principal, for that target only', () => {
    const { sessions, link, principal, expiresAt } = setup();
    expect(expiresAt).toBe(T0 + 60 * 60_000);
    const { cookie } = sessions.exchange(link, web, T0 + 1);
    expect(cookie).not.toBe(link);
    expect(sessions.verify([cookie], web, T0 + 2)).toEqual(principal);
    expect(() => sessions.exchange(link, web, T0 + 3)).toThrow(/not valid/);
    // The link itself is never a cookie, and a cookie never a link.
    expect(sessions.verify([link], web, T0 + 2)).toBeNull();
    expect(() => sessions.exchange(cookie, web, T0 + 3)).toThrow(/not valid/);
    for (const other of [
      { ...web, port: 8081 },
      { ...web, workload: 'api' },
      { ...web, edge: 'shop-2' },
    ])
      expect(sessions.verify([cookie], other, T0 + 2)).toBeNull();
  });

  it('refuse a link used on another target (and it stays usable on its own)', () => {
    const { sessions, link } = setup();
    expect(() => sessions.exchange(link, { ...web, port: 9090 }, T0 + 1)).toThrow(
      /outpost edge proxy-url shop-1 web 9090/,
    );
    expect(sessions.exchange(link, web, T0 + 1).cookie).toMatch(/^[0-9a-f]{16}\./);
  });

  it('expire, links and cookies alike', () => {
    const { sessions, link } = setup(1000);
    const { cookie } = sessions.exchange(link, web, T0 + 999);
    expect(sessions.verify([cookie], web, T0 + 999)).not.toBeNull();
    expect(sessions.verify([cookie], web, T0 + 1000)).toBeNull();
    const late = setup(1000);
    expect(() => late.sessions.exchange(late.link, web, T0 + 1000)).toThrow(/not valid/);
  });

  it('die with their token', () => {
    const { db, sessions, link, principal } = setup();
    const { cookie } = sessions.exchange(link, web, T0 + 1);
    expect(revokeApiToken(db, principal.tokenId)).toBe(true);
    expect(sessions.verify([cookie], web, T0 + 2)).toBeNull();
  });

  it('store only hashes of the secrets', () => {
    const { db, sessions, link } = setup();
    const { cookie } = sessions.exchange(link, web, T0 + 1);
    const dump = JSON.stringify(db.prepare('SELECT * FROM tunnel_proxy_sessions').all(), (_k, v) =>
      Buffer.isBuffer(v) || v?.type === 'Buffer' ? Buffer.from(v).toString('base64url') : v,
    );
    expect(dump).not.toContain(cookie.split('.')[1]);
    expect(dump).not.toContain(link.split('.')[1]);
  });

  it('a forged secret under a real id is refused', () => {
    const { sessions, link } = setup();
    const { cookie } = sessions.exchange(link, web, T0 + 1);
    const forged = cookie.slice(0, -1) + (cookie.endsWith('A') ? 'B' : 'A');
    expect(sessions.verify([forged], web, T0 + 2)).toBeNull();
    expect(sessions.verify(['garbage', forged, cookie], web, T0 + 2)).not.toBeNull();
  });
});

describe('proxy session cookies', () => {
  it('are scoped to the target path, HttpOnly, SameSite=Strict, Secure only on TLS', () => {
    expect(sessionCookie('v', web, T0 + 90_000, false, T0)).toBe(
      'outpost_proxy=v; Path=/api/v1/edges/shop-1/proxy/web/8080/; Max-Age=90; HttpOnly; SameSite=Strict',
    );
    expect(sessionCookie('v', web, T0 + 90_000, true, T0)).toMatch(/; Secure$/);
  });

  it('are found among others, and removed before the app sees the Cookie header', () => {
    expect(cookieValues('a=1; outpost_proxy=x; b=2; outpost_proxy=y', 'outpost_proxy')).toEqual(['x', 'y']);
    expect(cookieValues(undefined, 'outpost_proxy')).toEqual([]);
    expect(withoutProxyCookie('a=1; outpost_proxy=x; b=2')).toBe('a=1; b=2');
    expect(withoutProxyCookie('outpost_proxy=x')).toBeUndefined();
  });
});
