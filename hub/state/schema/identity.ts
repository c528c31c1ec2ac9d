/** The schema component `hub-identity`: hub_identity (hub/state/identity.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const IDENTITY_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE hub_identity (
        part TEXT PRIMARY KEY,
        sealed TEXT NOT NULL,
        public TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
    `,
  },
];
