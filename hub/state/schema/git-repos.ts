/** The schema component `git-repos`: git_repo_status (hub/state/git-repos.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const GIT_REPO_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE git_repo_status (
        project TEXT NOT NULL,
        name TEXT NOT NULL,
        -- The commit whose objects are applied, and when (ms since the epoch).
        applied_commit TEXT,
        applied_at INTEGER,
        -- The GitRepo's paths it was applied with: other paths apply again, even at the same commit.
        applied_paths TEXT,
        -- The last fetch: the head it found, when, and why it failed (NULL when it did not).
        head TEXT,
        fetched_at INTEGER,
        fetch_error TEXT,
        -- The commit that could not be applied and why (JSON GitRepoSyncError[]); NULL when none.
        failed_commit TEXT,
        sync_errors TEXT,
        -- The objects the applied commit owns (JSON OwnedObject[]).
        owned TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (project, name)
      );
    `,
  },
];
