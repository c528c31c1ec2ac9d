/**
 * @module The tables of hub/auth and the helpers every token kind shares: random ids and secrets,
 * sha256 hashes (a stolen database file yields no usable token), constant-time comparison.
 *
 * Each table is keyed by the token id, a non-secret lookup key; only the secret is compared, and
 * in constant time, so response timing tells an attacker nothing about how close a guess was.
 */
import crypto from 'node:crypto';
import type { Migration } from '../../sync/sqlite.js';
import { migrateTables, type SqlDb } from '../state/sql.js';

export const AUTH_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE api_tokens (
        id TEXT PRIMARY KEY,
        secret_hash BLOB NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
        project TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        revoked_at INTEGER
      );
      CREATE TABLE join_tokens (
        id TEXT PRIMARY KEY,
        secret_hash BLOB NOT NULL,
        project TEXT NOT NULL,
        labels TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        uses_limit INTEGER,
        uses INTEGER NOT NULL DEFAULT 0,
        revoked_at INTEGER
      );
      -- One credential per edge: issuing a new one replaces the row, which revokes the old one.
      CREATE TABLE edge_credentials (
        edge TEXT PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        secret_hash BLOB NOT NULL,
        created_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 2,
    sql: `
      -- The credentials of decommissioned edges, kept so the hub can tell such an edge (and only
      -- it: the secret must match) that it is decommissioned for good, not just unauthorized.
      CREATE TABLE decommissioned_credentials (
        id TEXT PRIMARY KEY,
        edge TEXT NOT NULL,
        secret_hash BLOB NOT NULL,
        decommissioned_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 3,
    // The public half of the key pair the edge made at enrollment: Secrets in its spec document
    // are sealed to it. Lives and dies with the credential (re-enrollment, decommission).
    sql: 'ALTER TABLE edge_credentials ADD COLUMN seal_key TEXT;',
  },
];

const migrated = new WeakSet<SqlDb>();

/**
 * Creates or upgrades the auth tables on SQLite; every function of hub/auth calls it, so it runs
 * once per handle (PostgreSQL is migrated at start: hub/state/sql.ts migrateTables).
 */
export function migrateAuth(db: SqlDb): void {
  if (migrated.has(db)) return;
  migrateTables(db, 'hub-auth', AUTH_MIGRATIONS);
  migrated.add(db);
}

/** A lookup key: 8 random bytes as 16 hex characters. Not secret. */
export function newId(): string {
  return crypto.randomBytes(8).toString('hex');
}

/** 32 random bytes, base64url without padding (43 characters). */
export function newSecret(): string {
  return crypto.randomBytes(32).toString('base64url');
}

export function hashSecret(secret: string): Buffer {
  return crypto.createHash('sha256').update(secret, 'utf8').digest();
}

/**
 * Compares a presented secret with a stored hash in constant time. Hashing first gives both
 * sides the same length, which timingSafeEqual requires, whatever was presented.
 */
export function secretMatches(secret: string, storedHash: Buffer): boolean {
  const presented = hashSecret(secret);
  return storedHash.length === presented.length && crypto.timingSafeEqual(presented, storedHash);
}
