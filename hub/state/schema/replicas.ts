/** The schema component `hub-replicas`: hub_replicas, hub_forward_key (hub/state/replicas.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const REPLICA_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE hub_replicas (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE hub_forward_key (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL
      );
    `,
  },
  {
    version: 2,
    // When each replica last renewed its row: `outpost get replicas` shows it (issue #42).
    sql: 'ALTER TABLE hub_replicas ADD COLUMN renewed_at INTEGER;',
  },
];
