/** @module Workload states, their rank (worst first wins a summary), and the summary type. */

/** States of one workload on one edge, as the hub shows them. */
export const STATES = [
  'Ready',
  'Progressing',
  'Pending',
  'Paused',
  'Modified',
  'Stale',
  'Degraded',
  'Failed',
  'Error',
] as const;
export type State = (typeof STATES)[number];

/**
 * Rank: higher is worse. Ready < Pending/Progressing (moving) < Paused (held on purpose) <
 * Modified (someone changed an applied object in place; the edge puts it back on its next pass) <
 * Stale (we have not heard for a while) < Degraded < Failed < Error (it cannot even be applied,
 * e.g. a customization referring to a missing edge property).
 */
export const STATE_RANK: Record<State, number> = {
  Ready: 0,
  Progressing: 1,
  Pending: 2,
  Paused: 3,
  Modified: 4,
  Stale: 5,
  Degraded: 6,
  Failed: 7,
  Error: 8,
};

/** Phases an edge reports for a workload (the subset of states an edge itself can observe). */
export const REPORTED_PHASES = ['Pending', 'Progressing', 'Ready', 'Degraded', 'Failed', 'Paused', 'Modified'] as const;
export type ReportedPhase = (typeof REPORTED_PHASES)[number];

export function worstState(states: Iterable<State>): State | undefined {
  let worst: State | undefined;
  for (const s of states) if (worst === undefined || STATE_RANK[s] > STATE_RANK[worst]) worst = s;
  return worst;
}

export interface BrokenEntry {
  edge: string;
  workload: string;
  object?: string;
  reason: string;
}

export interface Summary {
  total: number;
  ready: number;
  states: Partial<Record<State, number>>;
  worst?: State;
  broken: BrokenEntry[];
}
