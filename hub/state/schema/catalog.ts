/** The schema component `catalog`: packages (and their charts), package_deployments, package_revisions (hub/state/catalog.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const CATALOG_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE packages (
        project TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        digest TEXT NOT NULL,
        manifest TEXT NOT NULL,
        readme TEXT,
        icon TEXT,
        published_by TEXT NOT NULL,
        published_at INTEGER NOT NULL,
        -- Pending until a scanner's verdict: Clean or Quarantined (with the signature).
        scan_state TEXT NOT NULL DEFAULT 'Pending',
        scan_signature TEXT,
        -- The scanner and its signature database version (clamd's VERSION answer), or 'none'.
        scan_engine TEXT,
        scanned_at INTEGER,
        -- Why the last attempt gave no verdict (scanner unreachable), while Pending.
        scan_error TEXT,
        PRIMARY KEY (project, name, version)
      );
      CREATE INDEX packages_pending ON packages (scan_state);
      CREATE TABLE package_deployments (
        project TEXT NOT NULL,
        placement TEXT NOT NULL,
        package TEXT NOT NULL,
        version_range TEXT NOT NULL,
        version TEXT NOT NULL,
        profile TEXT,
        input_hash TEXT NOT NULL,
        previous_version TEXT,
        resolved_at INTEGER NOT NULL,
        PRIMARY KEY (project, placement)
      );
    `,
  },
  {
    version: 2,
    // The package version each revision of a generated workload renders: an edge runs the version
    // of the revision its assignment holds (hub/catalog/runs.ts), which during a rollout is not
    // always the placement's resolved one.
    sql: `
      CREATE TABLE package_revisions (
        project TEXT NOT NULL,
        workload TEXT NOT NULL,
        revision INTEGER NOT NULL,
        version TEXT NOT NULL,
        PRIMARY KEY (project, workload, revision)
      );
    `,
  },
  {
    version: 3,
    // A version that is a Helm chart (docs/catalog.md, "Helm charts"): what the hub read of it
    // (core/chart.ts ChartInfo as JSON: its version, subcharts and their versions, values,
    // profiles, the OCI reference it was pulled from); NULL for Outpost's own packages.
    sql: `ALTER TABLE packages ADD COLUMN chart TEXT;`,
  },
];
