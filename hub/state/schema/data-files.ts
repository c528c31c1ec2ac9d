/** The schema component `data-files`: data_files (hub/state/data-files.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const DATA_FILE_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE data_files (
        project TEXT NOT NULL,
        edge TEXT NOT NULL,
        workload TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        digest TEXT NOT NULL,
        modified_at INTEGER NOT NULL,
        uploaded_at INTEGER NOT NULL,
        PRIMARY KEY (project, edge, workload, path)
      );
    `,
  },
  {
    version: 2,
    sql: `
      -- The digest the S3 sink last forwarded for this path (hub/data/s3-sink.ts); NULL: not yet.
      ALTER TABLE data_files ADD COLUMN sink_digest TEXT;
      CREATE INDEX data_files_unsunk ON data_files (uploaded_at) WHERE sink_digest IS NULL OR sink_digest != digest;
    `,
  },
];
