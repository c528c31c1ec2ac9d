/**
 * @module The hub's state: one module per table group, each the only code that runs SQL against
 * its tables, each behind a small interface so a second implementation (PostgreSQL, issue #22)
 * can be added without touching its callers.
 *
 * | module | tables |
 * |---|---|
 * | objects.ts | objects, workload_revisions, counters |
 * | assignments.ts | assignments, spec_written, rollouts (the scheduler's; their types in assignment-types.ts) |
 * | edges.ts | edge_runtime |
 * | connections.ts | connections (an edge's connections, the hub replica that served each, why each ended) |
 * | events.ts | events |
 * | status.ts | workload_status (and the joined status reads) |
 * | data-progress.ts | data_progress (the DataObject deliveries edges report) |
 * | agent-upgrades.ts | agent_upgrade_orders, agent_upgrade_progress, agent_upgrade_outcomes (AgentUpgrade rollouts and their history) |
 * | image-staging.ts | staging_orders, staging_reports (image pre-staging) |
 * | blobs.ts | blobs, blob_refs |
 * | data-files.ts | data_files |
 * | kube-api.ts | kube_watch_events, kube_managed_fields (the Kubernetes API's watches and server-side apply) |
 * | ../auth/ | api_tokens, join_tokens, edge_credentials, decommissioned_credentials (hub/auth/schema.ts) |
 * | leases.ts | edge_leases (hub processes sharing a PostgreSQL) |
 * | identity.ts | hub_identity (the sealed identity hub processes sharing a PostgreSQL share) |
 * | replicas.ts | hub_replicas, hub_forward_key (the replicas' URLs; the key forwarded tunnel requests are signed with) |
 * | ../tunnel/proxy-session.ts | tunnel_proxy_sessions |
 * | ../catalog/state.ts | packages, package_deployments |
 * | ../images/cache.ts, ../images/pins.ts | image_tags; image_pins |
 * | ../db.ts | the schema of the hub's tables (migrations only, no reads or writes) |
 *
 * test/architecture.test.ts fails when a table is written anywhere else. Every module above runs
 * on SQLite or PostgreSQL (hub/state/sql.ts `SqlDb`), each tested by one shared suite on both.
 */
import { errorMessage } from '../../core/errors.js';
import { inTransaction, type SqliteDatabase } from '../../sync/sqlite.js';
import { specInputsRead } from './assignments.js';
import { edgeReads, sqlEdgeState, type EdgeState } from './edges.js';
import type { SyncPostgres } from './pg/sync-client.js';
import { lastEventRead, sqlEventLog, type EventLog } from './events.js';
import { objectListRead, sqlObjectState, type ObjectState } from './objects.js';
import { isPostgres, prefetch, type SqlDb } from './sql.js';
import { sqlStatusState, type StatusState } from './status.js';
import { sqlDataProgressState, type DataProgressState } from './data-progress.js';
import { sqlAgentUpgradeRollouts, upgradeOrderRead, type AgentUpgradeRollouts } from './agent-upgrades.js';
import { sqlImageStagingState, stagingOrdersRead, type ImageStagingState } from './image-staging.js';

/**
 * Per database, the project of each edge as last read: a hint that lets `prefetchHandshake` give
 * the reads that need the project in its one round trip (a stale hint only makes them miss; each
 * read still runs with the project its owner reads). Filled from one read of every edge at the
 * first handshake, so a restarted replica's storm has it too.
 */
const projectHints = new WeakMap<SyncPostgres, Map<string, string>>();

/**
 * On PostgreSQL, the reads the handshakes of edges answered together (one turn's hellos,
 * sync/server.ts `answerHellos`) make on a hub replica, given ahead in one round trip (two when
 * some edge's project was not known) instead of one each: the spec check
 * (hub/scheduler/spec-writer.ts), the data, upgrade and staging orders (`writeEdge` of
 * hub/data/delivery.ts, hub/upgrades/controller.ts, hub/images/staging.ts) and the connection
 * history (hub/edges/history.ts `recordConnects`). A handshake that reads something else, or the
 * same with other parameters, simply runs that read. Nothing on SQLite. test/hub-state-postgres.test.ts
 * counts the round trips.
 */
export function prefetchHandshakes(db: SqlDb, edges: string[]): void {
  if (!isPostgres(db) || !edges.length) return;
  const hints = projectHintsOf(db);
  const ofProject = (edge: string, project: string) => [
    objectListRead('DataObject', project),
    lastEventRead(project, 'Edge', edge),
  ];
  prefetch(
    db,
    edges.flatMap((edge) => {
      const hint = hints.get(edge);
      return [
        edgeReads.enrolledLabels(db, [edge]),
        specInputsRead(db, [edge]),
        edgeReads.runtime(edge),
        edgeReads.project(edge),
        upgradeOrderRead(edge),
        stagingOrdersRead(edge),
        ...(hint === undefined ? [] : ofProject(edge, hint)),
      ];
    }),
  );
  const missed: ReturnType<typeof ofProject> = [];
  const state = sqlEdgeState(db);
  for (const edge of edges) {
    const project = state.projectOf(edge);
    const hint = hints.get(edge);
    if (project === undefined) hints.delete(edge);
    else if (project !== hint) {
      hints.set(edge, project);
      missed.push(...ofProject(edge, project));
    }
  }
  if (missed.length) prefetch(db, missed);
}

/**
 * On PostgreSQL, what recording edges' disconnections reads (hub/edges/history.ts
 * `recordDisconnects`: each one's project and last event), given ahead in one round trip for all
 * of them whose project is known. Nothing on SQLite.
 */
export function prefetchDisconnects(db: SqlDb, edges: readonly string[]): void {
  if (!isPostgres(db)) return;
  const hints = projectHintsOf(db);
  prefetch(
    db,
    edges.flatMap((edge) => {
      const hint = hints.get(edge);
      return hint === undefined ? [] : [edgeReads.project(edge), lastEventRead(hint, 'Edge', edge)];
    }),
  );
}

function projectHintsOf(db: SyncPostgres): Map<string, string> {
  let hints = projectHints.get(db);
  if (!hints) {
    hints = sqlEdgeState(db).projectsByEdge();
    projectHints.set(db, hints);
  }
  return hints;
}

export interface HubState {
  objects: ObjectState;
  edges: EdgeState;
  events: EventLog;
  status: StatusState;
  dataProgress: DataProgressState;
  agentUpgrades: AgentUpgradeRollouts;
  imageStaging: ImageStagingState;
  /**
   * Runs `fn` in one transaction, joining an open one (every write of the hub's state is one).
   * `immediate` takes the write lock at the start: for a read-then-write another process may race.
   */
  transaction<T>(fn: () => T, opts?: { immediate?: boolean }): T;
}

/**
 * The same state on PostgreSQL (issue #22, in progress: these four modules so far; the database
 * migrated with hub/state/pg/schema.ts `migratePostgres`).
 */
export function postgresHubState(pg: SyncPostgres): HubState {
  return {
    objects: sqlObjectState(pg),
    edges: sqlEdgeState(pg),
    events: sqlEventLog(pg),
    status: sqlStatusState(pg),
    dataProgress: sqlDataProgressState(pg),
    agentUpgrades: sqlAgentUpgradeRollouts(pg),
    imageStaging: sqlImageStagingState(pg),
    transaction: (fn) => pg.transaction(fn),
  };
}

export function sqliteHubState(db: SqliteDatabase): HubState {
  return {
    objects: sqlObjectState(db),
    edges: sqlEdgeState(db),
    events: sqlEventLog(db),
    status: sqlStatusState(db),
    dataProgress: sqlDataProgressState(db),
    agentUpgrades: sqlAgentUpgradeRollouts(db),
    imageStaging: sqlImageStagingState(db),
    transaction: (fn, opts) =>
      opts?.immediate && !db.inTransaction ? db.transaction(fn).immediate() : inTransaction(db, fn),
  };
}

/** Why the hub's tables cannot be reached now (for /readyz); undefined when they can. */
export function databaseUnready(db: SqlDb): string | undefined {
  // SQLite is a file of this process: ready while the process runs. PostgreSQL may be away.
  if (!isPostgres(db)) return undefined;
  try {
    db.one('SELECT 1');
    return undefined;
  } catch (err) {
    return errorMessage(err);
  }
}
