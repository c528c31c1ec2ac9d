/**
 * @module Edge credentials: `ope1.<edgeName>.<id>.<secret>`, the bearer an edge presents on every
 * sync connection (docs/protocol.md). One per edge: issuing a new one (re-enrollment) replaces the
 * old one, and revoking it (decommission) makes the hub refuse the edge at the upgrade.
 */
import { PG_HANDSHAKE_GATHER } from '../../core/durations.js';
import { Gatherer, type GatherWindow } from '../../core/gather.js';
import type { EdgeName } from '../../core/ids.js';
import { edgeName } from '../../core/ids.js';
import { formatToken, parseToken } from '../../sync/pinned-ca.js';
import type { AuthTables } from '../state/auth.js';
import { hashSecret, newId, newSecret, secretMatches } from './token-secrets.js';

/**
 * Issues the edge's credential, replacing (and so revoking) any previous one, with the public key
 * the edge sealed Secrets are for (absent from agents older than sealed Secrets).
 */
export function issueEdgeCredential(db: AuthTables, edge: string, sealKey?: string, now = Date.now()): string {
  const name = edgeName(edge);
  const id = newId();
  const secret = newSecret();
  const token = formatToken('edge', name, id, secret);
  db.putEdgeCredential({ edge: name, id, secretHash: hashSecret(secret), now, sealKey: sealKey ?? null });
  return token;
}

/** The credential id a token names (undefined: malformed, nothing to read). */
function credentialId(token: string): string | undefined {
  const t = parseToken(token);
  return t && t.kind === 'edge' ? t.id : undefined;
}

/** The edge a credential belongs to; null for a replaced, revoked, unknown or malformed one. */
export function verifyEdgeCredential(db: AuthTables, token: string): { edge: EdgeName } | null {
  const t = parseToken(token);
  if (!t || t.kind !== 'edge') return null;
  const row = db.edgeCredential(t.id);
  if (!row || !secretMatches(t.secret, row.secret_hash) || row.edge !== t.edge) return null;
  return { edge: row.edge as EdgeName };
}

/**
 * `verifyEdgeCredential` for the sync upgrades: on PostgreSQL the credentials presented together
 * (core/gather.ts, PG_HANDSHAKE_GATHER) are read in one round trip (sql.ts `prefetch`); a
 * reconnect storm was one round trip per upgrade, each blocking the event loop. On SQLite each is
 * verified at once.
 */
export function edgeCredentialVerifier(
  db: AuthTables,
  gather: GatherWindow = PG_HANDSHAKE_GATHER,
): (token: string) => Promise<{ edge: EdgeName } | null> {
  if (!db.readsAhead) return (token) => Promise.resolve(verifyEdgeCredential(db, token));
  type Waiting = { token: string; done: (err: unknown, id?: { edge: EdgeName } | null) => void };
  const verifyAll = (batch: Waiting[]) => {
    try {
      db.readCredentialsAhead(batch.flatMap((w) => credentialId(w.token) ?? []));
    } catch (err) {
      for (const w of batch) w.done(err);
      return;
    }
    for (const w of batch)
      try {
        w.done(undefined, verifyEdgeCredential(db, w.token));
      } catch (err) {
        w.done(err);
      }
  };
  const waiting = new Gatherer<Waiting>(verifyAll, gather);
  return (token) =>
    new Promise((resolve, reject) => {
      waiting.add({ token, done: (err, id) => (err === undefined ? resolve(id ?? null) : reject(err as Error)) });
    });
}

/** The public key Secrets for this edge are sealed to; undefined when it has none. */
export function edgeSealKey(db: AuthTables, edge: string): string | undefined {
  return db.sealKey(edge);
}

/**
 * False if the edge had no credential. With `decommissioned`, the credential is remembered as
 * such (`decommissionedAt`), so the edge presenting it later learns it is decommissioned.
 */
export function revokeEdgeCredential(
  db: AuthTables,
  edge: string,
  opts: { decommissioned?: boolean; now?: number } = {},
): boolean {
  return db.deleteEdgeCredential(edge, opts.decommissioned ? (opts.now ?? Date.now()) : undefined);
}

/** When the edge this (valid) credential belonged to was decommissioned; undefined for any other token. */
export function decommissionedAt(db: AuthTables, token: string): number | undefined {
  const t = parseToken(token);
  if (!t || t.kind !== 'edge') return undefined;
  const row = db.decommissioned(t.id);
  if (!row || !secretMatches(t.secret, row.secret_hash) || row.edge !== t.edge) return undefined;
  return row.decommissioned_at;
}
