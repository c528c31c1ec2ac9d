/**
 * @module The planner's record of how each AgentUpgrade's part on each edge ended (table
 * `agent_upgrade_outcomes`, hub/state/agent-upgrades.ts; what counts as finished:
 * hub/upgrades/claims.ts). Written by the planning replica in its pass (hub/upgrades/controller.ts):
 * an edge's final report on a release when it sees it, and, when an upgrade orders an edge, that
 * the others selecting it were superseded there.
 */
import type { AgentUpgradeProgress } from '../../core/mailbox.js';
import type { AgentUpgrade } from '../../core/resources.js';
import type { AgentUpgradeOutcome, AgentUpgradeRollouts } from '../state/agent-upgrades.js';
import { byPrecedence, outcomeOf, reportedOutcome } from './claims.js';

/** A project's upgrades, what each selects, and their recorded outcomes (upgrade -> edge -> outcome). */
export interface History {
  upgrades: AgentUpgrade[];
  selected: Map<string, string[]>;
  outcomes: Map<string, Map<string, AgentUpgradeOutcome>>;
}

/**
 * Each edge's final report on an upgrade's release (Running, RolledBack) becomes its history
 * there; returns those recorded in this pass (each the news of an event).
 */
export function recordOutcomes(
  rollouts: AgentUpgradeRollouts,
  project: string,
  h: History,
  progressOf: (edge: string) => AgentUpgradeProgress | undefined,
  now = Date.now(),
): { upgrade: AgentUpgrade; edge: string; outcome: AgentUpgradeOutcome }[] {
  const recorded: { upgrade: AgentUpgrade; edge: string; outcome: AgentUpgradeOutcome }[] = [];
  for (const u of h.upgrades)
    for (const e of h.selected.get(u.metadata.name) ?? []) {
      const o = reportedOutcome(u, progressOf(e), now);
      const rec = h.outcomes.get(u.metadata.name)?.get(e);
      // Recorded once per ending: the report's own clock says nothing new on the next pass.
      if (!o || (rec && rec.digest === o.digest && rec.state === o.state && rec.reason === o.reason)) continue;
      const by = rec?.digest === o.digest ? rec.by : undefined;
      const outcome = { ...o, ...(by ? { by } : {}) };
      if (rollouts.recordOutcome(project, u.metadata.name, e, outcome)) recorded.push({ upgrade: u, edge: e, outcome });
    }
  return recorded;
}

/**
 * `u` has just ordered `edge` (whose latest report is `p`): every other upgrade selecting it
 * records that. One that finished there notes who came after; one that comes after `u` in
 * precedence (applied before it) and had not finished there is Superseded, so deleting `u` later
 * does not hand the edge back to it.
 */
export function supersede(
  rollouts: AgentUpgradeRollouts,
  u: AgentUpgrade,
  edge: string,
  h: History,
  p: AgentUpgradeProgress | undefined,
  now = Date.now(),
): void {
  const project = u.metadata.project;
  const by = u.metadata.name;
  for (const w of h.upgrades) {
    const name = w.metadata.name;
    if (name === by || !h.selected.get(name)?.includes(edge)) continue;
    const o = outcomeOf(w, h.outcomes.get(name)?.get(edge), p, now);
    if (o) {
      if (o.by !== by) rollouts.recordOutcome(project, name, edge, { ...o, by });
    } else if (byPrecedence(u, w) < 0) {
      const last = p && p.upgrade === name && p.digest === w.spec.release.digest ? p.state : undefined;
      rollouts.recordOutcome(project, name, edge, {
        digest: w.spec.release.digest,
        version: w.spec.release.version,
        state: 'Superseded',
        by,
        ...(last ? { last } : {}),
        at: now,
      });
    }
  }
}
