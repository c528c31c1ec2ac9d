/**
 * @module What an edge reports of its cluster node (core/cluster.ts ClusterNodeReport), projected
 * into `cluster_nodes` (peer input: only the cluster the edge belongs to, or the one it last
 * reported, in the project the hub recorded), each new step an event of the Cluster; and a control
 * plane's drained workers released (docs/clusters.md, "Scale").
 */
import { ClusterNodeReport } from '../../core/cluster.js';
import type { HubState } from '../state/index.js';
import { REMOVING } from './roles.js';

/** What the edge reports of its node, into `cluster_nodes`; each new step an event of its Cluster. */
export function projectNodeReport(
  state: Pick<HubState, 'clusters' | 'events'>,
  edge: string,
  r: ClusterNodeReport | undefined,
  /** Workers were released: the orders change. */
  changed: () => void,
): boolean {
  const { clusters, events } = state;
  const prev = clusters.nodeReport(edge);
  if (!r) {
    if (!prev) return false;
    clusters.deleteNodeReport(edge);
    return true;
  }
  const text = JSON.stringify(r);
  if (prev?.report === text) return false;
  const holder = clusters.holder(edge);
  // Peer input: only the cluster the edge belongs to, or the one it last reported (a deleted
  // cluster's node tearing down), in the project the hub recorded; anything else is dropped.
  const project =
    holder?.cluster === r.cluster ? holder.project : prev?.cluster === r.cluster ? prev.project : undefined;
  if (!project) return false;
  const before = prev ? ClusterNodeReport.safeParse(JSON.parse(prev.report)) : undefined;
  const seen = before?.success && before.data.uid === r.uid ? Math.max(0, ...before.data.events.map((e) => e.at)) : 0;
  for (const e of r.events.filter((x) => x.at > seen))
    events.record({ project, kind: 'Cluster', name: r.cluster, reason: e.step, message: `${edge}: ${e.message}` });
  clusters.putNodeReport(edge, project, r.cluster, text);
  if (r.role === 'control-plane' && holder?.role === 'control-plane') released(state, project, r, edge, changed);
  return true;
}

/** The workers the control plane drained and deleted from the cluster are released (their nodes then go). */
function released(
  state: Pick<HubState, 'clusters' | 'events'>,
  project: string,
  r: ClusterNodeReport,
  cp: string,
  changed: () => void,
): void {
  const { clusters, events } = state;
  let any = false;
  for (const e of r.drained ?? []) {
    const h = clusters.holder(e);
    if (h?.role !== REMOVING || h.project !== project || h.cluster !== r.cluster) continue;
    clusters.release(project, r.cluster, e);
    clusters.dropPki(project, r.cluster, e);
    events.record({
      project,
      kind: 'Cluster',
      name: r.cluster,
      reason: 'WorkerRemoved',
      message: `${cp}: worker ${e} drained and deleted from the cluster; its edge stops its components and is released`,
    });
    any = true;
  }
  if (any) changed();
}
