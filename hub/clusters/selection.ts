/**
 * @module Placements that select clusters (docs/clusters.md, "Using the cluster"): a Placement's
 * `spec.clusters` names Clusters of its project, and each selects its control-plane edge, whose
 * kubernetes driver runs the workloads on the cluster. The one rule the scheduler's selection and
 * the checks at apply share.
 */
import type { LabelSelector } from '../../core/resources.js';
import type { ClusterTables } from '../state/clusters.js';

export interface EdgeSelection {
  edgeSelector?: LabelSelector;
  edges?: string[];
}

/** The control-plane edges of the named clusters of `project` (a cluster that does not exist: none). */
export function clusterEdges(
  tables: Pick<ClusterTables, 'hostsOf'>,
  project: string,
  clusters: readonly string[] | undefined,
): string[] {
  const out: string[] = [];
  for (const c of clusters ?? [])
    for (const h of tables.hostsOf(project, c)) if (h.role === 'control-plane') out.push(h.edge);
  return out;
}

/** What a Placement selects, with its clusters as the edges they stand for. */
export function placementSelection(
  tables: Pick<ClusterTables, 'hostsOf'>,
  project: string,
  spec: EdgeSelection & { clusters?: string[] },
): EdgeSelection {
  const via = clusterEdges(tables, project, spec.clusters);
  if (!via.length) return { edgeSelector: spec.edgeSelector, edges: spec.edges };
  return { edgeSelector: spec.edgeSelector, edges: [...(spec.edges ?? []), ...via] };
}
