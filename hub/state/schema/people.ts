/** The schema component `hub-people`: people_sessions (hub/state/people.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const PEOPLE_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      -- The hub's sessions of people signed in with the identity provider (hub/auth/people.ts).
      -- The session secret is stored as its sha256 only; the provider's refresh token sealed with
      -- the hub's secrets key. Never in the edges' documents.
      CREATE TABLE people_sessions (
        id TEXT PRIMARY KEY,
        secret_hash BLOB NOT NULL,
        subject TEXT NOT NULL,
        email TEXT,
        member_groups TEXT NOT NULL, -- JSON array, as of the last sign-in or refresh
        project TEXT NOT NULL,
        refresh_token TEXT,          -- sealed (hub/secrets.ts); NULL: the provider gave none
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        refresh_due INTEGER NOT NULL,
        revoked_at INTEGER,
        revoked_why TEXT
      );
      CREATE INDEX people_sessions_due ON people_sessions (refresh_due) WHERE revoked_at IS NULL;
    `,
  },
];
