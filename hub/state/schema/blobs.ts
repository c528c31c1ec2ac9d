/** The schema component `blobs`: blobs, blob_refs, blob_reservations (hub/state/blobs.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const BLOB_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE blobs (
        project TEXT NOT NULL,
        digest TEXT NOT NULL,
        size INTEGER NOT NULL,
        media_type TEXT NOT NULL,
        uploaded_by TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        -- NULL while something refers to it; else since when nothing does (GC after the grace period).
        unreferenced_since INTEGER,
        PRIMARY KEY (project, digest)
      );
      CREATE INDEX blobs_by_digest ON blobs (digest);
      CREATE TABLE blob_refs (
        project TEXT NOT NULL,
        digest TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        PRIMARY KEY (project, digest, kind, name)
      );
      CREATE INDEX blob_refs_by_owner ON blob_refs (project, kind, name);
    `,
  },
  {
    version: 2,
    sql: `
      CREATE TABLE blob_reservations (
        id TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX blob_reservations_by_project ON blob_reservations (project);
    `,
  },
  {
    // The malware scanner's verdict on a blob scanned before use (an agent release: hub/upgrades/releases.ts).
    version: 3,
    sql: `ALTER TABLE blobs ADD COLUMN scan TEXT;`,
  },
];
