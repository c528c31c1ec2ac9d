/**
 * @module What `startHub` (hub.ts) returns: the running hub, its address and admin token, and the
 * parts tests and the commands reach (its state, scheduler, orders, relay), and how to stop it.
 */
import type { SyncServer } from '../sync/server.js';
import type { ReplicaStore } from '../sync/store.js';
import type { HubBlobs } from './blobs/index.js';
import type { ChartRenders } from './catalog/chart-renders.js';
import type { HubClusters } from './clusters/index.js';
import type { HubStaging } from './images/staging.js';
import type { InterconnectRelay } from './interconnect/relay.js';
import type { ObjectStore } from './objects.js';
import type { OrderEngine } from './orders/engine.js';
import type { Scheduler } from './scheduler/index.js';
import type { HubState } from './state/index.js';
import type { AgentUpgradeController } from './upgrades/controller.js';

export interface Hub {
  url: string;
  port: number;
  /**
   * DATA/admin.token. Throws on a replica without --identity-key whose database's admin token
   * another replica made (it has none: hub/identity/admin-token.ts).
   */
  readonly adminToken: string;
  adminTokenCreated: boolean;
  caPem?: string;
  caFingerprint?: string;
  store: ReplicaStore;
  /** The hub's tables (hub/state/). */
  state: HubState;
  scheduler: Scheduler;
  objects: ObjectStore;
  sync: SyncServer;
  blobs: HubBlobs;
  /** AgentUpgrade rollouts (hub/upgrades/controller.ts): `tick()` plans a pass now. */
  upgrades: AgentUpgradeController;
  /** Orders to edges (hub/orders/engine.ts): each kind's parts copied into the spec documents. */
  orders: OrderEngine;
  /** Image pre-staging (hub/images/staging.ts). */
  imageStaging: HubStaging;
  /** Helm charts rendered per edge (hub/catalog/chart-renders.ts): `version(project)` counts the renderings ended. */
  charts: ChartRenders;
  /** Clusters at the sites (hub/clusters/): `settle()` runs a pass now. */
  clusters: HubClusters;
  /** The interconnect's relay (hub/interconnect/relay.ts): its open connections and buffered bytes. */
  interconnect: InterconnectRelay;
  /** This hub process among the replicas (a SQLite hub is the only one). */
  replicaId: string;
  /** People from the identity provider; undefined without --oidc-issuer. */
  people?: { refreshNow(): Promise<number> };
  /** Stops; `why` (e.g. the signal) goes into its edges' connection history. */
  close(why?: string): Promise<void>;
}
