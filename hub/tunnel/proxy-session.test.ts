import { afterEach, describe, expect, it } from 'vitest';
import { testDbs } from '../../test/fixtures/auth-db.js';
import { proxySessionSuite } from '../../test/fixtures/auth-suites.js';
import { cookieValues, sessionCookie, withoutProxyCookie } from './proxy-session.js';

const dbs = testDbs();
afterEach(() => dbs.cleanup());

const web = { edge: 'shop-1', workload: 'web', port: 8080 };
const T0 = 1_800_000_000_000;

/** Sessions on SQLite files (the suite runs on PostgreSQL too). */
proxySessionSuite(() => dbs.open());

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
