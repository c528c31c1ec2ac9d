/**
 * @module Assignment writes: turns one placement's rollout plan into assignment rows, in one
 * transaction. Reports which edges' assignments changed (their spec documents are to be written)
 * and which workloads left an edge (another placement naming them may take them there).
 */
import type { RolloutEdge } from '../../core/rollout.js';
import type { AssignmentKey, AssignmentStore } from '../state/assignments.js';
import type { Selection } from './targets.js';

export interface AssignInput {
  project: string;
  placement: string;
  selection: Selection;
  /** The placement's assignments before this pass, per edge. */
  current: Map<string, AssignmentKey[]>;
  /** `edge/workload` held by another placement: never taken over. */
  heldElsewhere: Map<string, string>;
  /** The planner's view of each selected edge. */
  edges: RolloutEdge[];
  /** Edges the plan writes now. */
  update: Iterable<string>;
}

export interface AssignResult {
  /** Edges whose assignments changed. */
  changed: Set<string>;
  /** Workloads this pass removed from some edge. */
  released: Set<string>;
}

export function writeAssignments(store: AssignmentStore, i: AssignInput): AssignResult {
  const changed = new Set<string>();
  const released = new Set<string>();
  const write = new Set(i.update);
  const byEdge = new Map(i.edges.map((r) => [r.edge, r]));
  store.transaction(() => {
    // What the edges to write last reported, in one read (not one per edge and workload).
    const toWrite = i.selection.selected.filter(
      (e) => byEdge.get(e)!.writtenKey !== byEdge.get(e)!.targetKey && write.has(e),
    );
    const observed = store.observedGenerations(toWrite);
    for (const e of i.selection.selected) {
      const r = byEdge.get(e)!;
      // Already written exactly what it should run (equal keys: the same workloads with the same
      // content): nothing to do. Most edges on most passes, so this check comes first.
      if (r.writtenKey === r.targetKey) continue;
      if (!write.has(e)) continue; // the rollout holds this edge on what it has
      const targets = i.selection.targets.get(e)!;
      const cur = new Map((i.current.get(e) ?? []).map((a) => [a.workload, a]));
      for (const t of targets) {
        if (i.heldElsewhere.has(`${e}/${t.workload}`)) continue; // never taken over
        const a = cur.get(t.workload);
        if (a && a.contentKey === t.key) continue;
        // Past anything the edge saw, even from an assignment since removed: the edge applies a
        // generation only when it is newer than the one it runs.
        const gen = Math.max(a?.generation ?? 0, observed.get(`${e}/${t.workload}`) ?? 0) + 1;
        store.put({
          edge: e,
          workload: t.workload,
          project: i.project,
          placement: i.placement,
          revision: t.revision,
          contentKey: t.key,
          generation: gen,
          manifests: t.manifests,
          ...(t.error === undefined ? {} : { error: t.error }),
        });
        changed.add(e);
      }
      // Workloads the placement no longer names leave this edge.
      for (const a of cur.values()) {
        if (!targets.some((t) => t.workload === a.workload)) {
          store.remove(e, a.workload);
          changed.add(e);
          released.add(a.workload);
        }
      }
    }
    // Edges no longer selected lose everything this placement gave them.
    const selected = new Set(i.selection.selected);
    for (const [e, as] of i.current) {
      if (selected.has(e)) continue;
      for (const a of as) {
        store.remove(e, a.workload, i.placement);
        released.add(a.workload);
      }
      changed.add(e);
    }
  });
  return { changed, released };
}
