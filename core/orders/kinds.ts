/**
 * @module The kinds of order the hub sends to edges whose part of the spec document is one value
 * written whole (core/orders/kind.ts): an agent upgrade, the images to pre-stage, the
 * DataObjects to deliver. The workloads' kind is workloads.ts (written incrementally, with the
 * edge's labels); the interconnect's and the clusters' are interconnect.ts and cluster.ts.
 */
import type { DeliveryOrder } from '../delivery.js';
import { putSpecAgentUpgrade, putSpecData, specDataNames, type AgentUpgradeOrder } from '../mailbox.js';
import { putSpecStaging, type StagingGroup } from '../staging.js';
import type { OrderKind } from './kind.js';

/** The release an edge's agent switches to (hub/upgrades/, edge/upgrade/orders.ts). */
export const AGENT_UPGRADE_ORDER: OrderKind<AgentUpgradeOrder> = {
  name: 'agent-upgrade',
  put: (b, order) => void putSpecAgentUpgrade(b, order),
};

/** The images to stage before a rollout switches the edge (hub/images/staging.ts, edge/images/staging.ts). */
export const IMAGE_STAGING_ORDER: OrderKind<StagingGroup[]> = {
  name: 'image-staging',
  put: (b, groups) => void putSpecStaging(b, { groups: groups ?? [] }),
  text: (groups) => JSON.stringify(groups ?? []),
};

/** The DataObjects an edge holds, by name (hub/data/delivery.ts, edge/data/delivery.ts). */
export const DATA_ORDERS: OrderKind<Map<string, DeliveryOrder>> = {
  name: 'data-orders',
  put: (b, orders) => {
    for (const n of new Set([...(orders?.keys() ?? []), ...specDataNames(b)])) putSpecData(b, n, orders?.get(n));
  },
  text: (orders) => JSON.stringify([...(orders ?? new Map())].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
};
