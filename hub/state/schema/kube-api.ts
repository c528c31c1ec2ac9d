/** The schema component `kube-api`: kube_watch_events, kube_managed_fields (hub/state/kube-api.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const KUBE_API_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE kube_watch_events (
        rv BIGINT PRIMARY KEY,
        -- ADDED, MODIFIED, DELETED, or Compacted (the marker of the oldest kept).
        type TEXT NOT NULL,
        kind TEXT NOT NULL,
        project TEXT NOT NULL,
        name TEXT NOT NULL,
        object TEXT
      );
      CREATE TABLE kube_managed_fields (
        kind TEXT NOT NULL,
        project TEXT NOT NULL,
        name TEXT NOT NULL,
        fields TEXT NOT NULL,
        PRIMARY KEY (kind, project, name)
      );
    `,
  },
];
