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
import {
  isPostgres,
  keyed,
  one,
  oneOf,
  pgInJsonList,
  prefetch,
  read,
  run,
  type Read,
  type SqlDb,
} from '../state/sql.js';
import { hashSecret, migrateAuth, newId, newSecret, secretMatches } from './schema.js';

/**
 * Issues the edge's credential, replacing (and so revoking) any previous one, with the public key
 * the edge sealed Secrets are for (absent from agents older than sealed Secrets).
 */
export function issueEdgeCredential(db: SqlDb, edge: string, sealKey?: string, now = Date.now()): string {
  migrateAuth(db);
  const name = edgeName(edge);
  const id = newId();
  const secret = newSecret();
  const token = formatToken('edge', name, id, secret);
  run(
    db,
    `INSERT INTO edge_credentials (edge, id, secret_hash, created_at, seal_key) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT(edge) DO UPDATE SET id = excluded.id, secret_hash = excluded.secret_hash, created_at = excluded.created_at, seal_key = excluded.seal_key`,
    name,
    id,
    hashSecret(secret),
    now,
    sealKey ?? null,
  );
  return token;
}

/** The read `verifyEdgeCredential` makes for a token (undefined: malformed, nothing to read). */
function credentialRead(token: string): Read | undefined {
  const t = parseToken(token);
  if (!t || t.kind !== 'edge') return undefined;
  return keyed(read('SELECT edge, secret_hash FROM edge_credentials WHERE id = ?', t.id), 'id', t.id, (ids) =>
    read(`SELECT id, edge, secret_hash FROM edge_credentials WHERE ${pgInJsonList('id')}`, JSON.stringify(ids)),
  );
}

/** The edge a credential belongs to; null for a replaced, revoked, unknown or malformed one. */
export function verifyEdgeCredential(db: SqlDb, token: string): { edge: EdgeName } | null {
  migrateAuth(db);
  const t = parseToken(token);
  const r = credentialRead(token);
  if (!t || !r) return null;
  const row = oneOf<{ edge: string; secret_hash: Buffer }>(db, r);
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
  db: SqlDb,
  gather: GatherWindow = PG_HANDSHAKE_GATHER,
): (token: string) => Promise<{ edge: EdgeName } | null> {
  if (!isPostgres(db)) return (token) => Promise.resolve(verifyEdgeCredential(db, token));
  type Waiting = { token: string; done: (err: unknown, id?: { edge: EdgeName } | null) => void };
  const verifyAll = (batch: Waiting[]) => {
    try {
      prefetch(
        db,
        batch.flatMap((w) => credentialRead(w.token) ?? []),
      );
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
export function edgeSealKey(db: SqlDb, edge: string): string | undefined {
  migrateAuth(db);
  const row = one<{ seal_key: string | null }>(db, 'SELECT seal_key FROM edge_credentials WHERE edge = ?', edge);
  return row?.seal_key ?? undefined;
}

/**
 * False if the edge had no credential. With `decommissioned`, the credential is remembered as
 * such (`decommissionedAt`), so the edge presenting it later learns it is decommissioned.
 */
export function revokeEdgeCredential(
  db: SqlDb,
  edge: string,
  opts: { decommissioned?: boolean; now?: number } = {},
): boolean {
  migrateAuth(db);
  if (opts.decommissioned)
    run(
      db,
      `INSERT INTO decommissioned_credentials (id, edge, secret_hash, decommissioned_at)
       SELECT id, edge, secret_hash, ? FROM edge_credentials WHERE edge = ?
       ON CONFLICT (id) DO UPDATE SET edge = excluded.edge, secret_hash = excluded.secret_hash, decommissioned_at = excluded.decommissioned_at`,
      opts.now ?? Date.now(),
      edge,
    );
  return run(db, 'DELETE FROM edge_credentials WHERE edge = ?', edge) === 1;
}

/** When the edge this (valid) credential belonged to was decommissioned; undefined for any other token. */
export function decommissionedAt(db: SqlDb, token: string): number | undefined {
  migrateAuth(db);
  const t = parseToken(token);
  if (!t || t.kind !== 'edge') return undefined;
  const row = one<{ edge: string; secret_hash: Buffer; decommissioned_at: number }>(
    db,
    'SELECT edge, secret_hash, decommissioned_at FROM decommissioned_credentials WHERE id = ?',
    t.id,
  );
  if (!row || !secretMatches(t.secret, row.secret_hash) || row.edge !== t.edge) return undefined;
  return row.decommissioned_at;
}
