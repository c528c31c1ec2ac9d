/**
 * @module The cluster kind of order (core/orders/kind.ts, docs/clusters.md): what node of which
 * Cluster an edge must be, with the template's content and the node's PKI sealed to the edge (one
 * JSON value, replaced whole). The hub's source is hub/clusters/source.ts, the edge's follower
 * edge/clusters/follower.ts.
 */
import type { ClusterNodeOrder } from '../cluster.js';
import { putSpecCluster } from '../mailbox.js';
import type { OrderKind } from './kind.js';

export const CLUSTER_ORDER: OrderKind<ClusterNodeOrder> = {
  name: 'cluster',
  put: (b, order) => void putSpecCluster(b, order),
};
