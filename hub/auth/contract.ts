/**
 * @module What the rest of the hub asks of authentication: `HubAuth`, which the API, the tunnel,
 * the blob and image routes and an edge's lifecycle call to check and issue tokens and edge
 * credentials (hub/auth/hub-auth.ts makes it over the auth tables), and the principal a
 * verified token stands for.
 */
import type { JoinTokenInfo } from './join-tokens.js';
import type { ApiPrincipal } from './principal.js';
import type { Action, Role } from './roles.js';
import type { ApiTokenInfo } from './tokens.js';

export type { Action, Role };

export type Principal = ApiPrincipal;

export type ApiTokenView = ApiTokenInfo;

export type JoinTokenView = JoinTokenInfo;

export interface HubAuth {
  verifyApiToken(token: string): Principal | null;
  /**
   * When the API token or person's session `id` stops being valid (null: never); undefined when it
   * is not valid now (what a tunnel proxy session made with it checks: hub/tunnel/proxy-session.ts).
   */
  credentialExpiry(id: string, now?: number): number | null | undefined;
  /**
   * Holds an open long-lived request (a stream, a tunnel session, a transfer) of `p` until the
   * returned release is called; `close` ends it first if its token is revoked (on any replica) or
   * its credential expires (hub/auth/token-streams.ts).
   */
  hold(p: Principal, close: (reason: string) => void): () => void;
  createApiToken(opts: { role: Role; project: string; ttlMs?: number; description?: string }): {
    token: string;
    id: string;
    expiresAt?: number;
  };
  /** Without ttlMs the token expires after the default (24 h). */
  createJoinToken(opts: { project: string; labels: Record<string, string>; ttlMs?: number; uses?: number }): {
    token: string;
    id: string;
    expiresAt: number;
  };
  /** Every API and join token, without secrets. */
  listTokens(): { api: ApiTokenView[]; join: JoinTokenView[] };
  /** Revokes an API or join token by id (an API token's open streams end); false when it was already revoked. */
  revokeToken(kind: 'api' | 'join', id: string): boolean;
  /** New admin token for all projects into DATA/admin.token; the one it held is revoked (its streams end). */
  rotateAdminToken(): { token: string; id: string; revoked: string | null };
  /** Throws OutpostError('unauthorized', why) when expired, used up or unknown. */
  consumeJoinToken(token: string): { project: string; labels: Record<string, string> };
  /** `sealKey`: the public key the edge made at enrollment, Secrets for it are sealed to. */
  issueEdgeCredential(edge: string, sealKey?: string): string;
  /** Revokes the edge's credential and remembers it as decommissioned (the edge is told so when it dials). */
  decommissionEdgeCredential(edge: string): void;
}
