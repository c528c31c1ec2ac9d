/**
 * @module The placement rules checked at apply, against what the hub holds once the request's
 * objects are written (inside the apply transaction, so a refusal changes nothing):
 *
 * - Every workload a placement names exists in its project (refused otherwise: it would wait for
 *   edges forever).
 * - No two placements place the same workload on the same edge. Two placements overlap when they
 *   share a workload and both select one of the project's current edges (approved or not, drained
 *   or not: those change without an apply). The later apply is refused, naming the other
 *   placement. Should an overlap arise later anyway (an edge relabelled), the placement already
 *   holding the workload on that edge keeps it and the other reports the edge as blocked
 *   (hub/scheduler/).
 * - A placement that selects no schedulable edge is accepted with a warning (its rollout shows
 *   Pending "no edge selected" until one matches).
 */
import { OutpostError } from '../../core/errors.js';
import type { Edge, LabelSelector, Placement } from '../../core/resources.js';
import { selectEdges } from '../../core/selector.js';
import type { ObjectStore } from '../objects.js';
import { placementSelection } from '../clusters/selection.js';
import { schedulableEdges } from '../edges/phase.js';
import type { ClusterTables } from '../state/clusters.js';
import type { EdgeState } from '../state/edges.js';

function listNames(names: string[], max = 5): string {
  return names.length <= max ? names.join(', ') : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

function describeSelection(spec: { edgeSelector?: LabelSelector; edges?: string[]; clusters?: string[] }): string {
  const parts: string[] = [];
  const sel = spec.edgeSelector;
  if (sel) {
    const terms = [
      ...Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`),
      ...(sel.matchExpressions ?? []).map(
        (r) => `${r.key} ${r.operator}${r.values ? ` (${r.values.join(', ')})` : ''}`,
      ),
    ];
    parts.push(`edgeSelector ${terms.length ? terms.join(', ') : '{} (every edge)'}`);
  }
  if (spec.edges?.length) parts.push(`edges ${spec.edges.join(', ')}`);
  if (spec.clusters?.length) parts.push(`the control planes of clusters ${spec.clusters.join(', ')}`);
  return parts.join(' or ');
}

/**
 * Checks the placements a request just wrote; throws an OutpostError (nothing is applied) on a
 * missing workload or an overlap, and returns warnings for the ones that select no edge.
 */
export function checkPlacements(
  edges: Pick<EdgeState, 'liveness'>,
  objects: ObjectStore,
  applied: Placement[],
  clusters: Pick<ClusterTables, 'hostsOf'>,
): string[] {
  const warnings: string[] = [];
  const errors: { project: string; placement: string; path: string; message: string; code: 'invalid' | 'conflict' }[] =
    [];
  const byProject = new Map<string, Placement[]>();
  for (const p of applied)
    (byProject.get(p.metadata.project) ?? byProject.set(p.metadata.project, []).get(p.metadata.project)!).push(p);
  for (const [project, mine] of byProject) {
    const edgeObjs = objects.list<Edge>('Edge', project);
    const everyEdge = edgeObjs.map((e) => ({ name: e.metadata.name, labels: e.metadata.labels, unschedulable: false }));
    const schedulable = schedulableEdges(edgeObjs, edges.liveness(project));
    const all = objects.list<Placement>('Placement', project);
    const selection = (p: Placement) => placementSelection(clusters, project, p.spec);
    const selectedBy = new Map(all.map((p) => [p.metadata.name, new Set(selectEdges(everyEdge, selection(p)))]));
    for (const p of mine) {
      const name = p.metadata.name;
      const missing = p.spec.workloads.filter((w) => !objects.get('Workload', project, w));
      missing.forEach((w) =>
        errors.push({
          code: 'invalid',
          project,
          placement: name,
          path: `spec.workloads.${p.spec.workloads.indexOf(w)}`,
          message: `workload ${w} does not exist in project ${project}: apply it first (the same file or request is fine) or fix the name`,
        }),
      );
      const mineSel = selectedBy.get(name)!;
      for (const q of all) {
        if (q.metadata.name === name) continue;
        const shared = p.spec.workloads.filter((w) => q.spec.workloads.includes(w));
        if (!shared.length) continue;
        const both = [...selectedBy.get(q.metadata.name)!].filter((e) => mineSel.has(e)).sort();
        if (!both.length) continue;
        errors.push({
          code: 'conflict',
          project,
          placement: name,
          path: 'spec',
          message: `overlaps placement ${q.metadata.name}: both place ${shared.length === 1 ? 'workload' : 'workloads'} ${shared.join(', ')} on ${both.length === 1 ? 'edge' : 'edges'} ${listNames(both)}; narrow one placement's edgeSelector or edges, drop the workload from one, or delete placement ${q.metadata.name} first`,
        });
      }
      if (selectEdges(schedulable, selection(p)).length === 0)
        warnings.push(
          `Placement ${name} selects no edge now: no approved, schedulable edge of project ${project} matches ${describeSelection(p.spec)}; it places nothing until one does`,
        );
    }
  }
  if (errors.length) {
    // An overlap is a conflict with another object (409); a missing workload is invalid input (422).
    const code = errors.some((e) => e.code === 'invalid') ? 'invalid' : 'conflict';
    throw new OutpostError(code, errors.map((e) => `Placement ${e.placement}: ${e.path}: ${e.message}`).join('; '), {
      details: errors.map(({ project, placement, path, message }) => ({ project, placement, path, message })),
    });
  }
  return warnings;
}
