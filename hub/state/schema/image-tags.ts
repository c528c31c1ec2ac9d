/** The schema component `images`: image_tags (hub/state/image-tags.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const IMAGE_MIGRATIONS: Migration[] = [
  {
    version: 1,
    // IF NOT EXISTS: hubs before schema versions for this table made it without a version row.
    sql: `CREATE TABLE IF NOT EXISTS image_tags (
      project TEXT NOT NULL,
      repository TEXT NOT NULL,
      tag TEXT NOT NULL,
      digest TEXT NOT NULL,
      media_type TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      PRIMARY KEY (project, repository, tag)
    )`,
  },
];
