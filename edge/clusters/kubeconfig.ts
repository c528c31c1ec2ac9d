/**
 * @module The Kubernetes API of the cluster whose control plane this edge runs (docs/clusters.md,
 * "Using the cluster"): its admin kubeconfig, which the node wrote under
 * `DATA/clusters/NAME/etc/`. The tunnel's `kube` target (`outpost cluster kubeconfig`) and the
 * kubernetes driver of an edge enrolled without a kubeconfig reach the cluster through it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { nodeLayout } from './configs.js';
import { readNodeState } from './node-state.js';

/** The admin kubeconfig's file of a node directory. */
export const adminKubeconfig = (dataDir: string, cluster: string): string =>
  path.join(nodeLayout(dataDir, cluster).etc, 'admin.kubeconfig');

/**
 * The admin kubeconfig of the control-plane node on this edge, once written; undefined when the
 * edge runs no control plane. An edge belongs to at most one cluster (the hub's host reservation;
 * the follower tears down a node it no longer has an order for before it makes another).
 */
export function controlPlaneKubeconfig(dataDir: string): string | undefined {
  let names: string[];
  try {
    names = fs.readdirSync(path.join(dataDir, 'clusters')).sort();
  } catch {
    return undefined;
  }
  for (const name of names) {
    if (readNodeState(dataDir, name)?.order.role !== 'control-plane') continue;
    const file = adminKubeconfig(dataDir, name);
    if (fs.existsSync(file)) return file;
  }
  return undefined;
}
