/**
 * @module The rollout planner: which selected edges get a placement's new content now.
 *
 * Pure and stateless: the hub calls `planRollout` on every relevant change (content, selection,
 * report, resume) with what it knows, writes the target content to the edges in `update`, and
 * shows `phase`/`reason`/`counts` as the placement's rollout status. Everything the planner needs
 * to remember lives in the inputs: the key written to each edge's spec is the rollout's progress.
 *
 * Per selected edge (`RolloutEdge`):
 * - `targetKey`  the content the edge should end up with (e.g. `manifestHash` of its customized
 *                workloads: edges customized differently have different keys).
 * - `writtenKey` the content currently written to its spec (undefined: nothing yet, a new edge).
 * - `observed`   its last report: which key it was about and whether that was ready, progressing
 *                or failed. `online: false` keeps the last report but marks it as not fresh.
 *
 * An edge is
 * - done        when it reports ready on its target key (it is also written if it was not: free);
 * - failed      when it is written and reports failed on its target key;
 * - in flight   when it is written and neither ready nor failed on it (offline edges included);
 * - pending     when its target is not written yet.
 *
 * Pending edges are written in batches so that in-flight plus unacknowledged failed edges never
 * exceed `maxUnavailable` (an integer or "N%" of the selected edges, rounded down, at least 1).
 * Online edges go first, then by name, so an offline edge does not hold the budget while online
 * ones wait. Once `failureThreshold` edges failed on the new content, no more edges are written
 * (edges already written keep it): phase Paused. `outpost rollout resume` acknowledges the current
 * failures (`acknowledgedFailures` = the plan's `failures`) and unpauses: acknowledged failures
 * neither count toward the threshold nor hold the budget, until the edge's target key changes.
 * `paused: true` writes nothing at all. Edges that join the selection mid-rollout are pending
 * edges like any other. An in-flight edge that stays offline holds its share of the budget;
 * drain it (unschedulable) or raise maxUnavailable to go on without it.
 *
 * @example
 * const plan = planRollout({ placement: 'web', rollout: p.spec.rollout, edges });
 * for (const e of plan.update) writeSpec(e, target[e]);
 */
import type { Rollout } from './resources.js';

export type ObservedRolloutState = 'ready' | 'progressing' | 'failed';

export interface RolloutEdge {
  edge: string;
  targetKey: string;
  writtenKey?: string;
  observed?: { key: string; state: ObservedRolloutState };
  /** Default true. */
  online?: boolean;
}

export interface RolloutInput {
  /** Placement name, for the commands in `reason`. */
  placement: string;
  rollout: Partial<Rollout>;
  edges: RolloutEdge[];
  /** Edge -> the target key whose failure the operator accepted with `outpost rollout resume`. */
  acknowledgedFailures?: Record<string, string>;
}

export type RolloutPhase = 'Progressing' | 'Paused' | 'Complete' | 'Failed';

export interface RolloutCounts {
  /** Selected edges. */
  total: number;
  /** Edges whose spec holds the target content once `update` is written. */
  updated: number;
  /** Updated edges that report ready on it. */
  ready: number;
  /** Updated edges that report failed on it (acknowledged ones included). */
  failed: number;
  /** Edges still waiting for the target content. */
  pending: number;
}

export interface RolloutPlan {
  /** Edges to write their target content to now, sorted. */
  update: string[];
  phase: RolloutPhase;
  reason: string;
  counts: RolloutCounts;
  /** The resolved maxUnavailable, as an edge count. */
  maxUnavailable: number;
  /** Edge -> key it failed on; what `resume` stores as `acknowledgedFailures`. */
  failures: Record<string, string>;
}

/** `maxUnavailable` as an edge count: "N%" of `total` rounded down; at least 1 so a rollout can always start. */
export function resolveMaxUnavailable(value: number | string | undefined, total: number): number {
  let n: number;
  if (value === undefined) n = total;
  else if (typeof value === 'number') n = value;
  else {
    const m = /^(\d{1,3})%$/.exec(value.trim());
    if (!m) throw new Error(`invalid maxUnavailable "${value}": use a number of edges or a percentage like "25%"`);
    n = Math.floor((total * Number(m[1])) / 100);
  }
  return Math.max(1, Math.min(Math.floor(n), Math.max(total, 1)));
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

function listNames(names: string[], max = 5): string {
  return names.length <= max ? names.join(', ') : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

type Class = 'done' | 'free' | 'failed' | 'inflight' | 'pending';

function classify(e: RolloutEdge): Class {
  const onTarget = e.observed?.key === e.targetKey ? e.observed.state : undefined;
  const written = e.writtenKey === e.targetKey;
  if (onTarget === 'ready') return written ? 'done' : 'free';
  if (!written) return 'pending';
  return onTarget === 'failed' ? 'failed' : 'inflight';
}

export function planRollout(input: RolloutInput): RolloutPlan {
  const { placement, rollout } = input;
  const acked = input.acknowledgedFailures ?? {};
  const threshold = Math.max(1, rollout.failureThreshold ?? 1);
  const edges = [...new Map(input.edges.map((e) => [e.edge, e])).values()].sort((a, b) =>
    a.edge < b.edge ? -1 : a.edge > b.edge ? 1 : 0,
  );
  const total = edges.length;
  const maxUnavailable = resolveMaxUnavailable(rollout.maxUnavailable, total);

  const by: Record<Class, RolloutEdge[]> = { done: [], free: [], failed: [], inflight: [], pending: [] };
  for (const e of edges) by[classify(e)].push(e);
  const failures = Object.fromEntries(by.failed.map((e) => [e.edge, e.targetKey]));
  const unackedFailed = by.failed.filter((e) => acked[e.edge] !== e.targetKey);
  const unavailable = by.inflight.length + unackedFailed.length;
  const halted = unackedFailed.length >= threshold;

  const update: string[] = [];
  if (!rollout.paused) {
    // Already ready on the target: writing it costs no availability.
    update.push(...by.free.map((e) => e.edge));
    if (!halted) {
      const budget = Math.max(0, maxUnavailable - unavailable);
      const candidates = [...by.pending].sort((a, b) => Number(a.online === false) - Number(b.online === false));
      update.push(...candidates.slice(0, budget).map((e) => e.edge));
    }
  }
  update.sort();

  const updated = by.done.length + by.failed.length + by.inflight.length + update.length;
  const ready = by.done.length + (rollout.paused ? 0 : by.free.length);
  const counts: RolloutCounts = { total, updated, ready, failed: by.failed.length, pending: total - updated };
  const progress = `${updated} of ${plural(total, 'edge')} updated, ${ready} ready`;
  const resume = `run \`outpost rollout resume placement ${placement}\``;

  let phase: RolloutPhase;
  let reason: string;
  if (rollout.paused) {
    phase = 'Paused';
    reason =
      ready === total
        ? `paused by user; ${total === 1 ? 'the edge is' : `all ${total} edges are`} up to date; ${resume} to roll out later changes`
        : `paused by user; ${progress}; ${resume} to continue`;
  } else if (total === 0) {
    phase = 'Complete';
    reason = 'no edges selected';
  } else if (ready === total) {
    phase = 'Complete';
    reason = `all ${plural(total, 'edge')} ready on the new version`;
  } else if (halted && counts.pending > 0) {
    phase = 'Paused';
    const n = unackedFailed.length;
    reason = `paused: ${plural(n, 'edge')} failed on the new version (threshold ${threshold}): ${listNames(unackedFailed.map((e) => e.edge))}; fix the workload or ${resume} to go on anyway`;
  } else if (counts.pending === 0 && by.failed.length > 0 && by.failed.length + ready === total) {
    phase = 'Failed';
    reason = `${by.failed.length} of ${plural(total, 'edge')} failed on the new version: ${listNames(by.failed.map((e) => e.edge))}`;
  } else {
    phase = 'Progressing';
    const writtenNow = new Set(update);
    const waiting = [...by.inflight, ...by.pending.filter((e) => writtenNow.has(e.edge))]
      .sort((a, b) => (a.edge < b.edge ? -1 : 1))
      .map((e) => (e.online === false ? `${e.edge} (offline)` : e.edge));
    reason = `${progress}`;
    if (by.failed.length > 0) reason += `, ${by.failed.length} failed`;
    if (waiting.length > 0) reason += `; waiting for ${listNames(waiting)}`;
    reason += `; at most ${maxUnavailable} unavailable at once`;
  }
  return { update, phase, reason, counts, maxUnavailable, failures };
}
