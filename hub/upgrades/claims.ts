/**
 * @module Which AgentUpgrade holds which edge (docs/operations.md, "Upgrading edges from the hub:
 * AgentUpgrade", "Several AgentUpgrades"). Pure: the controller (hub/upgrades/controller.ts) gives
 * it the project's upgrades, what each selects, their recorded outcomes, the edges' progress and
 * the versions they run.
 *
 * - **Precedence.** The most recently created AgentUpgrade comes first (`metadata.creationTimestamp`;
 *   an apply that changes an object does not make it newer), then the newer release (semver), then
 *   the name. So with the default names `agent-0-3-0` applied after `agent-0-2-0` holds the edges
 *   they share, whatever the names sort like.
 * - **Finished parts are history.** An upgrade's part on an edge ends when the edge ran its release
 *   (`Running`) or rolled it back (`RolledBack`: it never tries the same binary again), or when a
 *   later AgentUpgrade ordered the edge first (`Superseded`). From then on the upgrade never holds
 *   that edge again: deleting the later upgrade does not hand the edge back, so nothing is undone
 *   behind the operator's back. `Refused` and `NoSpace` are not final (an edge looks at a refused
 *   order again when it changes, and retries after a restart): the upgrade holds the edge on.
 * - **No downgrade without the flag.** An upgrade whose release is older (semver) than the version
 *   an edge runs does not hold that edge unless it says `allowDowngrade: true`; the edge goes to
 *   the next upgrade in precedence, if any.
 *
 * An edge is held by the first upgrade in precedence that selects it, has not finished there and
 * would not downgrade it; every other upgrade selecting it shows it as Claimed (by a later one),
 * Newer (it would be a downgrade) or history.
 */
import semver from 'semver';
import type { AgentUpgradeProgress } from '../../core/mailbox.js';
import { isReleaseVersion } from '../../core/release.js';
import type { AgentUpgrade } from '../../core/resources.js';
import type { AgentUpgradeOutcome } from '../state/agent-upgrades.js';

/** Negative when `a` comes first: created later, else the newer release, else the later name. */
export function byPrecedence(a: AgentUpgrade, b: AgentUpgrade): number {
  const ta = Date.parse(a.metadata.creationTimestamp ?? '') || 0;
  const tb = Date.parse(b.metadata.creationTimestamp ?? '') || 0;
  if (ta !== tb) return tb - ta;
  const va = a.spec.release.version;
  const vb = b.spec.release.version;
  if (isReleaseVersion(va) && isReleaseVersion(vb) && va !== vb) return semver.rcompare(va, vb);
  return a.metadata.name < b.metadata.name ? 1 : a.metadata.name > b.metadata.name ? -1 : 0;
}

/** The edge's final report on this upgrade's release, if its latest report is one. */
export function reportedOutcome(
  u: AgentUpgrade,
  p: AgentUpgradeProgress | undefined,
  now: number,
): AgentUpgradeOutcome | undefined {
  if (!p || p.upgrade !== u.metadata.name || p.digest !== u.spec.release.digest) return undefined;
  if (p.state !== 'Running' && p.state !== 'RolledBack') return undefined;
  return {
    digest: p.digest,
    version: u.spec.release.version,
    state: p.state,
    ...(p.reason ? { reason: p.reason } : {}),
    at: now,
  };
}

/**
 * How `u`'s part on `edge` ended: the recorded outcome for its release, else the edge's final report
 * on it not recorded yet (the planner records it at its next pass). Undefined: not finished.
 */
export function outcomeOf(
  u: AgentUpgrade,
  recorded: AgentUpgradeOutcome | undefined,
  p: AgentUpgradeProgress | undefined,
  now: number,
): AgentUpgradeOutcome | undefined {
  const live = reportedOutcome(u, p, now);
  if (recorded && recorded.digest === u.spec.release.digest)
    // A Superseded part the edge still finished (it was mid-switch) is told as it ended.
    return live && recorded.state === 'Superseded'
      ? { ...live, ...(recorded.by ? { by: recorded.by } : {}) }
      : recorded;
  return live;
}

/** Whether ordering `u` to an edge running `running` would take it to an older version it did not ask for. */
export function wouldDowngrade(u: AgentUpgrade, running: string | undefined): boolean {
  const v = u.spec.release.version;
  if (u.spec.allowDowngrade || !running || !isReleaseVersion(v) || !isReleaseVersion(running)) return false;
  return semver.lt(v, running);
}

export interface ClaimInput {
  /** One project's AgentUpgrades. */
  upgrades: AgentUpgrade[];
  /** Upgrade name -> the edges it selects. */
  selected: Map<string, string[]>;
  /** Upgrade name -> edge -> recorded outcome. */
  outcomes: Map<string, Map<string, AgentUpgradeOutcome>>;
  /** Edge -> its latest reported upgrade progress. */
  progress: Map<string, AgentUpgradeProgress>;
  /** Edge -> the version its agent runs, as it last reported. */
  versions: Map<string, string>;
  now: number;
}

export interface Claims {
  /** The upgrades, first in precedence first. */
  ordered: AgentUpgrade[];
  /** Edge -> the name of the AgentUpgrade that holds it. */
  holder: Map<string, string>;
  /** Upgrade name -> edge -> how its part there ended. */
  finished: Map<string, Map<string, AgentUpgradeOutcome>>;
  /** Upgrade name -> edge -> the newer version it runs (the upgrade would downgrade it). */
  newer: Map<string, Map<string, string>>;
}

export function computeClaims(input: ClaimInput): Claims {
  const ordered = [...input.upgrades].sort(byPrecedence);
  const holder = new Map<string, string>();
  const finished = new Map<string, Map<string, AgentUpgradeOutcome>>();
  const newer = new Map<string, Map<string, string>>();
  const put = <T>(m: Map<string, Map<string, T>>, u: string, e: string, v: T) => {
    if (!m.has(u)) m.set(u, new Map());
    m.get(u)!.set(e, v);
  };
  for (const u of ordered) {
    const name = u.metadata.name;
    for (const e of input.selected.get(name) ?? []) {
      const o = outcomeOf(u, input.outcomes.get(name)?.get(e), input.progress.get(e), input.now);
      if (o) put(finished, name, e, o);
      else if (wouldDowngrade(u, input.versions.get(e))) put(newer, name, e, input.versions.get(e)!);
      else if (!holder.has(e)) holder.set(e, name);
    }
  }
  return { ordered, holder, finished, newer };
}
