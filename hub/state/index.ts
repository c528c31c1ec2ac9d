/**
 * @module The hub's state: one module per table group, each the only code that runs SQL against
 * its tables, each behind a small interface, all of them members of `HubState`: the one door into
 * the hub's tables. Nothing outside hub/state/ holds the database (test/architecture.test.ts).
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
 * | blobs.ts | blobs, blob_refs, blob_reservations |
 * | data-files.ts | data_files |
 * | git-repos.ts | git_repo_status (what syncing each GitRepo learned) |
 * | projects.ts | projects (the Project objects and their recorded deletions: hub/projects/) |
 * | clusters.ts | cluster_template_versions, cluster_hosts, cluster_pki, cluster_nodes, cluster_deletions (clusters at the sites) |
 * | auth.ts | api_tokens, join_tokens, edge_credentials, decommissioned_credentials (the rules: hub/auth/) |
 * | people.ts | people_sessions (the hub's sessions of people signed in with the identity provider; the rules: hub/auth/people.ts) |
 * | kube-api.ts | kube_watch_events, kube_managed_fields (the Kubernetes API's watches and server-side apply) |
 * | leases.ts | edge_leases (hub processes sharing a PostgreSQL) |
 * | identity.ts | hub_identity (the sealed identity hub processes sharing a PostgreSQL share) |
 * | replicas.ts | hub_replicas, hub_forward_key (the replicas' URLs; the key forwarded tunnel requests are signed with) |
 * | proxy-sessions.ts | tunnel_proxy_sessions (the rules: hub/tunnel/proxy-session.ts) |
 * | catalog.ts | packages, package_deployments, package_revisions |
 * | image-tags.ts, image-pins.ts | image_tags; image_pins |
 * | interconnect.ts | interconnect_reports (what consuming edges report of their ServiceImport listeners) |
 * | schema/ | every migration of the tables above, one file per schema component (no reads or writes) |
 *
 * test/architecture.test.ts fails when a table is written anywhere else. Every module above runs
 * on SQLite or PostgreSQL (hub/state/sql.ts `SqlDb`), each tested by one shared suite on both.
 */
import { errorMessage } from '../../core/errors.js';
import { EdgeLeases } from './leases.js';
import { HubReplicas } from './replicas.js';
import { inTransaction, type SqliteDatabase } from '../../sync/sqlite.js';
import { SqlAssignmentStore, SqlEdgeReads, type AssignmentStore, type EdgeReads } from './assignments.js';
import { sqlAuthTables, type AuthTables } from './auth.js';
import { sqlBlobTables, type BlobTables } from './blobs.js';
import { sqlCatalogTables, type CatalogTables } from './catalog.js';
import { sqlClusterTables, type ClusterTables } from './clusters.js';
import { sqlDataFileTables, type DataFileTables } from './data-files.js';
import { sqlGitRepoStates, type GitRepoStates } from './git-repos.js';
import { sqlKubeApiState, type KubeApiState } from './kube-api.js';
import { IdentityStore } from './identity.js';
import { sqlImagePinTables, type ImagePinTables } from './image-pins.js';
import { sqlInterconnectTables, type InterconnectTables } from './interconnect.js';
import { sqlImageTagTables, type ImageTagTables } from './image-tags.js';
import { sqlPeopleTables, type PeopleTables } from './people.js';
import { sqlProjectTables, type ProjectTables } from './projects.js';
import { sqlProxySessionTables, type ProxySessionTables } from './proxy-sessions.js';
import { edgeReads, sqlEdgeState, type EdgeState } from './edges.js';
import type { SyncPostgres } from './pg/sync-client.js';
import { lastEventRead, sqlEventLog, type EventLog } from './events.js';
import { objectListRead, sqlObjectState, type ObjectState } from './objects.js';
import { isPostgres, prefetch, type Read, type SqlDb } from './sql.js';
import { sqlStatusState, type StatusState } from './status.js';
import { sqlDataProgressState, type DataProgressState } from './data-progress.js';
import { sqlAgentUpgradeRollouts, type AgentUpgradeRollouts } from './agent-upgrades.js';
import { sqlImageStagingState, type ImageStagingState } from './image-staging.js';

/**
 * Per database, the project of each edge as last read: a hint that lets `prefetchHandshake` give
 * the reads that need the project in its one round trip (a stale hint only makes them miss; each
 * read still runs with the project its owner reads). Filled from one read of every edge at the
 * first handshake, so a restarted replica's storm has it too.
 */
const projectHints = new WeakMap<SyncPostgres, Map<string, string>>();

/** A read given ahead on PostgreSQL (hub/state/sql.ts `prefetch`): what a handshake's writes will read. */
export type HandshakeRead = Read;

/** What the kinds of orders to edges read when an edge's parts are written at its handshake (hub/orders/engine.ts). */
export interface HandshakeReaders {
  /** Every kind's reads of the edge. */
  handshakeReads(edge: string): HandshakeRead[];
  /** Every kind's reads of the edge's project. */
  projectReads(project: string, edge: string): HandshakeRead[];
}

/**
 * On PostgreSQL, the reads the handshakes of edges answered together (one turn's hellos,
 * sync/server.ts `answerHellos`) make on a hub replica, given ahead in one round trip (two when
 * some edge's project was not known) instead of one each: what each registered kind of order reads
 * to write the edge's part (`kinds`: hub/orders/engine.ts, each source's `handshakeReads`), and the
 * connection history (hub/edges/history.ts `recordConnects`: the edge's runtime, project and last
 * event). A handshake that reads something else, or the same with other parameters, simply runs
 * that read. Nothing on SQLite. test/hub-state-postgres.test.ts counts the round trips.
 */
export function prefetchHandshakes(db: SqlDb, edges: string[], kinds: HandshakeReaders): void {
  if (!isPostgres(db) || !edges.length) return;
  const hints = projectHintsOf(db);
  const ofProject = (edge: string, project: string) => [
    ...kinds.projectReads(project, edge),
    lastEventRead(project, 'Edge', edge),
  ];
  prefetch(
    db,
    edges.flatMap((edge) => {
      const hint = hints.get(edge);
      return [
        ...kinds.handshakeReads(edge),
        edgeReads.runtime(edge),
        edgeReads.project(edge),
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
  /** The scheduler's tables: assignments, what each spec was written with, rollouts (read by the API and the catalog too). */
  assignments: AssignmentStore;
  /** What the scheduler reads of edges (enrollment, the Edge objects' labels as stored). */
  schedulerEdges: EdgeReads;
  /** Reads other modules name for `prefetchHandshakes` (the order kinds' `handshakeReads`). */
  readsAhead: {
    /** A project's objects of a kind (`ObjectState.list`). */
    objects(kind: string, project: string): HandshakeRead;
    /** An edge's runtime row (`EdgeState.get`). */
    edgeRuntime(edge: string): HandshakeRead;
  };
  /** API tokens, join tokens, edge credentials (hub/auth/'s rules over them). */
  auth: AuthTables;
  /** The sessions of people signed in with the identity provider (hub/auth/people.ts's rules over them). */
  people: PeopleTables;
  /** The tunnel's browser proxy sessions (hub/tunnel/proxy-session.ts's rules over them). */
  proxySessions: ProxySessionTables;
  /** Packages, their deployments and the versions of generated revisions (hub/catalog/). */
  catalog: CatalogTables;
  /** The blob index, references and quota reservations (hub/blobs/). */
  blobs: BlobTables;
  /** The files edges' workloads exported (hub/data/). */
  dataFiles: DataFileTables;
  /** What syncing each GitRepo learned: the commit applied, fetch errors, the objects it owns (hub/gitops/). */
  gitRepos: GitRepoStates;
  /** The Kubernetes API's record of object changes (its watches) and managed fields (hub/k8s/). */
  kubeApi: KubeApiState;
  /** The Project objects: spec (quotas, default rollout, members) and recorded deletions (hub/projects/). */
  projects: ProjectTables;
  /** Clusters at the sites: template versions, host reservations, sealed PKI, node reports (hub/clusters/). */
  clusters: ClusterTables;
  /** Image cache tags (hub/images/cache.ts) and the digests revisions' images were pinned to (pins.ts). */
  imageTags: ImageTagTables;
  imagePins: ImagePinTables;
  /** What consuming edges report of their ServiceImport listeners (hub/interconnect/). */
  interconnect: InterconnectTables;
  /**
   * The sealed identity hub replicas on one PostgreSQL share (hub/identity/); made when first used,
   * so a SQLite hub, which never uses it, has no such table.
   */
  readonly identity: IdentityStore;
  /**
   * The replicas' rows (`outpost get replicas`, forwarded tunnel requests); `self` is this process,
   * `leaseMs` how long its row lasts unrenewed (default LEASE_TTL_MS).
   */
  replicaRegistry(self: string, leaseMs?: number): HubReplicas;
  /** Which replica serves each edge: on PostgreSQL only (a SQLite hub is the only one of its database). */
  edgeLeases(self: string, leaseMs?: number): EdgeLeases | undefined;
  /** Why the tables cannot be reached now (for /readyz); undefined when they can. */
  unready(): string | undefined;
  /**
   * On PostgreSQL, what recording these edges' disconnections reads, in one round trip
   * (`prefetchDisconnects`); nothing on SQLite.
   */
  readAheadDisconnects(edges: readonly string[]): void;
  /**
   * On PostgreSQL, what the handshakes of these edges read (each registered order kind's
   * `handshakeReads`), in one round trip (`prefetchHandshakes`); nothing on SQLite.
   */
  readAheadHandshakes(edges: string[], kinds: HandshakeReaders): void;
  /**
   * Runs `fn` in one transaction, joining an open one (every write of the hub's state is one).
   * `immediate` takes the write lock at the start: for a read-then-write another process may race.
   */
  transaction<T>(fn: () => T, opts?: { immediate?: boolean }): T;
}

const readsAhead: HubState['readsAhead'] = {
  objects: (kind, project) => objectListRead(kind, project),
  edgeRuntime: (edge) => edgeReads.runtime(edge),
};

/**
 * The same state on PostgreSQL (issue #22, in progress: these four modules so far; the database
 * migrated with hub/state/pg/schema.ts `migratePostgres`).
 */
export function postgresHubState(pg: SyncPostgres): HubState {
  return withTableGroups(pg, {
    objects: sqlObjectState(pg),
    edges: sqlEdgeState(pg),
    events: sqlEventLog(pg),
    status: sqlStatusState(pg),
    dataProgress: sqlDataProgressState(pg),
    agentUpgrades: sqlAgentUpgradeRollouts(pg),
    imageStaging: sqlImageStagingState(pg),
    schedulerEdges: new SqlEdgeReads(pg),
    readsAhead,
    transaction: (fn) => pg.transaction(fn),
  });
}

export function sqliteHubState(db: SqliteDatabase): HubState {
  return withTableGroups(db, {
    objects: sqlObjectState(db),
    edges: sqlEdgeState(db),
    events: sqlEventLog(db),
    status: sqlStatusState(db),
    dataProgress: sqlDataProgressState(db),
    agentUpgrades: sqlAgentUpgradeRollouts(db),
    imageStaging: sqlImageStagingState(db),
    schedulerEdges: new SqlEdgeReads(db),
    readsAhead,
    transaction: (fn, opts) =>
      opts?.immediate && !db.inTransaction ? db.transaction(fn).immediate() : inTransaction(db, fn),
  });
}

/**
 * `base` with the table groups both databases build the same way, each migrated on SQLite as it is
 * made (PostgreSQL is migrated at start). Copied as property descriptors: `identity` stays a getter
 * (a spread would call it, and give every SQLite hub file a table it never uses).
 */
function withTableGroups(db: SqlDb, base: Omit<HubState, keyof ReturnType<typeof tableGroups>>): HubState {
  return Object.defineProperties(base, Object.getOwnPropertyDescriptors(tableGroups(db))) as HubState;
}

function tableGroups(db: SqlDb) {
  let identity: IdentityStore | undefined;
  return {
    auth: sqlAuthTables(db),
    blobs: sqlBlobTables(db),
    catalog: sqlCatalogTables(db),
    assignments: new SqlAssignmentStore(db),
    dataFiles: sqlDataFileTables(db),
    gitRepos: sqlGitRepoStates(db),
    kubeApi: sqlKubeApiState(db),
    clusters: sqlClusterTables(db),
    proxySessions: sqlProxySessionTables(db),
    people: sqlPeopleTables(db),
    imageTags: sqlImageTagTables(db),
    imagePins: sqlImagePinTables(db),
    interconnect: sqlInterconnectTables(db),
    // After the groups whose tables its first migration reads (auth, blobs, catalog).
    projects: sqlProjectTables(db),
    get identity() {
      return (identity ??= new IdentityStore(db));
    },
    replicaRegistry: (self: string, leaseMs?: number) => new HubReplicas(db, self, leaseMs),
    edgeLeases: (self: string, leaseMs?: number) => (isPostgres(db) ? new EdgeLeases(db, self, leaseMs) : undefined),
    unready: () => databaseUnready(db),
    readAheadDisconnects: (edges: readonly string[]) => prefetchDisconnects(db, edges),
    readAheadHandshakes: (edges: string[], kinds: HandshakeReaders) => prefetchHandshakes(db, edges, kinds),
  } satisfies Partial<HubState>;
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
