/**
 * @module Status aggregation as pure functions: the state of one workload on one edge from what
 * the hub knows (`stateFromReport`), and summaries over many of them (`summarize`), the READY x/y
 * and "what is broken and why" that placements and edges show.
 *
 * Every state other than Ready carries a reason a user can act on: an edge that has gone quiet
 * shows as Stale with how long ago and what it last said, never as a bare "Unknown".
 */
import { formatAge } from './durations.js';
import {
  REPORTED_PHASES,
  STATE_RANK,
  worstState,
  type BrokenEntry,
  type ReportedPhase,
  type State,
  type Summary,
} from './status.js';
import type { ObservedRolloutState } from './rollout.js';

export interface StatusEntry {
  edge: string;
  workload: string;
  state: State;
  reason?: string;
  /** The object inside the workload the entry is about (`Deployment/web`), when known. */
  object?: string;
}

/** States listed under `broken`: something is wrong or we cannot tell. Paused and moving states are not. */
export const BROKEN_STATES: ReadonlySet<State> = new Set<State>(['Modified', 'Stale', 'Degraded', 'Failed', 'Error']);

const cmp = (a: string | undefined, b: string | undefined): number =>
  (a ?? '') < (b ?? '') ? -1 : (a ?? '') > (b ?? '') ? 1 : 0;

/**
 * Summarizes entries. `total` counts distinct (edge, workload) pairs; a pair with several entries
 * (one per object) takes its worst state. `broken` lists entries worst first, then by edge,
 * workload and object, at most `maxBroken` of them (the counts in `states` stay complete).
 */
export function summarize(entries: StatusEntry[], maxBroken = 10): Summary {
  const pairs = new Map<string, State>();
  for (const e of entries) {
    const key = `${e.edge}\u0000${e.workload}`;
    const cur = pairs.get(key);
    if (cur === undefined || STATE_RANK[e.state] > STATE_RANK[cur]) pairs.set(key, e.state);
  }
  const states: Partial<Record<State, number>> = {};
  for (const s of pairs.values()) states[s] = (states[s] ?? 0) + 1;
  const broken: BrokenEntry[] = entries
    .filter((e) => BROKEN_STATES.has(e.state))
    .sort(
      (a, b) =>
        STATE_RANK[b.state] - STATE_RANK[a.state] ||
        cmp(a.edge, b.edge) ||
        cmp(a.workload, b.workload) ||
        cmp(a.object, b.object),
    )
    .slice(0, Math.max(0, maxBroken))
    .map((e) => ({
      edge: e.edge,
      workload: e.workload,
      ...(e.object === undefined ? {} : { object: e.object }),
      reason: e.reason ?? `${e.state}: no reason reported`,
    }));
  const summary: Summary = { total: pairs.size, ready: states.Ready ?? 0, states, broken };
  const worst = worstState(pairs.values());
  if (worst !== undefined) summary.worst = worst;
  return summary;
}

/** One summary per edge (keys sorted), for `get edges` and an edge's READY x/y. */
export function summarizeByEdge(entries: StatusEntry[], maxBroken = 10): Record<string, Summary> {
  const groups = new Map<string, StatusEntry[]>();
  for (const e of entries) {
    const g = groups.get(e.edge);
    if (g) g.push(e);
    else groups.set(e.edge, [e]);
  }
  const out: Record<string, Summary> = {};
  for (const edge of [...groups.keys()].sort()) out[edge] = summarize(groups.get(edge)!, maxBroken);
  return out;
}

/** The READY column: `3/4`. */
export function readyColumn(s: Pick<Summary, 'ready' | 'total'>): string {
  return `${s.ready}/${s.total}`;
}

export interface ReportFacts {
  /** The spec generation the hub wrote for this workload on this edge. */
  generation: number;
  /** Set when the hub could not produce the workload for this edge (e.g. a template error). */
  specError?: string;
  /** What the edge last reported for the workload; absent if it never did. */
  reported?: { phase: ReportedPhase | string; observedGeneration: number; message?: string };
  online: boolean;
  /** Milliseconds since the edge was last heard from; absent if it never connected. */
  lastSeenAgoMs?: number;
}

export interface DerivedState {
  state: State;
  /** Absent only for Ready. */
  reason?: string;
}

const DEFAULT_REASON: Record<ReportedPhase, string | undefined> = {
  Ready: undefined,
  Progressing: 'starting on the edge',
  Pending: 'waiting on the edge',
  Paused: 'paused on site by a local intent',
  Modified: 'changed on the edge by someone else; the edge puts it back',
  Degraded: 'degraded, the edge gave no message',
  Failed: 'failed, the edge gave no message',
};

/**
 * The state of one workload on one edge. In order: a hub-side spec error wins (the edge applies
 * nothing); an offline edge is Stale with what it last said; no report yet is Pending; a report
 * about an older generation is Progressing; otherwise the reported phase, with its message.
 */
export function stateFromReport(f: ReportFacts): DerivedState {
  if (f.specError !== undefined) return { state: 'Error', reason: f.specError };
  const r = f.reported;
  if (!f.online) {
    if (f.lastSeenAgoMs === undefined)
      return {
        state: r ? 'Stale' : 'Pending',
        reason: r ? 'edge offline, last known ' + r.phase : 'waiting for the edge to connect for the first time',
      };
    const since = `edge offline for ${formatAge(f.lastSeenAgoMs)}`;
    if (!r) return { state: 'Stale', reason: `${since}, no status reported yet` };
    const older =
      r.observedGeneration < f.generation
        ? ` on generation ${r.observedGeneration} (generation ${f.generation} not applied yet)`
        : '';
    return { state: 'Stale', reason: `${since}, last known ${r.phase}${older}` };
  }
  if (!r) return { state: 'Pending', reason: 'waiting for the edge to report' };
  // A workload held on the edge (paused on site, or stopped by a remote action: the edge's message
  // says which and what runs it again) keeps whatever generation it had: a newer one waits.
  if (r.phase === 'Paused')
    return {
      state: 'Paused',
      reason:
        r.observedGeneration < f.generation
          ? `${r.message || DEFAULT_REASON.Paused} (held on the edge): generation ${f.generation} waits, generation ${r.observedGeneration} is held`
          : (r.message ?? DEFAULT_REASON.Paused),
    };
  if (r.observedGeneration < f.generation) {
    return {
      state: 'Progressing',
      reason: `edge is applying generation ${f.generation} (last reported ${r.phase} on generation ${r.observedGeneration})`,
    };
  }
  if (!(REPORTED_PHASES as readonly string[]).includes(r.phase)) {
    return {
      state: 'Pending',
      reason: `edge reported an unknown phase "${r.phase}"; check that the edge agent and the hub run compatible versions`,
    };
  }
  const phase = r.phase as ReportedPhase;
  const reason = r.message || DEFAULT_REASON[phase];
  return reason === undefined ? { state: phase } : { state: phase, reason };
}

/** What a rollout makes of each state of a workload on an online edge (Stale cannot occur there). */
const OUTCOME: Record<State, ObservedRolloutState> = {
  Ready: 'ready',
  Progressing: 'progressing',
  Pending: 'progressing',
  Paused: 'paused',
  Modified: 'progressing',
  Stale: 'progressing',
  Degraded: 'failed',
  Failed: 'failed',
  Error: 'failed',
};

/**
 * The one rule for "this workload failed on this edge" (and is ready, still moving, or held on
 * site), used by the summaries (through `stateFromReport`), the rollout's observation of each edge
 * and `outpost rollout resume`: a spec error, or Failed/Degraded reported on the current
 * generation. Connectivity is left out: a rollout judges an edge by what it last said.
 */
export function workloadOutcome(f: Omit<ReportFacts, 'online' | 'lastSeenAgoMs'>): ObservedRolloutState {
  return OUTCOME[stateFromReport({ ...f, online: true }).state];
}
