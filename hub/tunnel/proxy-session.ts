/**
 * @module Browser sessions for the service proxy (docs/tunnel.md): a browser following a link
 * cannot send an Authorization header, so `POST /api/v1/edges/NAME/proxy-session` (bearer, write)
 * hands out a link to `.../proxy/WORKLOAD/PORT/?session=LINK`. The first request with the link
 * trades it for a cookie scoped to exactly that path; later requests (and WebSocket upgrades)
 * authenticate by the cookie.
 *
 * Safety, and why:
 * - The link works once: it ends up in browser history, proxies' logs and chat messages; after the
 *   exchange it is worthless. The cookie is a different secret, HttpOnly (scripts of the proxied
 *   app cannot read it), SameSite=Strict (another site cannot ride on it, WebSockets included),
 *   Secure on a TLS hub.
 * - Both secrets are stored as sha256 hashes under a non-secret id (as API tokens are), so the
 *   hub's database yields nothing usable.
 * - A session is bound to one edge, workload and port, checked on every request whatever path
 *   the browser sends it on; it carries the creating token's principal, re-checked per request
 *   (project and role by the gateway; here, that the token is neither revoked nor expired), and
 *   it expires (1 h by default).
 */
import type { Principal, Role } from '../auth/contract.js';
import { OutpostError } from '../../core/errors.js';
import { isValidName } from '../../core/ids.js';
import { hashSecret, newId, newSecret, secretMatches } from '../auth/token-secrets.js';
import { apiTokenExpiry } from '../auth/tokens.js';
import type { AuthTables } from '../state/auth.js';
import type { ProxySessionRow, ProxySessionTables } from '../state/proxy-sessions.js';

export const PROXY_COOKIE = 'outpost_proxy';
/** Long enough to use an app's UI for a while, short enough that a forgotten tab does not stay a door. */
export const DEFAULT_SESSION_TTL_MS = 60 * 60_000;
export const MAX_SESSION_TTL_MS = 12 * 60 * 60_000;

export interface ProxyTarget {
  edge: string;
  workload: string;
  port: number;
}

type Row = ProxySessionRow;

/** The path a session is scoped to (its cookie's Path, with the trailing slash). */
export function proxyPath(t: ProxyTarget): string {
  return `/api/v1/edges/${t.edge}/proxy/${t.workload}/${t.port}/`;
}

/** The target of a proxy route's rest (`/WORKLOAD/PORT/...`); null when it is not one. */
export function proxyTargetOf(edge: string, rest: string): ProxyTarget | null {
  const m = /^\/([^/]+)\/(\d{1,5})(\/.*)?$/.exec(rest);
  if (!m || !isValidName(m[1]) || Number(m[2]) < 1 || Number(m[2]) > 65535) return null;
  return { edge, workload: m[1], port: Number(m[2]) };
}

/** `ID.SECRET`: the id finds the row, the secret is compared in constant time. */
function split(value: string): { id: string; secret: string } | null {
  const m = /^([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$/.exec(value);
  return m ? { id: m[1], secret: m[2] } : null;
}

const sameTarget = (r: Row, t: ProxyTarget): boolean =>
  r.edge === t.edge && r.workload === t.workload && r.port === t.port;

export class ProxySessions {
  constructor(
    private readonly state: { proxySessions: ProxySessionTables; auth: AuthTables },
    /**
     * When the credential `id` a session was made with ends (null: never; undefined: not valid now).
     * Default: API tokens only; the hub's `HubAuth.credentialExpiry` also knows people's sessions.
     */
    private readonly credentialExpiry: (id: string, now: number) => number | null | undefined = (id, now) =>
      apiTokenExpiry(state.auth, id, now),
  ) {}

  /** A one-time link secret for `p` on `target`, valid for `ttlMs`. */
  create(
    p: Principal,
    target: ProxyTarget,
    ttlMs = DEFAULT_SESSION_TTL_MS,
    now = Date.now(),
  ): { link: string; expiresAt: number } {
    const id = newId();
    const secret = newSecret();
    const expiresAt = now + ttlMs;
    this.state.proxySessions.create({
      id,
      link_hash: hashSecret(secret),
      token_id: p.tokenId,
      role: p.role,
      project: p.project,
      edge: target.edge,
      workload: target.workload,
      port: target.port,
      created_at: now,
      expires_at: expiresAt,
    });
    return { link: `${id}.${secret}`, expiresAt };
  }

  /** Trades a link for a cookie secret; throws `unauthorized` for a used, expired, unknown or misplaced link. */
  exchange(link: string, target: ProxyTarget, now = Date.now()): { cookie: string; expiresAt: number } {
    const parts = split(link);
    const row = parts ? this.row(parts.id) : undefined;
    if (
      !parts ||
      !row ||
      !row.link_hash ||
      !secretMatches(parts.secret, row.link_hash) ||
      !sameTarget(row, target) ||
      row.expires_at <= now
    ) {
      throw new OutpostError(
        'unauthorized',
        `this proxy link is not valid (each link works once, for one workload port, until it expires): run \`outpost edge proxy-url ${target.edge} ${target.workload} ${target.port}\` for a new one`,
      );
    }
    const secret = newSecret();
    // Only one exchange wins, even if two requests race with the same link.
    if (!this.state.proxySessions.exchange(row.id, hashSecret(secret)))
      throw new OutpostError(
        'unauthorized',
        `this proxy link was already used: run \`outpost edge proxy-url ${target.edge} ${target.workload} ${target.port}\` for a new one`,
      );
    return { cookie: `${row.id}.${secret}`, expiresAt: row.expires_at };
  }

  /** The principal of the first cookie value that is a live session for exactly `target`; null if none. */
  verify(cookies: string[], target: ProxyTarget, now = Date.now()): Principal | null {
    for (const value of cookies) {
      const parts = split(value);
      const row = parts ? this.row(parts.id) : undefined;
      if (!parts || !row || !row.cookie_hash || !secretMatches(parts.secret, row.cookie_hash)) continue;
      if (!sameTarget(row, target) || row.expires_at <= now) continue;
      // A session dies with its token: revoking the token (or its expiry) ends its browser sessions too.
      const tokenExpiry = this.credentialExpiry(row.token_id, now);
      if (tokenExpiry === undefined) continue;
      return {
        tokenId: row.token_id,
        role: row.role,
        project: row.project,
        // What the session's requests may last: until the session or its token ends, whichever is first.
        expiresAt: tokenExpiry === null ? row.expires_at : Math.min(row.expires_at, tokenExpiry),
      };
    }
    return null;
  }

  private row(id: string): Row | undefined {
    return this.state.proxySessions.get(id);
  }
}

/** Every value of cookie `name` in a Cookie header (a browser may send several with different paths). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  const out: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim());
  }
  return out;
}

/** The Cookie header without our session cookie: the proxied app gets its own cookies, never ours. */
export function withoutProxyCookie(header: string): string | undefined {
  const kept = header
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p && !p.startsWith(`${PROXY_COOKIE}=`));
  return kept.length ? kept.join('; ') : undefined;
}

/** The Set-Cookie value for a session on `target`. */
export function sessionCookie(
  value: string,
  target: ProxyTarget,
  expiresAt: number,
  secure: boolean,
  now = Date.now(),
): string {
  const maxAge = Math.max(0, Math.floor((expiresAt - now) / 1000));
  return `${PROXY_COOKIE}=${value}; Path=${proxyPath(target)}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}
