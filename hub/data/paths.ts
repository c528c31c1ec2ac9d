/**
 * @module One path, one object, per edge (docs/data.md, "One path per edge"): two DataObjects of
 * a project may not deliver the same path, or a path and a directory of it, to one edge: the
 * second would overwrite the first's file (which would still say Delivered) or fail to land, and
 * deleting one would take the other's bytes.
 *
 * - At apply (inside the apply transaction, so a refusal changes nothing), `checkDataPaths`
 *   refuses an object whose path overlaps another's when both select one of the project's current
 *   edges (approved or not: approval and inventory change without an apply), naming the other.
 * - Should an overlap arise later anyway (an edge relabelled, a new edge matching both),
 *   `blockedPaths` decides per edge which object keeps the path (core/delivery.ts `pathHolders`,
 *   ranked by `byClaim`: the one the edge already holds or fetches, else the first by name); the
 *   hub orders only that one there, and the others show the edge `Blocked` with the holder's name
 *   (hub/data/delivery.ts). The edge applies the same rule to the orders it gets
 *   (edge/data/delivery.ts), so a spec written in two steps never makes it overwrite a file.
 */
import { dataObjectPath, byClaim, overlappingPaths, pathHolders, type DeliveryProgress } from '../../core/delivery.js';
import { OutpostError } from '../../core/errors.js';
import type { DataObject, Edge } from '../../core/resources.js';
import { selectEdges } from '../../core/selector.js';
import type { ObjectStore } from '../objects.js';
import type { EdgeState } from '../state/edges.js';

function listNames(names: string[], max = 5): string {
  return names.length <= max ? names.join(', ') : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

/** `spec.path a is also dataobject x's path` / `... is a directory of ...` / `... is inside ...`, for messages. */
export function overlapText(path: string, other: DataObject): string {
  const theirs = dataObjectPath(other);
  const name = other.metadata.name;
  if (theirs === path) return `path ${path} is also the path of dataobject ${name}`;
  if (theirs.startsWith(`${path}/`)) return `path ${path} is a directory of dataobject ${name}'s path ${theirs}`;
  return `path ${path} is inside dataobject ${name}'s path ${theirs}, a file`;
}

/**
 * Checks the DataObjects a request just wrote against every DataObject of their projects; throws
 * an OutpostError `conflict` (nothing is applied) with one detail per refused object.
 */
export function checkDataPaths(edges: Pick<EdgeState, 'liveness'>, objects: ObjectStore, applied: DataObject[]): void {
  const errors: { project: string; name: string; path: string; message: string }[] = [];
  const projects = new Set(applied.map((o) => o.metadata.project));
  for (const project of projects) {
    const all = objects.list<DataObject>('DataObject', project);
    const overlaps = overlappingPaths(all.map((o) => ({ name: o.metadata.name, path: dataObjectPath(o) })));
    if (overlaps.size === 0) continue;
    const live = edges.liveness(project);
    // Every current edge, approved or not, with its inventory labels: those change without an apply.
    const everyEdge = objects.list<Edge>('Edge', project).map((e) => ({
      name: e.metadata.name,
      labels: { ...live.get(e.metadata.name)?.inventoryLabels, ...e.metadata.labels },
      unschedulable: false,
    }));
    const byName = new Map(all.map((o) => [o.metadata.name, o]));
    const selected = new Map<string, Set<string>>();
    const selectedBy = (o: DataObject) =>
      selected.get(o.metadata.name) ??
      selected.set(o.metadata.name, new Set(selectEdges(everyEdge, o.spec))).get(o.metadata.name)!;
    for (const o of applied) {
      if (o.metadata.project !== project) continue;
      const mine = selectedBy(o);
      for (const otherName of [...(overlaps.get(o.metadata.name) ?? [])].sort()) {
        const other = byName.get(otherName)!;
        const both = [...selectedBy(other)].filter((e) => mine.has(e)).sort();
        if (!both.length) continue;
        errors.push({
          project,
          name: o.metadata.name,
          path: 'spec.path',
          message: `${overlapText(dataObjectPath(o), other)}: both would be delivered to ${both.length === 1 ? 'edge' : 'edges'} ${listNames(both)}; give one another path, narrow one's edgeSelector or edges, or delete dataobject ${otherName} first`,
        });
      }
    }
  }
  if (errors.length)
    throw new OutpostError('conflict', errors.map((e) => `DataObject ${e.name}: ${e.path}: ${e.message}`).join('; '), {
      details: errors,
    });
}

/**
 * Per object blocked somewhere, per edge, the object holding its path there. `objects` are one
 * project's; `selectedOf` the edges each reaches; `reportsOf` what the edges reported about an
 * object (data_progress). Objects whose paths overlap no other's cost nothing beyond a look at
 * their paths.
 */
export function blockedPaths(
  objects: DataObject[],
  selectedOf: (o: DataObject) => readonly string[],
  reportsOf: (name: string) => Map<string, DeliveryProgress>,
  /** Only the objects whose outcome can touch this one (those linked to it by overlapping paths). */
  only?: string,
): Map<string, Map<string, DataObject>> {
  const out = new Map<string, Map<string, DataObject>>();
  const overlaps = overlappingPaths(objects.map((o) => ({ name: o.metadata.name, path: dataObjectPath(o) })));
  if (overlaps.size === 0 || (only !== undefined && !overlaps.has(only))) return out;
  let involved: Set<string> = new Set(overlaps.keys());
  if (only !== undefined) {
    involved = new Set([only]);
    for (const n of involved) for (const m of overlaps.get(n)!) involved.add(m);
  }
  const byEdge = new Map<string, DataObject[]>();
  for (const o of objects) {
    if (!involved.has(o.metadata.name)) continue;
    for (const e of selectedOf(o)) (byEdge.get(e) ?? byEdge.set(e, []).get(e)!).push(o);
  }
  const reports = new Map<string, Map<string, DeliveryProgress>>();
  const reportOf = (name: string, edge: string) =>
    (reports.get(name) ?? reports.set(name, reportsOf(name)).get(name)!).get(edge);
  for (const [edge, here] of byEdge) {
    if (here.length < 2) continue;
    const claims = here.map((o) => ({ name: o.metadata.name, path: dataObjectPath(o), o }));
    for (const [name, holder] of pathHolders(byClaim(claims, (c) => reportOf(c.name, edge))))
      (out.get(name) ?? out.set(name, new Map()).get(name)!).set(edge, holder.o);
  }
  return out;
}

/** Why an edge is blocked for an object, with the fix: the text of its `Blocked` state. */
export function blockedReason(o: DataObject, holder: DataObject): string {
  return `${overlapText(dataObjectPath(o), holder)}, which holds it on this edge: give one another path, narrow one's edgeSelector or edges, or delete dataobject ${holder.metadata.name}`;
}
