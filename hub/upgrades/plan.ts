/**
 * @module One AgentUpgrade's rollout as the planner sees it (hub/upgrades/controller.ts): the rollout
 * planner (core/rollout.ts) over the edges it holds and those it finished on, as they ended (a
 * finished part counts as done or failed and is never ordered again; one superseded before it
 * finished is left out), and the selected edges it does not hold: Claimed by a later upgrade, or
 * Newer than its release (hub/upgrades/claims.ts). Pure: the caller gives what it read.
 */
import { FAILED_UPGRADE_STATES, type AgentUpgradeOrder, type AgentUpgradeProgress } from '../../core/mailbox.js';
import type { AgentUpgrade } from '../../core/resources.js';
import { planRollout, type RolloutEdge } from '../../core/rollout.js';
import { isOnline, type EdgeLiveness } from '../edges/phase.js';
import type { AgentUpgradeOutcome } from '../state/agent-upgrades.js';
import type { Claims } from './claims.js';

export const keyOf = (upgrade: string, digest: string) => `${upgrade}@${digest}`;

/** One project's AgentUpgrades and everything their claims are computed from. */
export interface ProjectView {
  upgrades: AgentUpgrade[];
  /** Upgrade name -> the edges it selects. */
  selected: Map<string, string[]>;
  live: Map<string, EdgeLiveness>;
  /** Edge -> the agent version it reported. */
  versions: Map<string, string>;
  /** Upgrade name -> edge -> recorded outcome. */
  outcomes: Map<string, Map<string, AgentUpgradeOutcome>>;
  claims: Claims;
}

export function planUpgrade(
  u: AgentUpgrade,
  v: ProjectView,
  orderOf: (edge: string) => AgentUpgradeOrder | undefined,
  progressOf: (edge: string) => AgentUpgradeProgress | undefined,
) {
  const name = u.metadata.name;
  const target = keyOf(name, u.spec.release.digest);
  const now = Date.now();
  const finished = v.claims.finished.get(name) ?? new Map<string, AgentUpgradeOutcome>();
  const selected = v.selected.get(name) ?? [];
  const online = (e: string) => isOnline(v.live.get(e), now);
  const rows = selected
    .filter((e) => v.claims.holder.get(e) === name || finished.has(e))
    .map((e) => {
      const outcome = finished.get(e);
      const written = outcome ? undefined : orderOf(e);
      const progress = progressOf(e);
      const onTarget = progress && keyOf(progress.upgrade, progress.digest) === target ? progress : undefined;
      const observed = outcome
        ? outcome.state === 'Superseded'
          ? undefined
          : { key: target, state: outcome.state === 'Running' ? ('ready' as const) : ('failed' as const) }
        : progress && {
            key: keyOf(progress.upgrade, progress.digest),
            state:
              progress.state === 'Running'
                ? ('ready' as const)
                : FAILED_UPGRADE_STATES.includes(progress.state)
                  ? ('failed' as const)
                  : ('progressing' as const),
          };
      const re: RolloutEdge = {
        edge: e,
        targetKey: target,
        online: online(e),
        // A finished part is written as far as the planner is concerned: it is never ordered again.
        ...(outcome
          ? { writtenKey: target }
          : written
            ? { writtenKey: keyOf(written.upgrade, written.release.digest) }
            : {}),
        ...(observed ? { observed } : {}),
      };
      return { re, written, outcome, onTarget, online: re.online!, synced: v.live.get(e)?.lastSeen !== undefined };
    });
  const planned = rows.filter((r) => r.outcome?.state !== 'Superseded');
  const plan = planRollout({
    placement: name,
    rollout: u.spec.rollout,
    edges: planned.map((r) => r.re),
    advice: {
      // There is no resume for an upgrade: its failed edges hold the budget until fixed.
      resume: u.spec.rollout.paused
        ? `set spec.rollout.paused: false in AgentUpgrade ${name}`
        : `raise spec.rollout.failureThreshold of AgentUpgrade ${name} (and maxUnavailable: failed edges count toward it)`,
      fix: 'apply a fixed release (a new digest starts over)',
    },
  });
  const claimed = selected
    .filter((e) => !finished.has(e) && !v.claims.newer.get(name)?.has(e) && v.claims.holder.get(e) !== name)
    .map((e) => ({ edge: e, holder: v.claims.holder.get(e)!, online: online(e) }))
    .filter((c) => c.holder);
  const newer = [...(v.claims.newer.get(name) ?? [])].map(([edge, runs]) => ({ edge, runs, online: online(edge) }));
  return { plan, rows, claimed, newer, target };
}
