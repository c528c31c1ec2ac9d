/**
 * @module What the API's route files receive (hub/api/app.ts gives each the module it serves), and
 * the kinds' paths.
 */
import type { ScanVerdict } from '../scan/clamd.js';
import type {
  AgentUpgradeStatusView,
  ClusterStatusView,
  DataObjectStatusView,
  GitRepoStatusView,
  PlacementStagingView,
  ReplicaView,
  ServedByView,
} from '../../core/api/views.js';
import { OutpostError } from '../../core/errors.js';
import type { SignedRelease } from '../../core/release.js';
import type { ServiceExportStatusView, ServiceImportStatusView } from '../../core/api/interconnect-views.js';
import type {
  AgentUpgrade,
  Cluster,
  DataObject,
  GitRepo,
  Kind,
  ServiceExport,
  ServiceImport,
} from '../../core/resources.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { Catalog } from '../catalog/index.js';
import type { ObjectStore } from '../objects.js';
import type { Projects } from '../projects/store.js';
import type { Scheduler } from '../scheduler/index.js';
import type { HubSecrets } from '../secrets.js';
import type { HubState } from '../state/index.js';

/** The hub's replicas (hub/replicas/directory.ts; a SQLite hub is the only one): the API names them. */
export interface ReplicaNames {
  /** The replica answering. */
  self(): { id: string; url: string };
  /** Every replica, its edges counted in `project` (`*`: all). */
  list(project: string): ReplicaView[];
  /** The replica an edge's connection is on, with its URL. */
  servedBy(replica: string): ServedByView;
}

/** Signs agent releases (hub/upgrades/releases.ts); its public key goes to edges at enrollment. */
export interface ReleaseSigner {
  publicKeyPem: string;
  /** Scans the binary (fail-closed) and signs its release. */
  sign(project: string, digest: string, version: string, scope: string): Promise<SignedRelease & { scan: ScanVerdict }>;
}

/**
 * The hub's objects as the API serves them (objects.ts, apply.ts, fleet.ts): stored objects, and
 * the status of each kind that `withStatus` adds, from the parts that keep it.
 */
export interface ObjectApi {
  /** The hub's tables (hub/state/): the API reads and writes them only through these. */
  state: HubState;
  store: ReplicaStore;
  objects: ObjectStore;
  scheduler: Scheduler;
  /** Redacts, reveals and seals Secret values (hub/secrets.ts). */
  secrets: HubSecrets;
  replicas: Pick<ReplicaNames, 'servedBy'>;
  /** Versioned packages and their deployments (hub/catalog/). */
  catalog?: Pick<Catalog, 'deployment'>;
  /** AgentUpgrade rollouts (hub/upgrades/controller.ts): their status per edge, what a delete changes. */
  upgrades?: {
    status(u: AgentUpgrade): AgentUpgradeStatusView;
    /** What deleting it changes on its edges, in words (the delete's answer). */
    deleteChanges(u: AgentUpgrade): string[];
  };
  /** DataObject deliveries (hub/data/delivery.ts): their status per edge. */
  deliveries?: { status(o: DataObject): DataObjectStatusView };
  /** ServiceExports and ServiceImports (hub/interconnect/): the edges serving and consuming each. */
  interconnect?: {
    exportStatus(o: ServiceExport): ServiceExportStatusView;
    importStatus(o: ServiceImport): ServiceImportStatusView;
  };
  /** GitRepos' sync state (hub/gitops/): the commit applied, errors by file and line, drift. */
  gitRepos?: { status(r: GitRepo): GitRepoStatusView };
  /** Project objects: a placement's default rollout, Project documents in an apply (hub/projects/). */
  projects: Projects;
  /** Clusters at the sites (hub/clusters/): a Cluster's status, the cluster an edge belongs to. */
  clusters?: {
    status(c: Cluster): ClusterStatusView;
    ofEdge(edge: string): { cluster: string; role: string } | undefined;
  };
  /** Pre-staging progress per placement (hub/images/staging.ts). */
  imageStaging?: { progress(project: string, placement: string): PlacementStagingView | undefined };
}

export const KIND_PATHS: Record<string, Kind> = {
  edges: 'Edge',
  workloads: 'Workload',
  placements: 'Placement',
  agentupgrades: 'AgentUpgrade',
  registries: 'Registry',
  dataobjects: 'DataObject',
  gitrepos: 'GitRepo',
  serviceexports: 'ServiceExport',
  serviceimports: 'ServiceImport',
  clustertemplates: 'ClusterTemplate',
  clusters: 'Cluster',
};

export function kindFromPath(s: string): Kind {
  const k = KIND_PATHS[s];
  if (!k) throw new OutpostError('not_found', `unknown kind "${s}": use ${Object.keys(KIND_PATHS).join(', ')}`);
  return k;
}
