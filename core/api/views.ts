/**
 * @module The status views the hub's API answers with (docs/api.md): an edge's status, a
 * placement's and a workload's, rollouts, revisions, events, the fleet, connections, tokens and
 * agent upgrades. The hub's builders are typed by them, the CLI and the UI read them: one shape,
 * checked by the compiler on both sides of the wire.
 *
 * Browser-safe on purpose: the UI's build type-checks without Node's types, so nothing here may
 * import Node (type imports of core's zod schemas are fine).
 */
import type { Inventory } from '../resources.js';
import type { State, Summary } from '../status.js';

/** An edge's phase: enrolled but not approved, connected with recent heartbeats, or not. */
export type EdgePhase = 'Pending' | 'Online' | 'Offline';

/** The hardware and runtime facts an edge reports. */
export type InventoryView = Inventory;

/** One workload on one edge, as the edge's status lists it. */
export interface EdgeWorkloadView {
  name: string;
  placement: string;
  generation: number;
  observedGeneration?: number;
  state: State;
  reason?: string;
  restarts: number;
  /** When the workload entered its current phase on the edge (ISO 8601). */
  since?: string;
  objects: Record<string, { ready: boolean; message?: string }>;
}

/** An intent made on the site (`outpost-edge pause`, an override), not yet cleared by the hub. */
export interface IntentView {
  seq: number;
  workload: string;
  action: string;
  set?: Record<string, unknown>;
  /** Milliseconds since the epoch, on the edge's clock. */
  at: number;
  origin: string;
}

/** What the site's intents make of one workload (the merge rule of core/mailbox.ts). */
export interface LocalStateView {
  paused: boolean;
  overrides: Record<string, unknown>;
  intents: IntentView[];
}

/** `status` of an Edge object. */
export interface EdgeStatusView {
  phase: EdgePhase;
  lastSeen?: string;
  /** Milliseconds since the last heartbeat, on the hub's clock. */
  lastSeenAgo?: number;
  connectedSince?: string;
  agentVersion?: string;
  inventory?: InventoryView;
  /** Labels the hub derives from the inventory; placements select on them (docs/inventory.md). */
  inventoryLabels?: Record<string, string>;
  summary: Summary;
  workloads: EdgeWorkloadView[];
  localIntents: Record<string, LocalStateView>;
  /** Images pre-staged for a rollout (core/staging.ts), as the edge reports them. */
  imageStaging?: ImageStagingView;
  /** The hub replica its connection is on, while connected (`GET /api/v1/replicas`). */
  servedBy?: ServedByView;
  /**
   * The DataObjects the edge was ordered to hold, as it last reported each (hub/state/data-progress.ts),
   * in name order. Only in one edge's own GET, not in lists.
   */
  dataObjects?: EdgeDataObjectView[];
  /** The Cluster the edge is a host of and its role there (docs/clusters.md, "Host reservation"). */
  cluster?: { cluster: string; role: string };
}

/** One DataObject on one edge, as the edge's status lists it. */
export interface EdgeDataObjectView {
  name: string;
  /** Where its file is, under the edge's objects directory. */
  path: string;
  /** The delivery state of the version the edge last reported on (core/delivery.ts). */
  state: string;
  /** That version. */
  version: string;
  /** The version its file holds now, if any (core/delivery.ts heldVersion). */
  holds?: string;
  percent?: number;
  reason?: string;
  /** When the edge reached this state (ISO 8601, the edge's clock). */
  since: string;
}

/** A hub replica, as an edge's status and connection history name it. */
export interface ServedByView {
  /** The replica's id: `HOST:PID:RANDOM`, as in its log and `outpost get replicas`. */
  replica: string;
  /** Its advertise URL, while the hub still knows it (a replica's row is kept a day after it stopped). */
  url?: string;
}

/** How many of the edges a prestaged rollout stages to have every image of the new version. */
export interface PlacementStagingView {
  /** `images staged on 3/5 edges, 412 MB of 690 MB` (and `, 1 over budget` when some are). */
  summary: string;
  staged: number;
  edges: number;
  /** Bytes of the new version's images on those edges so far, and in all (each edge counted). */
  bytes: number;
  totalBytes: number;
  /** Edges whose staging stopped: over the placement's prestageBudget, or failed. */
  overBudget: number;
  failed: number;
  /** The first of those edges (hub/images/staging.ts says how many), each with the edge's reason. */
  problems: { edge: string; state: 'OverBudget' | 'Failed'; reason: string }[];
}

/** `images staged 3/3, 412 MB` and each image's state (Present, Staging, OverBudget, Failed, Skipped). */
export interface ImageStagingView {
  summary: string;
  images: { image: string; state: string; size: number; done: number; reason?: string }[];
}

/** How many of a rollout's selected edges are where (core/rollout.ts `RolloutCounts`). */
export interface RolloutCountsView {
  total: number;
  updated: number;
  ready: number;
  failed: number;
  pending: number;
  held?: number;
  skipped?: number;
  blocked?: number;
  /** Edges whose new version waits for a precondition there (a package's dependency Ready). */
  waiting?: number;
}

/** A placement's rollout as the planner last decided it. */
export interface RolloutView {
  phase: string;
  reason: string;
  counts?: RolloutCountsView;
  paused: boolean;
}

/**
 * The version a package placement resolved (docs/catalog.md, "Deploying"): `package` at
 * `versionRange` (with `profile`) resolved to `version`, once per rollout.
 */
export interface PackageDeploymentView {
  package: string;
  versionRange: string;
  version: string;
  profile?: string;
  /** The version the placement had before its last resolution moved it. */
  previousVersion?: string;
  resolvedAt: string;
}

/** One placement a package version runs through, and the edges it runs on there. */
export interface PackagePlacementView {
  placement: string;
  versionRange: string;
  profile?: string;
  /** The edges whose assignment holds this version, by name (the first few: hub/catalog/runs.ts). */
  edges: string[];
  /** How many edges hold it in all (0: resolved, written to no edge yet). */
  edgeCount: number;
}

/** `status` of a Placement object. */
export interface PlacementStatusView {
  selectedEdges: number;
  summary: Summary;
  /** A package placement: what it resolved (docs/catalog.md). */
  package?: PackageDeploymentView;
  /** While a `prestage` rollout stages images: `images staged on 3/5 edges` (docs/drivers.md). */
  imageStaging?: PlacementStagingView;
  /** Edges where a workload of the placement is paused on site by a local intent. */
  heldLocally?: { edge: string; workload: string }[];
  rollout?: RolloutView;
}

/** `status` of a Workload object. */
export interface WorkloadStatusView {
  revision: number;
  summary: Summary;
}

/** One item of `GET .../workloads/W/revisions`. */
export interface RevisionView {
  revision: number;
  createdAt: string;
  manifests: unknown[];
  changeCause?: string;
}

/** One item of `GET .../events`. */
export interface EventView {
  id: number;
  /** Milliseconds since the epoch, and the same as ISO 8601 in `time`. */
  at: number;
  time: string;
  project: string;
  kind: string;
  name: string;
  reason: string;
  message: string;
  /** The edge an event of another object is about (an AgentUpgrade's): it lists with the edge's events (`?edge=`). */
  edge?: string;
  /** The object no longer exists (a decommissioned edge, a deleted workload): no link. */
  gone?: boolean;
}

/**
 * The query of `GET .../events` that lists one object's events: an edge's are its own and those of
 * other objects about it (`edge=NAME`: an AgentUpgrade ordering it, its switch running or rolled
 * back); any other object's, its own (`kind`, `name`). The CLI and the UI ask the same.
 */
export function eventsQuery(kind: string, name: string): { edge: string } | { kind: string; name: string } {
  return kind === 'Edge' ? { edge: name } : { kind, name };
}

/** `GET .../fleet`. */
export interface FleetView {
  edges: { total: number } & Record<EdgePhase, number>;
  workloads: number;
  placements: number;
}

/** `GET .../fleet/online`: approved edges with an open connection at evenly spaced instants. */
export interface OnlineHistoryView {
  from: string;
  to: string;
  stepSeconds: number;
  points: { t: string; online: number }[];
}

/** One item of `GET .../edges/E/connections`. */
export interface ConnectionView {
  connectedAt: string;
  disconnectedAt?: string;
  durationMs?: number;
  /** Why it ended, in words: who closed it and why (hub/edges/history.ts). */
  reason?: string;
  remoteAddress?: string;
  /** The hub replica that served it (absent for connections recorded before hubs named themselves). */
  servedBy?: ServedByView;
}

/** One item of `GET /api/v1/replicas`: a hub process on the hub's database (docs/operations.md, "HA and scale-out"). */
export interface ReplicaView {
  /** `HOST:PID:RANDOM`, as in the replica's log and its edges' connection history. */
  id: string;
  /** Where other replicas (and operators) reach it: its --advertise-url. */
  url: string;
  /**
   * Renewed its row within the lease time and, on PostgreSQL, its database session is there: a
   * replica killed or cut off shows false within seconds; its row is kept a day after.
   */
  alive: boolean;
  /** It holds the planning lock: it runs the scheduler (one at a time). */
  leader: boolean;
  /** The replica that answered this request. */
  self: boolean;
  startedAt: string;
  /** Its last renewal (every 5 s while it runs). */
  lastHeartbeat: string;
  /** Edges whose connection it serves now, of the projects the token may read. */
  edges: number;
}

/** One item of `GET /tokens`: an API token (`role`) or a join token (`labels`, `uses`). */
export interface TokenView {
  id: string;
  kind: 'api' | 'join';
  project: string;
  role?: string;
  labels?: Record<string, string>;
  uses?: number;
  usesLimit?: number | null;
  description: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
}

export type TokenState = 'Revoked' | 'Expired' | 'Used up' | 'Valid';

/** Whether a token can still be used, and if not why: the one rule the CLI and the UI show. */
export function tokenState(
  t: Pick<TokenView, 'kind' | 'revokedAt' | 'expiresAt' | 'uses' | 'usesLimit'>,
  now = Date.now(),
): TokenState {
  if (t.revokedAt) return 'Revoked';
  if (t.expiresAt && Date.parse(t.expiresAt) <= now) return 'Expired';
  if (t.kind === 'join' && t.usesLimit != null && (t.uses ?? 0) >= t.usesLimit) return 'Used up';
  return 'Valid';
}

/** One selected edge of an AgentUpgrade. */
export interface AgentUpgradeEdgeView {
  edge: string;
  /** `Waiting`: the rollout has not ordered it yet; `Claimed`: another AgentUpgrade holds it. */
  state: string;
  percent?: number;
  reason?: string;
  /** The version the edge's agent runs now, as it last reported. */
  agentVersion?: string;
  online: boolean;
}

/** `status` of an AgentUpgrade object. */
export interface AgentUpgradeStatusView {
  phase: string;
  reason: string;
  counts: RolloutCountsView;
  /** Edges running the release. */
  running: number;
  /** Edges that rolled back or could not take it (no space, refused). */
  rolledBack: number;
  maxUnavailable: number;
  edges: AgentUpgradeEdgeView[];
}

/** One edge's part in an upgrade in words: `Downloading 40%`, `Running 0.2.0`, `RolledBack: why`. */
export function upgradeStateText(
  e: Pick<AgentUpgradeEdgeView, 'state' | 'percent' | 'reason'>,
  version: string,
): string {
  const detail = upgradeStateDetail(e, version);
  if (!detail) return e.state;
  return e.state === 'Downloading' || e.state === 'Running' ? `${e.state} ${detail}` : `${e.state}: ${detail}`;
}

/**
 * What `upgradeStateText` says beside the state, for a page that shows the state on its own (a
 * badge): `40%`, `0.2.0`, the reason; undefined when there is nothing more to say.
 */
export function upgradeStateDetail(
  e: Pick<AgentUpgradeEdgeView, 'state' | 'percent' | 'reason'>,
  version: string,
): string | undefined {
  if (e.state === 'Downloading') return `${e.percent ?? 0}%`;
  if (e.state === 'Running') return version;
  return e.reason || undefined;
}

/** One selected edge of a DataObject (hub/data/delivery.ts). */
export interface DataObjectEdgeView {
  edge: string;
  /**
   * A delivery state (core/delivery.ts), `Pending` before the edge reported on this version, or
   * `Blocked` where another DataObject holds the path on this edge (reason names it; hub/data/paths.ts).
   */
  state: string;
  /** The version the edge's file holds now, if any. */
  version?: string;
  percent?: number;
  reason?: string;
  /** When the edge reached this state (ISO 8601, the edge's clock). */
  since?: string;
  online: boolean;
}

/** `status` of a DataObject. */
export interface DataObjectStatusView {
  /**
   * `delivered 3/4`; before activateAt `downloaded 3/4, activates at 2026-12-01T02:00:00Z`;
   * `expired (...)` once past expiresAt; then `, 1 blocked` when another object holds the path on some.
   */
  summary: string;
  delivered: number;
  /** Edges holding this version's bytes: Delivered, or downloaded and Waiting for activateAt. */
  downloaded: number;
  selected: number;
  /** activateAt (ISO 8601) while it is ahead on the hub's clock. */
  activatesAt?: string;
  /** Past expiresAt on the hub's clock: the edges remove the file; the object is left to delete. */
  expired?: boolean;
  edges: DataObjectEdgeView[];
}

/** One edge's delivery in words: `Delivered v2`, `Downloading 40%`, `Waiting (activates 2026-...)`, `Failed: why`. */
export function deliveryStateText(e: Pick<DataObjectEdgeView, 'state' | 'version' | 'percent' | 'reason'>): string {
  const detail = deliveryStateDetail(e);
  if (!detail) return e.state;
  return e.state === 'Downloading' || e.state === 'Delivered' ? `${e.state} ${detail}` : `${e.state}: ${detail}`;
}

/** What `deliveryStateText` says beside the state, for a page that shows the state as a badge; undefined: nothing. */
export function deliveryStateDetail(
  e: Pick<DataObjectEdgeView, 'state' | 'version' | 'percent' | 'reason'>,
): string | undefined {
  if (e.state === 'Downloading') return `${e.percent ?? 0}%`;
  if (e.state === 'Delivered') return e.version || undefined;
  return e.reason || undefined;
}

/** Why a commit of a GitRepo could not be applied: the file and line of the object, and the problem. */
export interface GitRepoSyncError {
  /** The file in the repository (`edges/web.yaml`), absent for an error of the whole commit. */
  file?: string;
  line?: number;
  document?: number;
  kind?: string;
  name?: string;
  /** The field (`spec.manifests[0].image`), when one is at fault. */
  path?: string;
  message: string;
}

/** An object a GitRepo's applied commit owns: where it came from in the repository. */
export interface GitRepoObjectView {
  kind: string;
  name: string;
  file: string;
  line: number;
}

/**
 * A GitRepo's state (hub/gitops/): `Synced` (the head is applied, nothing drifted), `Drifted`
 * (owned objects changed by hand: the next sync puts Git's version back), `Error` (the head's
 * commit could not be applied: the previous one stays), `FetchFailed` (the last fetch failed: what
 * was applied stays), `Paused`, `Pending` (never synced yet).
 */
export type GitRepoState = 'Pending' | 'Synced' | 'Drifted' | 'Error' | 'FetchFailed' | 'Paused';

export interface GitRepoStatusView {
  state: GitRepoState;
  /** The commit whose objects are applied, and when (ISO 8601). */
  commit?: string;
  appliedAt?: string;
  /** The head the last successful fetch found, and when the last fetch ran. */
  head?: string;
  fetchedAt?: string;
  /** Why the last fetch failed (credentials never included). */
  fetchError?: string;
  /** The commit that could not be applied, and why, object by object. */
  failedCommit?: string;
  errors: GitRepoSyncError[];
  /** How many objects the applied commit owns. */
  objects: number;
  owned: GitRepoObjectView[];
  /** Owned objects changed (or deleted) by hand since their commit was applied. */
  drift: { kind: string; name: string; change: 'changed' | 'deleted' }[];
  /** The webhook's path on the hub (POST; signed with spec.webhookSecret), when it has a secret. */
  webhook?: string;
}

/** One node of a Cluster as its edge last reported it (hub/clusters/status.ts). */
export interface ClusterNodeView {
  edge: string;
  role: string;
  /** The node's phase (core/cluster.ts NODE_PHASES), `Pending` before its edge reported. */
  phase: string;
  step?: string;
  /** The template version its components run (`NAME@VERSION`): another than the cluster's while it upgrades. */
  runs?: string;
  message?: string;
  ready: boolean;
  kubeletVersion?: string;
  reason?: string;
  online: boolean;
}

/** A Cluster's status (hub/clusters/status.ts): its phase, its nodes, its control plane's health. */
export interface ClusterStatusView {
  phase: 'Provisioning' | 'Ready' | 'Scaling' | 'Upgrading' | 'Degraded' | 'Deleting';
  /** `1/1 nodes Ready`, or what keeps it from being Ready. */
  summary: string;
  template: string;
  kubernetesVersion?: string;
  /** Why no node got the order (a template missing, a host held by another cluster). */
  message?: string;
  /**
   * The Cluster's deletion, once asked for (phase `Deleting`): when, by whom, whether the delete was
   * forced past the Placements that target it. The object goes once every node has torn down.
   */
  deletion?: { at: string; by?: string; forced: boolean };
  /**
   * The cluster's Kubernetes API through the hub, as a path of the hub's URL: the kube route of its
   * control-plane edge's tunnel (what `outpost cluster kubeconfig` points kubectl at).
   */
  endpoint?: string;
  nodes: ClusterNodeView[];
  /** The control-plane node's components: running, healthy (etcd health, `/readyz`, `/healthz`). */
  components: Record<string, { running: boolean; healthy: boolean; restarts: number; message?: string }>;
}
