/**
 * @module Every migration of the hub's tables, one file per schema component (the name each
 * database records its version under, in `schema_versions`). On SQLite each owning module
 * migrates its own component as it opens (hub/state/sql.ts `migrateTables`), as hub files of
 * earlier versions expect; on PostgreSQL all of them are applied at start, under one advisory lock
 * (hub/state/pg/schema.ts `migratePostgres`); `hub migrate` copies every one (pg/from-sqlite.ts).
 * Components and versions are recorded in databases: never rename, renumber or edit one shipped.
 */
import { buildInfo } from '../../../core/version.js';
import { migrate, type Migration, type SqliteDatabase } from '../../../sync/sqlite.js';
import { AGENT_UPGRADE_MIGRATIONS } from './agent-upgrades.js';
import { AUTH_MIGRATIONS } from './auth.js';
import { BLOB_MIGRATIONS } from './blobs.js';
import { CATALOG_MIGRATIONS } from './catalog.js';
import { CLUSTER_MIGRATIONS } from './clusters.js';
import { DATA_FILE_MIGRATIONS } from './data-files.js';
import { GIT_REPO_MIGRATIONS } from './git-repos.js';
import { HUB_MIGRATIONS } from './hub.js';
import { IDENTITY_MIGRATIONS } from './identity.js';
import { IMAGE_PIN_MIGRATIONS } from './image-pins.js';
import { IMAGE_MIGRATIONS } from './image-tags.js';
import { INTERCONNECT_MIGRATIONS } from './interconnect.js';
import { KUBE_API_MIGRATIONS } from './kube-api.js';
import { LEASE_MIGRATIONS } from './leases.js';
import { PEOPLE_MIGRATIONS } from './people.js';
import { PROJECT_MIGRATIONS } from './projects.js';
import { PROXY_SESSION_MIGRATIONS } from './proxy-sessions.js';
import { REPLICA_MIGRATIONS } from './replicas.js';

export { HUB_MIGRATIONS };

/** Every schema component, in the order PostgreSQL and `hub migrate` apply them. */
const SCHEMAS = {
  hub: HUB_MIGRATIONS,
  'hub-auth': AUTH_MIGRATIONS,
  'hub-tunnel': PROXY_SESSION_MIGRATIONS,
  blobs: BLOB_MIGRATIONS,
  'data-files': DATA_FILE_MIGRATIONS,
  catalog: CATALOG_MIGRATIONS,
  images: IMAGE_MIGRATIONS,
  'image-pins': IMAGE_PIN_MIGRATIONS,
  'hub-leases': LEASE_MIGRATIONS,
  'hub-identity': IDENTITY_MIGRATIONS,
  'hub-replicas': REPLICA_MIGRATIONS,
  'agent-upgrades': AGENT_UPGRADE_MIGRATIONS,
  'git-repos': GIT_REPO_MIGRATIONS,
  'kube-api': KUBE_API_MIGRATIONS,
  interconnect: INTERCONNECT_MIGRATIONS,
  clusters: CLUSTER_MIGRATIONS,
  'hub-people': PEOPLE_MIGRATIONS,
  // Last: its first migration reads the tables above that name projects.
  projects: PROJECT_MIGRATIONS,
} satisfies Record<string, Migration[]>;

export type SchemaComponent = keyof typeof SCHEMAS;

export function migrationsOf(component: SchemaComponent): Migration[] {
  return SCHEMAS[component];
}

/** Every table group of the hub with its migrations, by schema component. */
export function hubSchemas(): { component: SchemaComponent; migrations: Migration[] }[] {
  return (Object.keys(SCHEMAS) as SchemaComponent[]).map((component) => ({
    component,
    migrations: SCHEMAS[component],
  }));
}

/** The `hub` component on a SQLite file (the other components migrate as their owners open). */
export function migrateHub(db: SqliteDatabase): void {
  migrate(db, 'hub', HUB_MIGRATIONS, buildInfo().version);
}
