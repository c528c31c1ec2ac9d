/**
 * @module The gates (gates.ts) during a pass, and who waits on them: the registered gates are asked
 * about the selected edges of a placement whose target is not written yet, what each edge waits for
 * is set on it for the rollout planner (`waitingFor`), and which placements wait on which edge is
 * kept, so that the edge's reports re-plan them (status-marks.ts).
 */
import type { Placement } from '../../core/resources.js';
import type { RolloutEdge } from '../../core/rollout.js';
import type { AssignmentKey, AssignmentStore } from '../state/assignments.js';
import { waitingFor, type EdgeGate, type GateContext } from './gates.js';
import { observeAssignments } from './rollout.js';
import type { Target } from './targets.js';

export class GateWaits {
  /** Preconditions per edge (gates.ts), registered by the modules that own them. */
  private readonly gates: EdgeGate[] = [];
  /** Edge -> placements (`project/name`) whose new version waits for a gate on it: its reports re-plan them. */
  private readonly waitingOn = new Map<string, Set<string>>();
  /** The other way round: placement -> the edges it waits on. */
  private readonly waitsOf = new Map<string, string[]>();

  constructor(private readonly assignments: AssignmentStore) {}

  /** A precondition edges must meet before a placement's new version is written to them. */
  add(gate: EdgeGate): void {
    this.gates.push(gate);
  }

  /** The placements (`project/name`) whose new version waits for a gate on `edge`. */
  on(edge: string): ReadonlySet<string> | undefined {
    return this.waitingOn.get(edge);
  }

  /**
   * Asks every gate about the edges of placement `key` not written their target yet, sets on each
   * edge what it waits for, and records the edges the placement waits on. Nothing without gates.
   */
  ask(key: string, placement: Placement, edges: RolloutEdge[], targets: ReadonlyMap<string, Target[]>): void {
    if (!this.gates.length) return;
    const unwritten = edges.filter((e) => e.writtenKey !== e.targetKey).map((e) => e.edge);
    const waits = waitingFor(this.gates, placement, unwritten, this.gateContext(targets));
    for (const e of edges) {
      const why = waits.get(e.edge);
      if (why?.length) e.waitingFor = why;
    }
    this.setWaiting(key, [...waits.keys()]);
  }

  /** Records which edges placement `key` waits on (replacing what it waited on before). */
  setWaiting(key: string, edges: string[]): void {
    for (const edge of this.waitsOf.get(key) ?? []) {
      const keys = this.waitingOn.get(edge);
      keys?.delete(key);
      if (keys && !keys.size) this.waitingOn.delete(edge);
    }
    if (edges.length) this.waitsOf.set(key, edges);
    else this.waitsOf.delete(key);
    for (const e of edges) (this.waitingOn.get(e) ?? this.waitingOn.set(e, new Set()).get(e)!).add(key);
  }

  /** What gates may ask, memoized for one pass of one placement. */
  private gateContext(targets: ReadonlyMap<string, Target[]>): GateContext {
    const byPlacement = new Map<
      string,
      { keys: Map<string, AssignmentKey[]>; status: ReturnType<AssignmentStore['statusForPlacement']> }
    >();
    return {
      targetsOn: (edge) => targets.get(edge) ?? [],
      readyOn: (project, placement, edge) => {
        const k = `${project}/${placement}`;
        let p = byPlacement.get(k);
        if (!p) {
          const keys = new Map<string, AssignmentKey[]>();
          for (const a of this.assignments.keysForPlacement(project, placement))
            (keys.get(a.edge) ?? keys.set(a.edge, []).get(a.edge)!).push(a);
          p = { keys, status: this.assignments.statusForPlacement(project, placement) };
          byPlacement.set(k, p);
        }
        const on = p.keys.get(edge);
        return !!on?.length && observeAssignments(on, p.status) === 'ready';
      },
    };
  }
}
