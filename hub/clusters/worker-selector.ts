/**
 * @module Workers chosen by a Cluster's `spec.workers.edgeSelector` (docs/clusters.md, "Scale"):
 * the schedulable edges of its project the selector picks (not its control plane), reserved as
 * they appear when free; those another cluster holds are left out, and its status says so.
 */
import type { Cluster, Edge } from '../../core/resources.js';
import { edgesReached, schedulableEdges } from '../edges/phase.js';
import type { ObjectStore } from '../objects.js';
import type { HubState } from '../state/index.js';

interface Deps {
  state: HubState;
  objects: ObjectStore;
}

/** The edges a Cluster's worker selector picks (none without a selector). */
export function selectedWorkers(d: Deps, c: Cluster): string[] {
  const sel = c.spec.workers?.edgeSelector;
  if (!sel) return [];
  const project = c.metadata.project;
  const edges = schedulableEdges(d.objects.list<Edge>('Edge', project), d.state.edges.liveness(project));
  const cp = c.spec.controlPlane.edges[0];
  return edgesReached(edges, { edgeSelector: sel }).filter((e) => e !== cp);
}

/** Reserves the free edges the worker selector picks (inside a transaction). */
export function reserveSelected(d: Deps, c: Cluster): void {
  const { project, name } = c.metadata;
  for (const edge of selectedWorkers(d, c)) {
    const held = d.state.clusters.holder(edge);
    if (!held) d.state.clusters.reserve({ edge, project, cluster: name, role: 'worker' });
  }
}

/** Edges the worker selector picks that another cluster holds (shown in the status). */
export function heldElsewhere(d: Deps, c: Cluster): string[] {
  return selectedWorkers(d, c).filter((e) => {
    const h = d.state.clusters.holder(e);
    return h && (h.project !== c.metadata.project || h.cluster !== c.metadata.name);
  });
}
