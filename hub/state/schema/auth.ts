/** The schema component `hub-auth`: api_tokens, join_tokens, edge_credentials, decommissioned_credentials (hub/state/auth.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

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
