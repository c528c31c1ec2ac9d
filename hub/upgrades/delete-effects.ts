/**
 * @module What deleting an AgentUpgrade changes on the edges, in words (`outpost delete
 * agentupgrade`, the API's answer to the delete): its orders are withdrawn, and each edge it held
 * either keeps what it runs or goes to the next AgentUpgrade in precedence (hub/upgrades/claims.ts),
 * which orders its own release there (never an older one than the edge runs, unless it says
 * allowDowngrade). Pure: given the project's claims with and without the upgrade.
 */
import semver from 'semver';
import type { AgentUpgradeOrder, AgentUpgradeProgress } from '../../core/mailbox.js';
import { isReleaseVersion } from '../../core/release.js';
import type { AgentUpgrade } from '../../core/resources.js';
import type { Claims } from './claims.js';

export interface DeleteEffectsInput {
  upgrade: AgentUpgrade;
  /** The project's claims with the upgrade, and without it. */
  before: { selected: Map<string, string[]>; versions: Map<string, string>; claims: Claims; upgrades: AgentUpgrade[] };
  after: { claims: Claims };
  orders: Map<string, AgentUpgradeOrder>;
  progress: Map<string, AgentUpgradeProgress>;
}

const list = (names: string[]) =>
  names.length <= 8 ? names.join(', ') : `${names.slice(0, 8).join(', ')} and ${names.length - 8} more`;
const edgesWord = (names: string[]) => `${names.length === 1 ? 'edge' : 'edges'} ${list(names)}`;

const UNDER_WAY: readonly string[] = ['Pending', 'Downloading', 'Staged', 'Switching'];

export function deleteEffects(d: DeleteEffectsInput): string[] {
  const name = d.upgrade.metadata.name;
  const selected = d.before.selected.get(name) ?? [];
  const touched = selected.filter((e) => d.before.claims.holder.get(e) === name || d.orders.get(e)?.upgrade === name);
  if (touched.length === 0) {
    const history = [...(d.before.claims.finished.get(name)?.keys() ?? [])];
    return [
      history.length
        ? `no edge changes: its part on ${edgesWord(history)} is history, and it held no other edge`
        : 'no edge changes: it held no edge',
    ];
  }
  const keep = new Map<string, string[]>();
  const takes = new Map<string, string[]>();
  const downgrades: string[] = [];
  const underWay: string[] = [];
  for (const e of touched) {
    const runs = d.before.versions.get(e);
    const p = d.progress.get(e);
    if (p && p.upgrade === name && p.digest === d.upgrade.spec.release.digest && UNDER_WAY.includes(p.state))
      underWay.push(`${e} (${p.state})`);
    const next = d.after.claims.holder.get(e);
    const w = next ? d.before.upgrades.find((x) => x.metadata.name === next) : undefined;
    if (w) {
      takes.set(w.metadata.name, [...(takes.get(w.metadata.name) ?? []), e]);
      const v = w.spec.release.version;
      if (runs && isReleaseVersion(v) && isReleaseVersion(runs) && semver.lt(v, runs))
        downgrades.push(`${e} from ${runs} to ${v} (AgentUpgrade ${w.metadata.name} says allowDowngrade: true)`);
    } else {
      const what = runs ?? 'the version it runs';
      keep.set(what, [...(keep.get(what) ?? []), e]);
    }
  }
  const out: string[] = [];
  for (const [runs, edges] of keep)
    out.push(
      `${edgesWord(edges)} ${edges.length === 1 ? 'keeps' : 'keep'} running ${runs}: no other AgentUpgrade takes ${edges.length === 1 ? 'it' : 'them'} over`,
    );
  for (const [w, edges] of takes) {
    const u = d.before.upgrades.find((x) => x.metadata.name === w)!;
    out.push(`AgentUpgrade ${w} takes ${edgesWord(edges)} and orders ${u.spec.release.version} there`);
  }
  if (underWay.length)
    out.push(
      `a switch under way is not stopped by the withdrawn order: ${list(underWay)} may still end on ${d.upgrade.spec.release.version}`,
    );
  out.push(downgrades.length ? `downgraded: ${downgrades.join('; ')}` : 'no edge is downgraded');
  return out;
}
