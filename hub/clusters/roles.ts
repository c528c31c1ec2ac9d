/** @module The role a host of a cluster has in `cluster_hosts` (hub/state/clusters.ts). */
import type { NodeRole } from '../../core/cluster.js';

/**
 * A worker the Cluster no longer names, still reserved while the control plane drains it; its
 * node keeps its order until then (docs/clusters.md, "Scale").
 */
export const REMOVING = 'removing';
/** The role a host's node has (a worker being removed is still a worker). */
export const nodeRole = (role: string): NodeRole => (role === REMOVING ? 'worker' : (role as NodeRole));
