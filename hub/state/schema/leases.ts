/** The schema component `hub-leases`: edge_leases (hub/state/leases.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const LEASE_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE edge_leases (
        edge TEXT PRIMARY KEY,
        replica TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        taken_at INTEGER NOT NULL
      );
    `,
  },
];
