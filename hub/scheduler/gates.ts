/**
 * @module Per-edge gates: preconditions an edge must meet before a placement's new version is
 * written to it (a package's dependency Ready there, hub/catalog/gate.ts). The module that owns a
 * precondition registers a gate (`Scheduler.addGate`); during a pass the scheduler asks every gate
 * about the selected edges whose target is not written yet, hands what they wait for to the
 * rollout planner (core/rollout.ts `waitingFor`: not written, no budget held, named in the
 * reason), and re-plans the placement when one of those edges reports.
 */
import type { Placement } from '../../core/resources.js';
import type { Target } from './targets.js';

/** What a gate may ask the scheduler. */
export interface GateContext {
  /** Every workload placement `project/placement` has written to `edge` is Ready there (the one rule). */
  readyOn(project: string, placement: string, edge: string): boolean;
  /** What the placement being planned should run on `edge` (its customized, pinned workloads). */
  targetsOn(edge: string): readonly Target[];
}

/** Edge -> what it waits for, in words (`package db ^1 Ready on it`); edges not in the map may go on. */
export type EdgeGate = (placement: Placement, edges: readonly string[], ctx: GateContext) => Map<string, string[]>;

/** Every gate's answer for these edges, merged. */
export function waitingFor(
  gates: readonly EdgeGate[],
  placement: Placement,
  edges: readonly string[],
  ctx: GateContext,
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  // Gates are asked with no edges too: a gate that keeps state per placement (the images gate's
  // staging orders) learns that every edge has the new version and forgets it.
  for (const gate of gates)
    for (const [edge, why] of gate(placement, edges, ctx)) out.set(edge, [...(out.get(edge) ?? []), ...why]);
  return out;
}
