/** The schema component `interconnect`: interconnect_reports (hub/state/interconnect.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const INTERCONNECT_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `CREATE TABLE interconnect_reports (
      edge TEXT PRIMARY KEY,
      body TEXT NOT NULL
    )`,
  },
];
