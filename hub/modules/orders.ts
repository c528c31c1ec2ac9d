/**
 * @module The kinds of order the hub sends edges besides the workloads (whose source is the
 * scheduler), each a source registered with the order engine in this order (the order a handshake
 * writes them in): agent upgrades, DataObject deliveries, cluster nodes, image pre-staging, and the
 * interconnect's listeners (docs/architecture.md, "Orders"). Each is a module of the hub with its
 * own timer; with replicas the leader plans upgrades and staging, and every replica copies the
 * parts of the edges it serves.
 */
import type client from 'prom-client';
import type { ReplicaStore } from '../../sync/store.js';
import type { HubBlobs } from '../blobs/index.js';
import { HubClusters } from '../clusters/index.js';
import { registerClusterMetrics } from '../clusters/metrics.js';
import { DataDeliveries } from '../data/delivery.js';
import { imagesGate } from '../images/gate.js';
import { HubStaging } from '../images/staging.js';
import { InterconnectPlanner } from '../interconnect/index.js';
import { loop, type HubModule } from '../module.js';
import type { ObjectStore } from '../objects.js';
import type { OrderEngine } from '../orders/engine.js';
import type { Scheduler } from '../scheduler/index.js';
import type { HubSecrets } from '../secrets.js';
import type { HubState } from '../state/index.js';
import { AgentUpgradeController } from '../upgrades/controller.js';

export interface OrderKinds {
  upgrades: AgentUpgradeController;
  deliveries: DataDeliveries;
  clusters: HubClusters;
  imageStaging: HubStaging;
  interconnect: InterconnectPlanner;
  /** Their modules, in the hub's list (hub/hub.ts). */
  modules: HubModule[];
}

export function createOrderKinds(o: {
  state: HubState;
  objects: ObjectStore;
  store: ReplicaStore;
  orders: OrderEngine;
  blobs: HubBlobs;
  secrets: HubSecrets;
  releasePublicKeyPem: string;
  scheduler: Scheduler;
  /** Hub replicas on PostgreSQL: the leader plans the upgrades. */
  replicated: boolean;
  /** Where the kinds' Prometheus series go (the clusters' phases and nodes). */
  registry: client.Registry;
}): OrderKinds {
  const { state, objects, orders, blobs, scheduler } = o;
  const upgrades = new AgentUpgradeController(
    state,
    objects,
    o.store,
    orders,
    blobs,
    o.releasePublicKeyPem,
    state.agentUpgrades,
  );
  if (o.replicated) upgrades.leading = () => scheduler.leading;
  const deliveries = new DataDeliveries(state, objects, orders, blobs, state.dataProgress);
  // Clusters at the sites (hub/clusters/): each reserved host's node.
  const clusters = new HubClusters({
    state,
    objects,
    engine: orders,
    blobs,
    secrets: o.secrets,
    releasePublicKeyPem: o.releasePublicKeyPem,
  });
  registerClusterMetrics(o.registry, clusters, objects);
  // Image pre-staging (hub/images/staging.ts): the images gate orders it, the API shows progress.
  const imageStaging = new HubStaging(orders, blobs, state);
  scheduler.addGate(imagesGate(imageStaging));
  // ServiceImports (hub/interconnect/): the listeners each consuming edge opens.
  const interconnect = new InterconnectPlanner(state, objects, orders);
  return {
    upgrades,
    deliveries,
    clusters,
    imageStaging,
    interconnect,
    modules: [
      loop('deliveries', deliveries),
      loop('interconnect', interconnect),
      loop('clusters', clusters),
      loop('upgrades', upgrades),
      loop('image staging', imageStaging),
    ],
  };
}
