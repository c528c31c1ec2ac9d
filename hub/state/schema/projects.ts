/**
 * The schema component `projects`: projects (hub/state/projects.ts). Never renumber or edit a shipped
 * migration. Applied after the components whose tables name projects: version 1 makes a Project of
 * every project an existing hub knows (named by its objects, tokens, blobs or packages) and of
 * `default`, without quotas, so nothing changes for them.
 */
import type { Migration } from '../../../sync/sqlite.js';

export const PROJECT_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE projects (
        name TEXT PRIMARY KEY,
        uid TEXT NOT NULL,
        labels TEXT NOT NULL DEFAULT '{}',
        annotations TEXT NOT NULL DEFAULT '{}',
        -- The ProjectSpec (JSON): description, quotas, default rollout, members.
        spec TEXT NOT NULL DEFAULT '{"quotas":{},"members":[]}',
        resource_version INTEGER NOT NULL DEFAULT 1,
        generation INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL,
        -- Set when its deletion was asked for (JSON {by, at, moveEdgesTo?}): the hub resumes it at start.
        deletion TEXT
      );
      INSERT INTO projects (name, uid, created_at)
        SELECT t.p, 'migrated-' || t.p,
          COALESCE((SELECT MIN(o.created_at) FROM objects o WHERE o.project = t.p), '1970-01-01T00:00:00.000Z')
        FROM (
          SELECT project AS p FROM objects
          UNION SELECT project FROM api_tokens WHERE project <> '*'
          UNION SELECT project FROM join_tokens
          UNION SELECT project FROM blobs
          UNION SELECT project FROM packages
          UNION SELECT 'default'
        ) t;
    `,
  },
];
