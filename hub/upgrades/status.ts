/**
 * @module An AgentUpgrade's status as the API shows it (docs/api.md): from the rollout plan over the
 * edges it holds and those it finished on (hub/upgrades/controller.ts `plan`), each other selected
 * edge said for what it is, and a phase that tells history from waiting. Pure: writes nothing.
 */
import { FAILED_UPGRADE_STATES, type AgentUpgradeProgress } from '../../core/mailbox.js';
import type { RolloutCounts, RolloutPhase, RolloutPlan } from '../../core/rollout.js';
import type { AgentUpgradeOutcome } from '../state/agent-upgrades.js';

/** One selected edge as `describe agentupgrade` shows it. */
export interface AgentUpgradeEdgeStatus {
  edge: string;
  /**
   * An edge's own report on this upgrade (Pending ... Running, RolledBack, NoSpace, Refused), or
   * `Waiting`: held, not ordered yet; `Claimed`: a later AgentUpgrade holds it; `Superseded`: this
   * upgrade's part there is over and the edge has moved on (history, `reason` says how it ended);
   * `Newer`: it runs a newer version, and this upgrade does not downgrade without allowDowngrade.
   */
  state: AgentUpgradeProgress['state'] | 'Waiting' | 'Claimed' | 'Superseded' | 'Newer';
  percent?: number;
  reason?: string;
  /** The version the edge's agent runs now, as it last reported. */
  agentVersion?: string;
  online: boolean;
}

export interface AgentUpgradeStatus {
  phase: RolloutPhase;
  reason: string;
  counts: RolloutCounts;
  /** Edges running the release. */
  running: number;
  /** Edges that rolled back or could not take it (no space, refused). */
  rolledBack: number;
  maxUnavailable: number;
  edges: AgentUpgradeEdgeStatus[];
}

/** An edge the upgrade holds or finished on, as the planner saw it. */
export interface PlannedEdge {
  edge: string;
  online: boolean;
  /** Its latest report, if it is about this upgrade's release. */
  onTarget?: AgentUpgradeProgress;
  /** This upgrade's order is written to it (or is being written now). */
  ordered: boolean;
  /** How this upgrade's part there ended, if it did. */
  outcome?: AgentUpgradeOutcome;
}

export interface StatusInput {
  version: string;
  /** `spec.rollout.paused`. */
  paused: boolean;
  plan: RolloutPlan;
  /** The edges it holds or finished on (those Superseded before they finished are not the plan's). */
  planned: PlannedEdge[];
  /** Selected edges a later AgentUpgrade holds, this one not finished there. */
  claimed: { edge: string; holder: string; online: boolean }[];
  /** Selected edges that run a newer version than the release (it would downgrade them). */
  newer: { edge: string; runs: string; online: boolean }[];
  /** Edge -> the agent version it runs. */
  versions: Map<string, string>;
}

const list = (names: string[]) =>
  names.length <= 5 ? names.join(', ') : `${names.slice(0, 5).join(', ')} and ${names.length - 5} more`;

/** How a finished part ended, in words, for an edge that has moved on. */
function historyText(o: AgentUpgradeOutcome): string {
  const since = o.by ? `; AgentUpgrade ${o.by} ordered it since` : '; the edge has moved on since';
  if (o.state === 'Running') return `ran ${o.version}${since}`;
  if (o.state === 'RolledBack') return `rolled ${o.version} back${o.reason ? ` (${o.reason})` : ''}${since}`;
  return `AgentUpgrade ${o.by ?? 'a later one'} ordered it before this one finished here${o.last ? ` (it was ${o.last})` : ''}`;
}

export function upgradeStatus(s: StatusInput): AgentUpgradeStatus {
  const edges: AgentUpgradeEdgeStatus[] = [];
  const movedOn: string[] = [];
  const superseded: string[] = [];
  for (const p of s.planned) {
    const agentVersion = s.versions.get(p.edge);
    const base = { edge: p.edge, ...(agentVersion ? { agentVersion } : {}), online: p.online };
    if (p.outcome && !p.onTarget) {
      // History: the edge reports on something else now.
      (p.outcome.state === 'Superseded' ? superseded : movedOn).push(p.edge);
      edges.push({ ...base, state: 'Superseded', reason: historyText(p.outcome) });
      continue;
    }
    const t = p.onTarget;
    edges.push({
      ...base,
      state: t ? t.state : p.ordered ? 'Pending' : 'Waiting',
      ...(t?.percent !== undefined ? { percent: t.percent } : {}),
      ...(t?.reason ? { reason: t.reason } : {}),
    });
  }
  for (const c of s.claimed) {
    const agentVersion = s.versions.get(c.edge);
    edges.push({
      edge: c.edge,
      state: 'Claimed',
      reason: `AgentUpgrade ${c.holder} holds this edge (applied later: the newest AgentUpgrade selecting an edge holds it)`,
      ...(agentVersion ? { agentVersion } : {}),
      online: c.online,
    });
  }
  for (const n of s.newer)
    edges.push({
      edge: n.edge,
      state: 'Newer',
      reason: `runs ${n.runs}, newer than ${s.version}: not ordered (no downgrade without spec.allowDowngrade: true)`,
      agentVersion: n.runs,
      online: n.online,
    });
  edges.sort((a, b) => (a.edge < b.edge ? -1 : 1));

  const notes: string[] = [];
  if (movedOn.length) notes.push(`${list(movedOn)} moved on since`);
  if (superseded.length) notes.push(`superseded on ${list(superseded)} before it finished there`);
  if (s.newer.length)
    notes.push(
      `not ordered: ${list(s.newer.map((n) => `${n.edge} (runs ${n.runs})`))}, newer than ${s.version}; set spec.allowDowngrade: true to go back`,
    );
  if (s.claimed.length)
    notes.push(
      `held by later AgentUpgrades: ${list(s.claimed.map((c) => `${c.edge} (${c.holder})`))}; this one orders an edge again only if that one is deleted before it orders it`,
    );
  const also = notes.length ? `; ${notes.join('; ')}` : '';
  let { phase, reason } = s.plan;
  // The planner's Pending means "no edge selected": say what the selected edges are instead.
  const none = s.plan.phase === 'Pending' && s.plan.counts.total === 0;
  if (s.paused && s.plan.counts.total === 0) reason = `paused (spec.rollout.paused: true)${also}`;
  else if (none && s.claimed.length) {
    phase = 'Pending';
    reason = `every selected edge is held by a later AgentUpgrade${also}`;
  } else if (none && (s.newer.length || superseded.length)) {
    phase = 'Complete';
    reason = `nothing left to order${also}`;
  } else reason += also;
  return {
    phase,
    reason,
    counts: s.plan.counts,
    running: edges.filter((e) => e.state === 'Running').length,
    rolledBack: edges.filter((e) => (FAILED_UPGRADE_STATES as readonly string[]).includes(e.state)).length,
    maxUnavailable: s.plan.maxUnavailable,
    edges,
  };
}
