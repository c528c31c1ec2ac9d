/**
 * @module Who is calling the hub's API: the principal of the API token in an `Authorization:
 * Bearer` header, checked in one place for the REST API, its SSE stream, the tunnel and the blob
 * routes. (Edges authenticate at the sync upgrade with their credential instead:
 * sync/http-upgrade.ts, with the same header parser, core/http.ts.)
 */
import { OutpostError } from '../../core/errors.js';
import { bearerToken } from '../../core/http.js';
import type { Principal } from './roles.js';

/** An authenticated API token: its role and project (`*` spans projects), and which token it is. */
export interface ApiPrincipal extends Principal {
  tokenId: string;
  /**
   * When the credential stops being valid (ms since the epoch): the token's expiry, or for a proxy
   * session the earlier of its own and its token's; null or absent: never. What a long-lived request
   * of it may last (token-streams.ts).
   */
  expiresAt?: number | null;
  /**
   * For a person's session (hub/auth/people.ts): who signed in (their verified email, else their
   * subject); `tokenId` is then the session's id. Absent for an API token.
   */
  person?: string;
}

/**
 * How a principal is named in events, audit lines and logs: the person and their session, or the
 * token. The one wording, so every audit event names a person or a token.
 *
 * @example
 * actorOf({ role: 'operator', project: 'shop', tokenId: 'k3j', person: 'ana@example.com' }); // 'operator ana@example.com (session k3j)'
 */
/** The short form of `actorOf` that records keep (a blob's uploader, a package's pusher): `token:ID` or `person:NAME`, as `edge:NAME`. */
export function byOf(p: Pick<ApiPrincipal, 'tokenId' | 'person'>): string {
  return p.person ? `person:${p.person}` : `token:${p.tokenId}`;
}

export function actorOf(p: Pick<ApiPrincipal, 'role' | 'tokenId' | 'person'>): string {
  return p.person ? `${p.role} ${p.person} (session ${p.tokenId})` : `${p.role} token ${p.tokenId}`;
}

export type VerifyApiToken = (token: string) => ApiPrincipal | null;

export const MISSING_TOKEN = 'missing bearer token: pass --token, set OUTPOST_TOKEN, or run `outpost login`';

/**
 * The principal of a bearer token; throws 401 naming the fix when the token is missing
 * (`missing` says how to pass one) or unknown, expired or revoked.
 */
export function principalOf(verify: VerifyApiToken, token: string | null, missing = MISSING_TOKEN): ApiPrincipal {
  if (!token) throw new OutpostError('unauthorized', missing);
  const p = verify(token);
  if (!p)
    throw new OutpostError(
      'unauthorized',
      'the token is not valid (unknown, expired or revoked): ask an admin for a new one and run `outpost login` again',
    );
  return p;
}

/** principalOf the `Authorization` header's bearer token. */
export function principalFromHeader(verify: VerifyApiToken, header: string | null | undefined): ApiPrincipal {
  return principalOf(verify, bearerToken(header));
}
