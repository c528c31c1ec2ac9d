/**
 * @module The first-start admin token of hub replicas on one PostgreSQL (docs/operations.md, "HA
 * and scale-out"): made once per database, not once per replica. A SQLite hub is the only process
 * of its database and keeps hub/auth/tokens.ts `ensureAdminToken` as it is.
 *
 * - With the identity key, the token is a part of the shared identity (hub/state/identity.ts,
 *   part `admin-token`, sealed with the key): the first replica makes it, every other replica
 *   started with an empty data directory writes the same token into its `admin.token`, and
 *   `outpost token rotate-admin` through any replica replaces the part with the new token.
 * - Without the key a replica cannot read another's token: while the database holds a live admin
 *   token made at a first start (or rotated), a replica without `admin.token` makes none and says
 *   where to get it (the first replica's file works on every replica).
 *
 * Replicas racing on an empty database each make a token and put it with `ON CONFLICT DO NOTHING`:
 * the one whose row lost rolls its token back and takes the winner's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../core/logger.js';
import { parseToken } from '../../sync/pinned-ca.js';
import { ensureAdminToken, hasFirstStartAdminToken, verifyApiToken } from '../auth/tokens.js';
import type { IdentityStore } from '../state/identity.js';
import type { HubState } from '../state/index.js';
import type { IdentityKey } from './key.js';

const log = createLogger('hub:identity');

/** The identity part that holds the admin token. */
export const ADMIN_TOKEN_PART = 'admin-token';

/** A made token whose row lost the race to another replica's: rolled back. */
class LostRace extends Error {}

export interface ReplicaAdminToken {
  /** Undefined: a keyless replica that found the database's admin token made elsewhere. */
  token: string | undefined;
  created: boolean;
}

/**
 * DATA/admin.token of a hub replica on PostgreSQL: the one the file holds, the database's shared
 * one (with `key`), or a new one only when the database has none.
 */
export function ensureReplicaAdminToken(
  state: Pick<HubState, 'auth' | 'identity' | 'transaction'>,
  dataDir: string,
  caFingerprint: string | null,
  key: IdentityKey | undefined,
): ReplicaAdminToken {
  const db = state.auth;
  const file = path.join(dataDir, 'admin.token');
  if (fs.existsSync(file)) {
    const held = ensureAdminToken(db, dataDir, caFingerprint);
    // A hub migrated from SQLite (or started before this part existed): its token becomes the shared one.
    if (key && verifyApiToken(db, held.token))
      state.identity.putMissing([
        { part: ADMIN_TOKEN_PART, sealed: key.seal(ADMIN_TOKEN_PART, held.token), public: parseToken(held.token)!.id },
      ]);
    return held;
  }
  if (!key) {
    // Check and make in one transaction under a lock: two replicas starting at once on an empty
    // database would otherwise both find no token and both make one.
    const made = state.transaction(() => {
      db.lockFirstStartAdmin();
      return hasFirstStartAdminToken(db) ? undefined : ensureAdminToken(db, dataDir, caFingerprint);
    });
    if (made) return made;
    log.warn(
      { file },
      `this database already has its admin token, made by the replica that started first: ${file} was not made (one admin token per database). Copy admin.token from that replica's data directory here (it works on every replica), or start the replicas with --identity-key to share it`,
    );
    return { token: undefined, created: false };
  }
  const store = state.identity;
  for (let attempt = 0; attempt < 2; attempt++) {
    const shared = store.all().find((r) => r.part === ADMIN_TOKEN_PART);
    if (shared) {
      const token = key.open(ADMIN_TOKEN_PART, shared.sealed);
      if (!verifyApiToken(db, token))
        log.warn(
          { file },
          'the admin token the replicas share is revoked or expired: run `outpost token rotate-admin` with another admin token to make a new one',
        );
      writeTokenFile(file, token);
      log.info({ file }, "wrote the replicas' admin token into this data directory");
      return { token, created: false };
    }
    try {
      const made = state.transaction(() => {
        const { token } = ensureAdminToken(db, dataDir, caFingerprint);
        const sealed = key.seal(ADMIN_TOKEN_PART, token);
        const rows = store.putMissing([{ part: ADMIN_TOKEN_PART, sealed, public: parseToken(token)!.id }]);
        if (rows.find((r) => r.part === ADMIN_TOKEN_PART)?.sealed !== sealed) {
          fs.rmSync(file, { force: true });
          throw new LostRace();
        }
        return token;
      });
      return { token: made, created: true };
    } catch (err) {
      if (!(err instanceof LostRace)) throw err;
    }
  }
  throw new Error('could not settle the admin token the replicas share; start this replica again');
}

/** After `token rotate-admin` on a replica with the identity key: the others take the new token. */
export function shareRotatedAdminToken(store: IdentityStore, key: IdentityKey, token: string): void {
  store.replace({
    part: ADMIN_TOKEN_PART,
    sealed: key.seal(ADMIN_TOKEN_PART, token),
    public: parseToken(token)!.id,
  });
}

function writeTokenFile(file: string, token: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, `${token}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}
