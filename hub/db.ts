/**
 * @module The hub's own tables, in the same SQLite file as its replica store (one file per process):
 * objects (Edge, Workload, Placement with resourceVersion), workload revisions, edge runtime facts
 * (enrollment, last seen: never in a document), per-edge assignments written by the scheduler,
 * the status projection of report documents, and events.
 */
import type { Migration, SqliteDatabase } from '../sync/sqlite.js';
import { migrate } from '../sync/sqlite.js';
import { buildInfo } from '../core/version.js';
import { AUTH_MIGRATIONS } from './auth/schema.js';
import { AGENT_UPGRADE_MIGRATIONS } from './state/agent-upgrades.js';
import { CATALOG_MIGRATIONS } from './catalog/state.js';
import { IMAGE_MIGRATIONS } from './images/cache.js';
import { IMAGE_PIN_MIGRATIONS } from './images/pins.js';
import { IDENTITY_MIGRATIONS } from './state/identity.js';
import { LEASE_MIGRATIONS } from './state/leases.js';
import { REPLICA_MIGRATIONS } from './state/replicas.js';
import { BLOB_MIGRATIONS } from './state/blobs.js';
import { DATA_FILE_MIGRATIONS } from './state/data-files.js';
import { PROXY_SESSION_MIGRATIONS } from './tunnel/proxy-session.js';
import { KUBE_API_MIGRATIONS } from './state/kube-api.js';

export const HUB_MIGRATIONS = [
  {
    version: 1,
    sql: `
      CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
      INSERT INTO counters (name, value) VALUES ('resourceVersion', 0);

      CREATE TABLE objects (
        kind TEXT NOT NULL,
        project TEXT NOT NULL,
        name TEXT NOT NULL,
        uid TEXT NOT NULL,
        resource_version INTEGER NOT NULL,
        generation INTEGER NOT NULL,
        labels TEXT NOT NULL,
        annotations TEXT NOT NULL,
        spec TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (kind, project, name)
      );

      CREATE TABLE workload_revisions (
        project TEXT NOT NULL,
        workload TEXT NOT NULL,
        revision INTEGER NOT NULL,
        manifests TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (project, workload, revision)
      );

      -- Runtime facts about an edge that change without an operator: not part of its resourceVersion.
      CREATE TABLE edge_runtime (
        name TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        approved INTEGER NOT NULL,
        enrolled_at INTEGER NOT NULL,
        last_seen INTEGER,
        connected_since INTEGER,
        disconnected_at INTEGER,
        agent_version TEXT,
        remote_address TEXT,
        inventory TEXT
      );

      -- What the scheduler has written into each edge's spec document, per workload.
      CREATE TABLE assignments (
        edge TEXT NOT NULL,
        workload TEXT NOT NULL,
        project TEXT NOT NULL,
        placement TEXT NOT NULL,
        revision INTEGER NOT NULL,
        content_key TEXT NOT NULL,
        generation INTEGER NOT NULL,
        manifests TEXT NOT NULL,
        error TEXT,
        PRIMARY KEY (edge, workload)
      );
      CREATE INDEX assignments_by_placement ON assignments (project, placement);

      -- Projection of report documents (updated in the same transaction as the sync message).
      CREATE TABLE workload_status (
        edge TEXT NOT NULL,
        workload TEXT NOT NULL,
        observed_generation INTEGER NOT NULL,
        phase TEXT NOT NULL,
        message TEXT,
        since INTEGER NOT NULL,
        restarts INTEGER NOT NULL,
        objects TEXT NOT NULL,
        PRIMARY KEY (edge, workload)
      );

      -- Rollout state per placement: failures the operator acknowledged by resuming.
      CREATE TABLE rollouts (
        project TEXT NOT NULL,
        placement TEXT NOT NULL,
        phase TEXT NOT NULL,
        reason TEXT NOT NULL,
        acknowledged TEXT NOT NULL DEFAULT '[]',
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (project, placement)
      );

      CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        project TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        reason TEXT NOT NULL,
        message TEXT NOT NULL
      );
      CREATE INDEX events_by_object ON events (project, kind, name, id);

      -- Connection history per edge (online/offline transitions), bounded by pruning.
      CREATE TABLE connections (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        edge TEXT NOT NULL,
        connected_at INTEGER NOT NULL,
        disconnected_at INTEGER,
        reason TEXT,
        remote_address TEXT
      );
      CREATE INDEX connections_by_edge ON connections (edge, id);
    `,
  },
  {
    version: 2,
    sql: `
      -- What the scheduler last wrote into each spec document (a digest of labels and assignments),
      -- written in the same transaction as the change: an unchanged spec is never loaded again.
      CREATE TABLE spec_written (
        edge TEXT PRIMARY KEY,
        epoch TEXT NOT NULL,
        digest TEXT NOT NULL
      );
    `,
  },
  {
    version: 3,
    // Edge names are unique across projects, and the scheduler looks an edge's labels up by name
    // alone: without this index each lookup scanned every Edge object (0.6 ms per spec write at
    // 10,000 edges, 6 s of a fleet-wide change).
    sql: 'CREATE INDEX objects_by_kind_name ON objects (kind, name);',
  },
  {
    version: 4,
    // Why each workload revision was made (`rollout history --revision N`): the workload's
    // outpost.dev/change-cause annotation, else who applied it or what it was rolled back to.
    sql: 'ALTER TABLE workload_revisions ADD COLUMN change_cause TEXT;',
  },
  {
    version: 5,
    // The labels derived from the inventory (core/inventory.ts inventoryLabels), kept next to it so
    // scheduling reads a small JSON object instead of parsing every inventory.
    sql: 'ALTER TABLE edge_runtime ADD COLUMN inventory_labels TEXT;',
  },
  {
    version: 6,
    // A rollout's counts and maxUnavailable (JSON) next to its phase: hub replicas that do not plan
    // show what the planning one decided (hub/replicas/).
    sql: 'ALTER TABLE rollouts ADD COLUMN progress TEXT;',
  },
  {
    version: 7,
    // Projection of the DataObject deliveries in report documents (hub/state/data-progress.ts): each
    // replica holds only the reports of the edges it serves, and every one shows the whole fleet.
    sql: `
      CREATE TABLE data_progress (
        edge TEXT NOT NULL,
        name TEXT NOT NULL,
        progress TEXT NOT NULL,
        PRIMARY KEY (edge, name)
      );
      CREATE INDEX data_progress_by_name ON data_progress (name);
    `,
  },
  {
    version: 8,
    // AgentUpgrade rollouts in tables (hub/state/agent-upgrades.ts): the order the planner gave
    // each edge, and the projection of the upgrade progress edges report, so one planner counts
    // the whole fleet whichever replica serves an edge.
    sql: `
      CREATE TABLE agent_upgrade_orders (
        edge TEXT PRIMARY KEY,
        upgrade TEXT NOT NULL,
        body TEXT NOT NULL
      );
      CREATE TABLE agent_upgrade_progress (
        edge TEXT PRIMARY KEY,
        body TEXT NOT NULL
      );
    `,
  },
  {
    version: 9,
    // Image pre-staging in tables (hub/state/image-staging.ts): what each placement asks each edge
    // to stage, and the projection of what edges report staged, so the planning replica's gate
    // and every replica's API see the whole fleet.
    sql: `
      CREATE TABLE staging_orders (
        edge TEXT NOT NULL,
        placement TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (edge, placement)
      );
      CREATE INDEX staging_orders_by_placement ON staging_orders (placement);
      CREATE TABLE staging_reports (
        edge TEXT PRIMARY KEY,
        body TEXT NOT NULL
      );
    `,
  },
  {
    version: 10,
    // The version (a hash of the images) of the placement an edge last had an OverBudget event
    // for (hub/images/staging.ts noteOverBudget): one event per edge, placement and version.
    sql: 'ALTER TABLE staging_orders ADD COLUMN over_budget TEXT;',
  },
  {
    version: 11,
    // Which hub replica serves each connection (issue #42): history names it, a replica that stops
    // ends only its own connections, and the open ones a dead replica left are found by index.
    // `connection` names one connection, so a late close of an older one leaves a newer alone.
    sql: `
      ALTER TABLE connections ADD COLUMN replica TEXT;
      ALTER TABLE connections ADD COLUMN connection TEXT;
      ALTER TABLE edge_runtime ADD COLUMN replica TEXT;
      ALTER TABLE edge_runtime ADD COLUMN connection TEXT;
      CREATE INDEX connections_open ON connections (replica) WHERE disconnected_at IS NULL;
    `,
  },
  {
    version: 12,
    // The edge an event of another object is about (issue #42: an AgentUpgrade ordering it, its
    // switch running or rolled back), so the edge's events list them (hub/state/events.ts).
    sql: `
      ALTER TABLE events ADD COLUMN edge TEXT;
      CREATE INDEX events_by_edge ON events (project, edge, id) WHERE edge IS NOT NULL;
    `,
  },
];

export function migrateHub(db: SqliteDatabase): void {
  migrate(db, 'hub', HUB_MIGRATIONS, buildInfo().version);
}

/**
 * Every table group of the hub with its migrations, by schema component: on SQLite each owner
 * migrates its own as it opens (hub/state/sql.ts migrateTables); on PostgreSQL all of them are
 * applied at start, under one advisory lock (hub/state/pg/schema.ts migratePostgres).
 */
export function hubSchemas(): { component: string; migrations: Migration[] }[] {
  return [
    { component: 'hub', migrations: HUB_MIGRATIONS },
    { component: 'hub-auth', migrations: AUTH_MIGRATIONS },
    { component: 'hub-tunnel', migrations: PROXY_SESSION_MIGRATIONS },
    { component: 'blobs', migrations: BLOB_MIGRATIONS },
    { component: 'data-files', migrations: DATA_FILE_MIGRATIONS },
    { component: 'catalog', migrations: CATALOG_MIGRATIONS },
    { component: 'images', migrations: IMAGE_MIGRATIONS },
    { component: 'image-pins', migrations: IMAGE_PIN_MIGRATIONS },
    { component: 'hub-leases', migrations: LEASE_MIGRATIONS },
    { component: 'hub-identity', migrations: IDENTITY_MIGRATIONS },
    { component: 'hub-replicas', migrations: REPLICA_MIGRATIONS },
    { component: 'agent-upgrades', migrations: AGENT_UPGRADE_MIGRATIONS },
    { component: 'kube-api', migrations: KUBE_API_MIGRATIONS },
  ];
}
