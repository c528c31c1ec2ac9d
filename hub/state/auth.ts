/**
 * @module The tables of hub/auth: api_tokens, join_tokens, edge_credentials and
 * decommissioned_credentials (schema: hub/state/schema/auth.ts). Rows in, rows out: what a token
 * means, how it is made and checked stays in hub/auth, which reaches these tables only through
 * `AuthTables`. Secrets are stored as sha256 hashes only; comparing them is hub/auth's.
 */
import type { Role } from '../../core/api/types.js';
import {
  all,
  forUpdate,
  isPostgres,
  keyed,
  migrateTables,
  one,
  oneOf,
  pgInJsonList,
  prefetch,
  read,
  run,
  transaction,
  type Read,
  type SqlDb,
} from './sql.js';

/** The advisory lock key under which a replica makes the first-start admin token (any constant of its own). */
const FIRST_START_ADMIN_LOCK = 0x6f7561646d; // "ouadm"

export interface ApiTokenRow {
  id: string;
  secret_hash: Buffer;
  role: Role;
  project: string;
  description: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

export interface JoinTokenRow {
  id: string;
  secret_hash: Buffer;
  project: string;
  /** JSON of the labels. */
  labels: string;
  description: string;
  created_at: number;
  expires_at: number | null;
  uses_limit: number | null;
  uses: number;
  revoked_at: number | null;
}

export interface CredentialRow {
  edge: string;
  secret_hash: Buffer;
}

export type TokenValidity = Pick<ApiTokenRow, 'id' | 'revoked_at' | 'expires_at'>;

export interface AuthTables {
  insertApiToken(r: Omit<ApiTokenRow, 'revoked_at'>): void;
  apiToken(id: string): ApiTokenRow | undefined;
  /** The validity columns of the tokens among `ids` that exist. */
  apiTokenValidity(ids: readonly string[]): TokenValidity[];
  /** Sets revoked_at unless already set; false when no such token or already revoked. */
  revokeApiToken(id: string, now: number): boolean;
  apiTokens(): ApiTokenRow[];
  /** How many live admin tokens for `project` have `description`, or a description starting with `prefix`. */
  liveAdminTokens(project: string, now: number, description: string, prefix: string): number;
  /**
   * Serializes making the first-start admin token for the rest of the enclosing transaction: on
   * PostgreSQL a transaction advisory lock (hub replicas starting at once on an empty database), on
   * SQLite nothing (one process per database).
   */
  lockFirstStartAdmin(): void;

  insertJoinToken(r: Omit<JoinTokenRow, 'uses' | 'revoked_at'>): void;
  /** The row, locked for the rest of the enclosing transaction (PostgreSQL `FOR UPDATE`). */
  lockJoinToken(id: string): JoinTokenRow | undefined;
  countJoinTokenUse(id: string): void;
  joinTokens(): JoinTokenRow[];
  revokeJoinToken(id: string, now: number): boolean;

  /** Replaces the edge's credential (one per edge). */
  putEdgeCredential(c: { edge: string; id: string; secretHash: Buffer; now: number; sealKey: string | null }): void;
  edgeCredential(id: string): CredentialRow | undefined;
  /**
   * Whether reading credentials ahead (`readCredentialsAhead`) saves round trips: true on
   * PostgreSQL, where verifying the credentials presented together is then one round trip.
   */
  readonly readsAhead: boolean;
  /** On PostgreSQL, reads the credentials of `ids` in one round trip for the next `edgeCredential`s. */
  readCredentialsAhead(ids: readonly string[]): void;
  sealKey(edge: string): string | undefined;
  /** Deletes the edge's credential, first remembering it as decommissioned at `decommissionedAt` when given. */
  deleteEdgeCredential(edge: string, decommissionedAt?: number): boolean;
  decommissioned(id: string): (CredentialRow & { decommissioned_at: number }) | undefined;

  /** One transaction (joining an open one); `immediate` takes SQLite's write lock at the start. */
  transaction<T>(fn: () => T, opts?: { immediate?: boolean }): T;
}

/** Rows per statement of apiTokenValidity (PostgreSQL takes at most 65,535 parameters). */
const VALIDITY_CHUNK = 500;

function credentialRead(id: string): Read {
  return keyed(read('SELECT edge, secret_hash FROM edge_credentials WHERE id = ?', id), 'id', id, (ids) =>
    read(`SELECT id, edge, secret_hash FROM edge_credentials WHERE ${pgInJsonList('id')}`, JSON.stringify(ids)),
  );
}

/** The auth tables of `db`, migrated on SQLite (PostgreSQL is migrated at start). */
export function sqlAuthTables(db: SqlDb): AuthTables {
  migrateTables(db, 'hub-auth');
  return {
    insertApiToken(r) {
      run(
        db,
        'INSERT INTO api_tokens (id, secret_hash, role, project, description, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        r.id,
        r.secret_hash,
        r.role,
        r.project,
        r.description,
        r.created_at,
        r.expires_at,
      );
    },
    apiToken: (id) => one<ApiTokenRow>(db, 'SELECT * FROM api_tokens WHERE id = ?', id),
    apiTokenValidity(ids) {
      const out: TokenValidity[] = [];
      for (let i = 0; i < ids.length; i += VALIDITY_CHUNK) {
        const part = ids.slice(i, i + VALIDITY_CHUNK);
        out.push(
          ...all<TokenValidity>(
            db,
            `SELECT id, revoked_at, expires_at FROM api_tokens WHERE id IN (${part.map(() => '?').join(', ')})`,
            ...part,
          ),
        );
      }
      return out;
    },
    revokeApiToken: (id, now) =>
      run(db, 'UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', now, id) === 1,
    apiTokens: () => all<ApiTokenRow>(db, 'SELECT * FROM api_tokens ORDER BY created_at, id'),
    liveAdminTokens: (project, now, description, prefix) =>
      one<{ n: number }>(
        db,
        `SELECT COUNT(*) n FROM api_tokens WHERE role = 'admin' AND project = ? AND revoked_at IS NULL
           AND (expires_at IS NULL OR expires_at > ?) AND (description = ? OR description LIKE ?)`,
        project,
        now,
        description,
        `${prefix}%`,
      )!.n,
    lockFirstStartAdmin() {
      if (isPostgres(db)) one(db, `SELECT pg_advisory_xact_lock(${FIRST_START_ADMIN_LOCK}) locked`);
    },

    insertJoinToken(r) {
      run(
        db,
        'INSERT INTO join_tokens (id, secret_hash, project, labels, description, created_at, expires_at, uses_limit) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        r.id,
        r.secret_hash,
        r.project,
        r.labels,
        r.description,
        r.created_at,
        r.expires_at,
        r.uses_limit,
      );
    },
    lockJoinToken: (id) => one<JoinTokenRow>(db, `SELECT * FROM join_tokens WHERE id = ?${forUpdate(db)}`, id),
    countJoinTokenUse: (id) => void run(db, 'UPDATE join_tokens SET uses = uses + 1 WHERE id = ?', id),
    joinTokens: () => all<JoinTokenRow>(db, 'SELECT * FROM join_tokens ORDER BY created_at, id'),
    revokeJoinToken: (id, now) =>
      run(db, 'UPDATE join_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', now, id) === 1,

    putEdgeCredential(c) {
      run(
        db,
        `INSERT INTO edge_credentials (edge, id, secret_hash, created_at, seal_key) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(edge) DO UPDATE SET id = excluded.id, secret_hash = excluded.secret_hash, created_at = excluded.created_at, seal_key = excluded.seal_key`,
        c.edge,
        c.id,
        c.secretHash,
        c.now,
        c.sealKey,
      );
    },
    edgeCredential: (id) => oneOf<CredentialRow>(db, credentialRead(id)),
    readsAhead: isPostgres(db),
    readCredentialsAhead: (ids) => prefetch(db, ids.map(credentialRead)),
    sealKey: (edge) =>
      one<{ seal_key: string | null }>(db, 'SELECT seal_key FROM edge_credentials WHERE edge = ?', edge)?.seal_key ??
      undefined,
    deleteEdgeCredential(edge, decommissionedAt) {
      if (decommissionedAt !== undefined)
        run(
          db,
          `INSERT INTO decommissioned_credentials (id, edge, secret_hash, decommissioned_at)
           SELECT id, edge, secret_hash, ? FROM edge_credentials WHERE edge = ?
           ON CONFLICT (id) DO UPDATE SET edge = excluded.edge, secret_hash = excluded.secret_hash, decommissioned_at = excluded.decommissioned_at`,
          decommissionedAt,
          edge,
        );
      return run(db, 'DELETE FROM edge_credentials WHERE edge = ?', edge) === 1;
    },
    decommissioned: (id) =>
      one<CredentialRow & { decommissioned_at: number }>(
        db,
        'SELECT edge, secret_hash, decommissioned_at FROM decommissioned_credentials WHERE id = ?',
        id,
      ),

    transaction: (fn, opts) => transaction(db, fn, opts),
  };
}
