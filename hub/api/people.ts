/**
 * @module The routes of sign-in with the identity provider (hub/modules/people.ts; docs/security.md,
 * "People"). Without an issuer configured only `GET /api/v1/auth/oidc` answers ({enabled: false}).
 *
 * - `GET /auth/oidc/login?project=P`: the browser to the provider (code flow, PKCE); the state in an
 *   HttpOnly cookie scoped to /auth/oidc.
 * - `GET /auth/oidc/callback`: state (URL and cookie), nonce and the ID token checked; the session
 *   token goes to the UI in the URL fragment (`/#session=...`), which browsers never send to a
 *   server; the UI moves it into sessionStorage and removes it from the address bar.
 * - `POST /api/v1/auth/oidc/device` {project?}, `POST /api/v1/auth/oidc/device/poll` {handle}: the
 *   CLI's device flow (the hub polls the provider).
 * - `POST /api/v1/auth/oidc/token` {idToken, project?}: a session for an ID token the caller holds.
 * - `POST /api/v1/auth/logout` (authenticated): ends the caller's session.
 */
import { Hono, type Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { OutpostError } from '../../core/errors.js';
import { isValidName } from '../../core/ids.js';
import { principal, type Env } from '../auth/middleware.js';
import type { PeopleSessions } from '../auth/people.js';
import type { OidcSignIn } from '../auth/sign-in.js';
import { jsonBody } from '../json-body.js';

export interface PeopleApi {
  signIn: OidcSignIn;
  sessions: PeopleSessions;
  issuer: string;
}

const STATE_COOKIE = 'outpost_oidc_state';

function projectOf(v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string' || !isValidName(v))
    throw new OutpostError('invalid', `project ${JSON.stringify(v)} is not a valid project name`);
  return v;
}

function need(people: PeopleApi | undefined): PeopleApi {
  if (!people)
    throw new OutpostError(
      'not_found',
      'this hub has no identity provider: start it with --oidc-issuer URL --oidc-client-id ID --oidc-client-secret-file FILE, or use an API token',
    );
  return people;
}

const secure = (c: Context) => new URL(c.req.url).protocol === 'https:';

/** The routes no token guards (a sign-in is how one gets a token). */
export function signInRoutes(people: PeopleApi | undefined): Hono {
  const app = new Hono();
  app.get('/api/v1/auth/oidc', (c) => c.json(people ? { enabled: true, issuer: people.issuer } : { enabled: false }));
  app.get('/auth/oidc/login', async (c) => {
    const p = need(people);
    const redirect = new URL('/auth/oidc/callback', c.req.url).href;
    const { url, state } = await p.signIn.startCode(redirect, projectOf(c.req.query('project')));
    setCookie(c, STATE_COOKIE, state, {
      httpOnly: true,
      sameSite: 'Lax',
      path: '/auth/oidc',
      maxAge: 600,
      secure: secure(c),
    });
    return c.redirect(url, 302);
  });
  app.get('/auth/oidc/callback', async (c) => {
    const p = need(people);
    const cookieState = getCookie(c, STATE_COOKIE);
    deleteCookie(c, STATE_COOKIE, { path: '/auth/oidc', secure: secure(c) });
    const url = new URL(c.req.url);
    try {
      const s = await p.signIn.finishCode(url, cookieState);
      c.header('cache-control', 'no-store');
      return c.redirect(`/#session=${encodeURIComponent(s.token)}`, 302);
    } catch (err) {
      const message = err instanceof OutpostError ? err.message : 'the sign-in failed: see the hub log';
      return c.redirect(`/#signin-error=${encodeURIComponent(message)}`, 302);
    }
  });
  app.post('/api/v1/auth/oidc/device', async (c) => {
    const p = need(people);
    const b = await jsonBody<{ project?: unknown }>(c).catch(() => ({}) as { project?: unknown });
    return c.json(await p.signIn.startDevice(projectOf(b.project)));
  });
  app.post('/api/v1/auth/oidc/device/poll', async (c) => {
    const p = need(people);
    const b = await jsonBody<{ handle?: unknown }>(c);
    if (typeof b.handle !== 'string') throw new OutpostError('invalid', 'handle: give the handle `device` answered');
    return c.json(p.signIn.pollDevice(b.handle));
  });
  app.post('/api/v1/auth/oidc/token', async (c) => {
    const p = need(people);
    const b = await jsonBody<{ idToken?: unknown; project?: unknown }>(c);
    if (typeof b.idToken !== 'string' || !b.idToken)
      throw new OutpostError('invalid', 'idToken: give the ID token the identity provider issued for this hub');
    return c.json(await p.signIn.exchangeIdToken(b.idToken, projectOf(b.project)), 201);
  });
  return app;
}

/** Logout, behind authentication. */
export function logoutRoutes(people: PeopleApi | undefined): Hono<Env> {
  const app = new Hono<Env>();
  app.post('/auth/logout', async (c) => {
    const me = principal(c);
    if (!me.person || !people)
      throw new OutpostError(
        'bad_request',
        'this is an API token, not a session: nothing to log out of on the hub (revoke it with `outpost token revoke ID`)',
      );
    await people.sessions.logout(me.tokenId);
    return c.json({ ended: me.tokenId, person: me.person });
  });
  return app;
}
