/**
 * @module `HubAuth` (hub/auth/contract.ts) over the auth tables of one database: what the API, the
 * tunnel, the blob and image routes and an edge's lifecycle call to check and issue tokens and
 * edge credentials. Tokens it makes carry the pin of the hub's CA (null without TLS).
 */
import { parseToken } from '../../sync/pinned-ca.js';
import type { HubAuth } from './contract.js';
import type { AuthTables } from '../state/auth.js';
import { issueEdgeCredential, revokeEdgeCredential } from './edge-credentials.js';
import { consumeJoinToken, createJoinToken, joinTokenExpiry, listJoinTokens, revokeJoinToken } from './join-tokens.js';
import type { PeopleSessions } from './people.js';
import type { ApiPrincipal } from './principal.js';
import type { TokenStreams } from './token-streams.js';
import {
  apiTokenExpiry,
  createApiToken,
  listApiTokens,
  revokeApiToken,
  rotateAdminToken,
  verifyApiToken,
} from './tokens.js';

/**
 * `dataDir` holds admin.token, which `rotateAdminToken` writes again; `streams` holds the tokens'
 * open requests, which a revocation ends.
 */
export function createHubAuth(
  db: AuthTables,
  dataDir: string,
  caFingerprint: string | null,
  streams: TokenStreams,
  /** After `token rotate-admin`: hub replicas sharing an identity share the new token too. */
  onAdminRotated: (token: string) => void = () => {},
  /** People's sessions (hub/auth/people.ts), when the hub has an identity provider: their tokens have the API tokens' format. */
  people: () => Pick<PeopleSessions, 'verify' | 'expiry'> | undefined = () => undefined,
): HubAuth {
  return {
    verifyApiToken: (t) => {
      const p = verifyApiToken(db, t);
      if (p) return { tokenId: p.id, role: p.role, project: p.project, expiresAt: p.expiresAt } satisfies ApiPrincipal;
      const parsed = parseToken(t);
      return parsed?.kind === 'api' ? (people()?.verify(parsed.id, parsed.secret) ?? null) : null;
    },
    credentialExpiry: (id, now = Date.now()) => {
      const e = apiTokenExpiry(db, id, now);
      return e !== undefined ? e : people()?.expiry(id, now);
    },
    hold: (p, close) => streams.hold(p, close),
    createApiToken: (o) => {
      const token = createApiToken(db, { ...o, caFingerprint });
      return { token, id: parseToken(token)?.id ?? '' };
    },
    createJoinToken: (o) => {
      const now = Date.now();
      const token = createJoinToken(db, { ...o, caFingerprint }, now);
      return { token, id: parseToken(token)?.id ?? '', expiresAt: joinTokenExpiry(o.ttlMs, now) };
    },
    listTokens: () => ({ api: listApiTokens(db), join: listJoinTokens(db) }),
    revokeToken: (kind, id) => {
      if (kind === 'join') return revokeJoinToken(db, id);
      const revoked = revokeApiToken(db, id);
      // Also when it was revoked already: a stream that outlived it somehow ends now.
      streams.revoke(id);
      return revoked;
    },
    rotateAdminToken: () => {
      const r = rotateAdminToken(db, dataDir, caFingerprint);
      if (r.revoked) streams.revoke(r.revoked);
      onAdminRotated(r.token);
      return r;
    },
    consumeJoinToken: (t) => consumeJoinToken(db, t),
    issueEdgeCredential: (e, sealKey) => issueEdgeCredential(db, e, sealKey),
    decommissionEdgeCredential: (e) => void revokeEdgeCredential(db, e, { decommissioned: true }),
  };
}
