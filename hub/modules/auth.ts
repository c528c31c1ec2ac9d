/**
 * @module Authentication as one module: the auth tables, the admin token (shared by replicas on
 * one database: hub/identity/admin-token.ts; a SQLite hub makes its own), `HubAuth` for the API,
 * the tunnel and the blob and image routes, and the open streams each token holds, which end when
 * it is revoked (here, or on another replica: the bus) or expires.
 */
import * as auth from '../auth/index.js';
import type { HubAuth } from '../auth/contract.js';
import type { IdentityKey } from '../identity/key.js';
import { ensureReplicaAdminToken, shareRotatedAdminToken } from '../identity/admin-token.js';
import type { HubModule } from '../module.js';
import type { SyncPostgres } from '../state/pg/sync-client.js';
import type { SqlDb } from '../state/sql.js';

export interface AuthModule extends HubModule {
  readonly auth: HubAuth;
  readonly tokenStreams: auth.TokenStreams;
  /** DATA/admin.token; `token` undefined on a replica whose database's admin token another made. */
  readonly admin: { token: string | undefined; created: boolean };
}

export function createAuthModule(o: {
  db: SqlDb;
  pg: SyncPostgres | undefined;
  dataDir: string;
  caFingerprint: string | null;
  identityKey: IdentityKey | undefined;
  /** Tells the other replicas these tokens were revoked (none on a SQLite hub). */
  broadcastRevoked(tokens: string[]): void;
}): AuthModule {
  const { db, pg, dataDir, caFingerprint, identityKey } = o;
  auth.migrateAuth(db);
  const admin = pg
    ? ensureReplicaAdminToken(pg, dataDir, caFingerprint, identityKey)
    : auth.ensureAdminToken(db, dataDir, caFingerprint);
  const tokenStreams = new auth.TokenStreams({
    live: (ids) => auth.liveApiTokens(db, ids),
    broadcast: (tokens) => o.broadcastRevoked(tokens),
  });
  const hubAuth = auth.createHubAuth(db, dataDir, caFingerprint, tokenStreams, (t) => {
    if (pg && identityKey) shareRotatedAdminToken(pg, identityKey, t);
  });
  return { name: 'auth', auth: hubAuth, tokenStreams, admin, stop: () => tokenStreams.close() };
}
