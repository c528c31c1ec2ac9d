/**
 * @module Authentication as one module: the auth tables, the admin token (shared by replicas on
 * one database: hub/identity/admin-token.ts; a SQLite hub makes its own), `HubAuth` for the API,
 * the tunnel and the blob and image routes, and the open streams each token holds, which end when
 * it is revoked (here, or on another replica: the bus) or expires.
 */
import * as auth from '../auth/index.js';
import type { HubAuth } from '../auth/contract.js';
import type { PeopleSessions } from '../auth/people.js';
import type { IdentityKey } from '../identity/key.js';
import { ensureReplicaAdminToken, shareRotatedAdminToken } from '../identity/admin-token.js';
import type { HubModule } from '../module.js';
import type { HubState } from '../state/index.js';

export interface AuthModule extends HubModule {
  readonly auth: HubAuth;
  readonly tokenStreams: auth.TokenStreams;
  /** DATA/admin.token; `token` undefined on a replica whose database's admin token another made. */
  readonly admin: { token: string | undefined; created: boolean };
  /** People's sessions, set when the hub has an identity provider (hub/modules/people.ts). */
  people: PeopleSessions | undefined;
}

export function createAuthModule(o: {
  state: HubState;
  /** Replicas sharing a PostgreSQL share one admin token (hub/identity/admin-token.ts). */
  replicas: boolean;
  dataDir: string;
  caFingerprint: string | null;
  identityKey: IdentityKey | undefined;
  /** Tells the other replicas these tokens were revoked (none on a SQLite hub). */
  broadcastRevoked(tokens: string[]): void;
}): AuthModule {
  const { state, dataDir, caFingerprint, identityKey } = o;
  const admin = o.replicas
    ? ensureReplicaAdminToken(state, dataDir, caFingerprint, identityKey)
    : auth.ensureAdminToken(state.auth, dataDir, caFingerprint);
  const tokenStreams = new auth.TokenStreams({
    live: (ids) => {
      const live = auth.liveApiTokens(state.auth, ids);
      for (const id of m.people?.live(ids.filter((i) => !live.has(i))) ?? []) live.add(id);
      return live;
    },
    broadcast: (tokens) => o.broadcastRevoked(tokens),
  });
  const hubAuth = auth.createHubAuth(
    state.auth,
    dataDir,
    caFingerprint,
    tokenStreams,
    (t) => {
      if (o.replicas && identityKey) shareRotatedAdminToken(state.identity, identityKey, t);
    },
    () => m.people,
  );
  const m: AuthModule = {
    name: 'auth',
    auth: hubAuth,
    tokenStreams,
    admin,
    people: undefined,
    stop: () => tokenStreams.close(),
  };
  return m;
}
