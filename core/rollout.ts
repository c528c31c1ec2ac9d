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
 * drain it (unschedulable), raise maxUnavailable, or set `skipOfflineAfter` to go on without it.
 *
 * Three kinds of edges the rollout cannot move are set apart, shown by name in `reason` and
 * counted in `counts`, and never hold the budget:
 * - held     (`observed.state` 'paused'): paused on site, or stopped by a remote action. Its target is written
 *            (free: it runs nothing new until resumed); while it holds, the phase is at best
 *            Paused ("held on e1"), never Complete.
 * - skipped  (`offlineForMs` > `skipOfflineAfter`): offline too long. Not written; the phase can
 *            be Complete without it, and the reason names it. When it returns it is pending again.
 * - blocked  (`blocked`: workloads another placement holds on this edge): the edge's own part
 *            rolls out as usual but the edge never counts as ready, so a placement whose edge
 *            lacks one of its workloads is never Complete (Failed once nothing else moves).
 * - waiting  (`waitingFor`: a precondition on this edge is not met yet, e.g. a package's
 *            dependency is not Ready there): its target is not written until it is; it holds no
 *            budget, and the rollout is Progressing while any edge waits.
 *
 * @example
 * const plan = planRollout({ placement: 'web', rollout: p.spec.rollout, edges });
 * for (const e of plan.update) writeSpec(e, target[e]);
 */
import { createHash } from 'node:crypto';
import type { EffectiveRollout } from './api/types.js';
import { DEFAULT_MAX_UNAVAILABLE, type Rollout } from './resources.js';

export type ObservedRolloutState = 'ready' | 'progressing' | 'failed' | 'paused';

export interface RolloutEdge {
  edge: string;
  targetKey: string;
  writtenKey?: string;
  /** `held`: for a held edge, why, as the edge says it (the reason of its held workload), when it did. */
  observed?: { key: string; state: ObservedRolloutState; held?: string };
  /** Default true. */
  online?: boolean;
  /** How long the edge has been offline (or, never connected, enrolled): for `skipOfflineAfter`. */
  offlineForMs?: number;
  /** Workloads of the placement this edge lacks because another placement holds them: `web (placement dup)`. */
  blocked?: string[];
  /** What this edge must have before its target is written: `package db ^1 Ready on it`. */
  waitingFor?: string[];
}

/**
 * An edge's observed state from its workloads' outcomes (core/summary.ts `workloadOutcome`), in
 * workload order: the first failed or paused workload decides; else any progressing one makes the
 * edge progressing; else it is ready.
 */
export function edgeOutcome(outcomes: Iterable<ObservedRolloutState>): ObservedRolloutState {
  let out: ObservedRolloutState = 'ready';
  for (const o of outcomes) {
    if (o === 'failed' || o === 'paused') return o;
    if (o === 'progressing') out = 'progressing';
  }
  return out;
}

const keyMemo = new Map<string, string>();

/**
 * The one key of an edge's set of (workload, content key): equal sets, equal keys, whatever the
 * order. It is every key the planner compares (`targetKey`, `writtenKey`, `observed.key`) and what
 * `outpost rollout resume` stores as an acknowledged failure: a second way of computing it would
 * make resume silently acknowledge nothing. Memoized: the same few sets recur on every edge and pass.
 */
export function contentSetKey(items: readonly { workload: string; key: string }[]): string {
  const joined = items
    .map((t) => `${t.workload}=${t.key}`)
    .sort()
    .join('\n');
  const known = keyMemo.get(joined);
  if (known !== undefined) return known;
  if (keyMemo.size > 10_000) keyMemo.clear();
  const key = createHash('sha256').update(joined).digest('hex').slice(0, 16);
  keyMemo.set(joined, key);
  return key;
}

export interface RolloutInput {
  /** Placement name, for the commands in `reason`. */
  placement: string;
  rollout: Partial<Rollout>;
  edges: RolloutEdge[];
  /** Edge -> the target key whose failure the operator accepted with `outpost rollout resume`. */
  acknowledgedFailures?: Record<string, string>;
  /** What to tell the operator on a pause (default: placement wording, `outpost rollout resume placement NAME`). */
  advice?: { resume: string; fix: string };
}

/** Pending: no edge is selected (nothing to roll out until one matches). */
export type RolloutPhase = 'Progressing' | 'Paused' | 'Complete' | 'Failed' | 'Pending';

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
  /** Edges paused on site by a local intent (their target may be written; they run nothing new). */
  held: number;
  /** Edges offline longer than `skipOfflineAfter`, left out of this rollout. */
  skipped: number;
  /** Edges lacking a workload of the placement because another placement holds it there. */
  blocked: number;
  /** Edges whose target waits for a precondition on the edge (`waitingFor`). */
  waiting: number;
}

/** `1 edge at a time of 4 (maxUnavailable 25%, the default); pauses after 1 failure`. */
export function effectiveRolloutText(r: EffectiveRollout): string {
  const given = `maxUnavailable ${r.maxUnavailable}${r.defaulted ? ', the default' : ''}`;
  const when = r.batch >= r.edges && r.edges > 1 ? 'all at once' : 'at a time';
  return `${plural(r.batch, 'edge')} ${when} of ${r.edges} (${given}); pauses after ${plural(r.failureThreshold, 'failure')}`;
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
  if (value === undefined) value = DEFAULT_MAX_UNAVAILABLE;
  if (typeof value === 'number') n = value;
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

/**
 * Where the rollout is held and why: each edge with the reason it gave (a pause on site, a remote
 * stop, and what runs the workload again), the first three; without reasons (an older agent) the
 * names and every way a workload is held.
 */
function heldOn(edges: RolloutEdge[]): string {
  if (!edges.some((e) => e.observed?.held))
    return `held on ${listNames(edges.map((e) => e.edge))} (paused on site or stopped by a remote action: \`outpost edge local resume\` there, \`outpost edge clear EDGE WORKLOAD\` or \`outpost edge action EDGE start WORKLOAD\`; the edge's status says which)`;
  const shown = edges.slice(0, 3).map((e) => `${e.edge} (${e.observed?.held ?? 'its status says why'})`);
  const more = edges.length - shown.length;
  return `held on ${shown.join(', ')}${more ? ` and ${plural(more, 'more edge')} (each one's status says why)` : ''}`;
}

type Class = 'done' | 'free' | 'failed' | 'inflight' | 'pending' | 'held' | 'skipped' | 'waiting';

function classify(e: RolloutEdge, skipAfterMs: number | undefined): Class {
  const onTarget = e.observed?.key === e.targetKey ? e.observed.state : undefined;
  const written = e.writtenKey === e.targetKey;
  if (onTarget === 'ready') return written ? 'done' : 'free';
  if (e.observed?.state === 'paused') return 'held';
  if (skipAfterMs !== undefined && e.online === false && (e.offlineForMs ?? 0) > skipAfterMs) return 'skipped';
  if (!written) return e.waitingFor?.length ? 'waiting' : 'pending';
  return onTarget === 'failed' ? 'failed' : 'inflight';
}

/** `skipOfflineAfter` in milliseconds (`90s`, `15m`, `1h`, `7d`), or undefined when unset. */
export function skipOfflineAfterMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(value.trim());
  if (!m) throw new Error(`invalid skipOfflineAfter "${value}": use a duration like 90s, 15m, 1h or 7d`);
  return Math.round(Number(m[1]) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2]]!);
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

  const skipAfter = skipOfflineAfterMs(rollout.skipOfflineAfter);
  const by: Record<Class, RolloutEdge[]> = {
    done: [],
    free: [],
    failed: [],
    inflight: [],
    pending: [],
    held: [],
    skipped: [],
    waiting: [],
  };
  for (const e of edges) by[classify(e, skipAfter)].push(e);
  const blocked = edges.filter((e) => e.blocked?.length);
  const isBlocked = new Set(blocked.map((e) => e.edge));
  const failures = Object.fromEntries(by.failed.map((e) => [e.edge, e.targetKey]));
  const unackedFailed = by.failed.filter((e) => acked[e.edge] !== e.targetKey);
  const unavailable = by.inflight.length + unackedFailed.length;
  const halted = unackedFailed.length >= threshold;

  const update: string[] = [];
  if (!rollout.paused) {
    // Already ready on the target, or held on site (it runs nothing new until resumed): writing
    // it costs no availability.
    update.push(...by.free.map((e) => e.edge));
    update.push(...by.held.filter((e) => e.writtenKey !== e.targetKey).map((e) => e.edge));
    if (!halted) {
      const budget = Math.max(0, maxUnavailable - unavailable);
      const candidates = [...by.pending].sort((a, b) => Number(a.online === false) - Number(b.online === false));
      update.push(...candidates.slice(0, budget).map((e) => e.edge));
    }
  }
  update.sort();

  const heldWritten = by.held.filter((e) => e.writtenKey === e.targetKey).length;
  const updated = by.done.length + by.failed.length + by.inflight.length + heldWritten + update.length;
  const readyEdges = [...by.done, ...(rollout.paused ? [] : by.free)];
  const ready = readyEdges.filter((e) => !isBlocked.has(e.edge)).length;
  const counts: RolloutCounts = {
    total,
    updated,
    ready,
    failed: by.failed.length,
    pending: total - updated - by.skipped.length,
    held: by.held.length,
    skipped: by.skipped.length,
    blocked: blocked.length,
    waiting: by.waiting.length,
  };
  const progress = `${updated} of ${plural(total, 'edge')} updated, ${ready} ready`;
  const resume = input.advice?.resume ?? `run \`outpost rollout resume placement ${placement}\``;
  const fix = input.advice?.fix ?? 'fix the workload';
  // Everything the rollout does not wait for, each named (appended to every reason but "paused by user").
  const apart: string[] = [];
  if (by.held.length) apart.push(heldOn(by.held));
  if (by.skipped.length)
    apart.push(
      `skipped ${plural(by.skipped.length, 'edge')} offline longer than ${rollout.skipOfflineAfter}: ${listNames(by.skipped.map((e) => e.edge))}`,
    );
  if (by.waiting.length)
    apart.push(
      `waiting on ${listNames(by.waiting.map((e) => `${e.edge} for ${e.waitingFor!.join(', ')}`))} before writing the new version there`,
    );
  if (blocked.length)
    apart.push(
      `blocked on ${listNames(blocked.map((e) => `${e.edge} (${e.blocked!.join(', ')})`))}: another placement holds the workload there; delete that placement or narrow one selector`,
    );
  const also = apart.length ? `; ${apart.join('; ')}` : '';
  // Edges not waited for: with every other edge ready, the rollout has gone as far as it can.
  const settled = new Set([...readyEdges, ...by.held, ...by.skipped].map((e) => e.edge)).size;

  let phase: RolloutPhase;
  let reason: string;
  if (rollout.paused) {
    phase = 'Paused';
    reason =
      ready === total
        ? `paused by user; ${total === 1 ? 'the edge is' : `all ${total} edges are`} up to date; ${resume} to roll out later changes`
        : `paused by user; ${progress}; ${resume} to continue`;
  } else if (total === 0) {
    phase = 'Pending';
    reason = 'no edge selected: no approved, schedulable edge matches the selector; it starts when one does';
  } else if (ready === total) {
    phase = 'Complete';
    reason = `all ${plural(total, 'edge')} ready on the new version`;
  } else if (settled === total && blocked.length) {
    phase = 'Failed';
    reason = `${progress}${also}`;
  } else if (settled === total && by.held.length) {
    phase = 'Paused';
    reason = `${progress}${also}`;
  } else if (settled === total) {
    phase = 'Complete';
    reason = `all ${plural(ready, 'edge')} ready on the new version${also}`;
  } else if (halted && counts.pending > 0) {
    phase = 'Paused';
    const n = unackedFailed.length;
    reason = `paused: ${plural(n, 'edge')} failed on the new version (threshold ${threshold}): ${listNames(unackedFailed.map((e) => e.edge))}; ${fix} or ${resume} to go on anyway${also}`;
  } else if (counts.pending === 0 && by.failed.length > 0 && by.failed.length + settled === total) {
    phase = 'Failed';
    reason = `${by.failed.length} of ${plural(total, 'edge')} failed on the new version: ${listNames(by.failed.map((e) => e.edge))}${also}`;
  } else {
    phase = 'Progressing';
    const writtenNow = new Set(update);
    const waiting = [...by.inflight, ...by.pending.filter((e) => writtenNow.has(e.edge))]
      .sort((a, b) => (a.edge < b.edge ? -1 : 1))
      .map((e) => (e.online === false ? `${e.edge} (offline)` : e.edge));
    reason = `${progress}`;
    if (by.failed.length > 0) reason += `, ${by.failed.length} failed`;
    if (waiting.length > 0) reason += `; waiting for ${listNames(waiting)}`;
    reason += `; at most ${maxUnavailable} unavailable at once${also}`;
  }
  return { update, phase, reason, counts, maxUnavailable, failures };
}
