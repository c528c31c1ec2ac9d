/** The schema component `image-pins`: image_pins (hub/state/image-pins.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const IMAGE_PIN_MIGRATIONS: Migration[] = [
  {
    version: 1,
    // IF NOT EXISTS: the first hubs with pins made the table without a version row.
    sql: `CREATE TABLE IF NOT EXISTS image_pins (
      project TEXT NOT NULL,
      workload TEXT NOT NULL,
      revision INTEGER NOT NULL,
      image TEXT NOT NULL,
      digest TEXT NOT NULL,
      resolved_at TEXT NOT NULL,
      PRIMARY KEY (project, workload, revision, image)
    )`,
  },
];
