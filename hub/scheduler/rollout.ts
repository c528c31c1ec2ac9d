/**
 * @module Rollout observation and planning for one placement: what each selected edge has been
 * written and what it reports (one rule for ready/progressing/failed: core/summary.ts
 * `workloadOutcome`), then the pure planner (core/rollout.ts) decides which edges get their
 * target now. No state of its own and no I/O: the scheduler passes in what the tables hold.
 */
import { contentSetKey, edgeOutcome, planRollout, skipOfflineAfterMs } from '../../core/rollout.js';
import type { RolloutEdge, RolloutPlan } from '../../core/rollout.js';
import type { Placement } from '../../core/resources.js';
import { workloadOutcome } from '../../core/summary.js';
import { isOnline } from '../edges/phase.js';
import type { EdgeLiveness } from '../state/edges.js';
import type { AssignedStatus, AssignmentKey } from '../state/assignments.js';
import type { Selection } from './targets.js';

/** Rollout state of one placement, as the planner last decided. */
export interface RolloutStatus {
  phase: RolloutPlan['phase'];
  reason: string;
  counts: RolloutPlan['counts'];
  maxUnavailable: number;
  paused: boolean;
}

export interface Observation {
  selection: Selection;
  /** The placement's current assignments, per edge. */
  current: Map<string, AssignmentKey[]>;
  /** `edge/workload` -> the other placement holding that workload there. */
  heldElsewhere: Map<string, string>;
  /** `edge/workload` -> what the edge reported. */
  status: Map<string, AssignedStatus>;
  runtimes: Map<string, EdgeLiveness>;
  now: number;
}

/** The key of what is written to an edge: the same function as every target key. */
export const writtenKeyOf = (as: readonly AssignmentKey[]): string =>
  contentSetKey(as.map((a) => ({ workload: a.workload, key: a.contentKey })));

/** What the edge's reports say of its written assignments, by the one rule. */
export function observeAssignments(
  as: readonly AssignmentKey[],
  status: Map<string, AssignedStatus>,
): ReturnType<typeof edgeOutcome> {
  return edgeOutcome(
    as.map((a) => {
      const s = status.get(`${a.edge}/${a.workload}`);
      return workloadOutcome({
        generation: a.generation,
        ...(a.error ? { specError: a.error } : {}),
        ...(s ? { reported: { phase: s.phase, observedGeneration: s.observedGeneration } } : {}),
      });
    }),
  );
}

/** The planner's view of every selected edge: target, what is written, what it reports, online. */
export function observeEdges(o: Observation): RolloutEdge[] {
  const { selected, targets, targetKeys } = o.selection;
  const out: RolloutEdge[] = [];
  for (const e of selected) {
    let ts = targets.get(e)!;
    const cur = o.current.get(e) ?? [];
    let targetKey = targetKeys.get(e)!;
    // Another placement may already hold a workload on this edge (overlaps are refused at apply,
    // but an edge's labels can change later): that one keeps it, this one reports the edge as
    // blocked and never counts it ready. Its own part rolls out as usual: its target is what this
    // placement may write.
    const blocked: string[] = [];
    if (o.heldElsewhere.size) {
      for (const t of ts) {
        const holder = o.heldElsewhere.get(`${e}/${t.workload}`);
        if (holder) blocked.push(`${t.workload} (placement ${holder})`);
      }
      if (blocked.length) {
        ts = ts.filter((t) => !o.heldElsewhere.has(`${e}/${t.workload}`));
        targetKey = ts.length ? contentSetKey(ts) : 'blocked';
      }
    }
    const writtenKey = cur.length ? writtenKeyOf(cur) : undefined;
    let observed: RolloutEdge['observed'];
    if (writtenKey && cur.length === ts.length) {
      const state = observeAssignments(cur, o.status);
      // Only Paused rows carry `held` (the status read).
      const held =
        state === 'paused' ? cur.map((a) => o.status.get(`${a.edge}/${a.workload}`)?.held).find(Boolean) : undefined;
      observed = { key: writtenKey, state, ...(held ? { held } : {}) };
    }
    // Every workload of this edge held by another placement: nothing of this one to write or await.
    const nothingHere = blocked.length > 0 && !ts.length;
    if (nothingHere) observed = { key: targetKey, state: 'ready' };
    const rt = o.runtimes.get(e);
    const online = isOnline(rt, o.now);
    const since = rt?.lastSeen ?? rt?.enrolledAt;
    out.push({
      edge: e,
      targetKey,
      writtenKey: nothingHere ? targetKey : writtenKey,
      observed,
      online,
      ...(online || since === undefined ? {} : { offlineForMs: o.now - since }),
      ...(blocked.length ? { blocked } : {}),
    });
  }
  return out;
}

/** The plan for a placement; a workload it names that is gone fails it until the workload is back. */
export function planPlacement(
  placement: Placement,
  edges: RolloutEdge[],
  acknowledged: Record<string, string>,
  missingWorkloads: string[],
): RolloutPlan {
  const plan = planRollout({
    placement: placement.metadata.name,
    rollout: placement.spec.rollout,
    edges,
    acknowledgedFailures: acknowledged,
  });
  if (missingWorkloads.length) {
    // Refused at apply; a workload deleted later leaves the placement failed until it is back.
    const one = missingWorkloads.length === 1;
    plan.phase = 'Failed';
    plan.reason = `${one ? 'workload' : 'workloads'} ${missingWorkloads.join(', ')} not found in project ${placement.metadata.project}: apply ${one ? 'it' : 'them'} or remove ${one ? 'it' : 'them'} from the placement; ${plan.reason}`;
  }
  return plan;
}

/**
 * `outpost rollout resume`: the edges whose written assignments failed (by the one rule), each
 * with the key of what is written there, the key the planner compares its target with.
 */
export function failedEdges(
  assignments: readonly AssignmentKey[],
  status: Map<string, AssignedStatus>,
): Record<string, string> {
  const byEdge = new Map<string, AssignmentKey[]>();
  for (const a of assignments) (byEdge.get(a.edge) ?? byEdge.set(a.edge, []).get(a.edge)!).push(a);
  const failures: Record<string, string> = {};
  for (const [e, as] of byEdge) {
    const failed = as.some((a) => observeAssignments([a], status) === 'failed');
    if (failed) failures[e] = writtenKeyOf(as);
  }
  return failures;
}

/**
 * With `skipOfflineAfter` set, an offline edge the rollout still waits for is skipped once it has
 * been offline that long; nothing else happens at that moment, so a timer re-plans then. The
 * delay until the first such moment, or undefined when there is none.
 */
export function skipDelayMs(placement: Placement, edges: RolloutEdge[]): number | undefined {
  const after = placement.spec.rollout.skipOfflineAfter;
  if (after === undefined) return undefined;
  const limit = skipOfflineAfterMs(after)!;
  let next = Infinity;
  for (const e of edges)
    if (e.offlineForMs !== undefined && e.offlineForMs <= limit && e.observed?.state !== 'ready')
      next = Math.min(next, limit - e.offlineForMs);
  return next === Infinity ? undefined : next;
}
