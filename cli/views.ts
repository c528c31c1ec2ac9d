/**
 * @module The shapes the hub's API answers with (docs/api.md), as the CLI reads them, and small
 * helpers shared by tables and `describe`. Fields are optional on purpose: a newer or older hub may
 * omit some, and the CLI shows `-` rather than failing.
 */
import {
  deliveryStateText,
  upgradeStateText,
  type AgentUpgradeStatusView as UpgradeView,
  type DataObjectStatusView as DeliveryView,
  type EdgeStatusView,
  type EdgeWorkloadView,
  type EventView as Event,
  type IntentView as Intent,
  type PlacementStatusView,
  type RolloutCountsView,
  type RolloutView,
  type WorkloadStatusView,
} from '../core/api/views.js';
import type { Summary } from '../core/status.js';
import { NONE } from '../core/api/columns.js';

export {
  age,
  ageMs,
  edgeState,
  formatBytes,
  formatLabels,
  lastSeenMs,
  NONE,
  ready,
  statusOf,
  type ApiMetadata,
  type ApiObject,
} from '../core/api/columns.js';

// The views as the CLI reads them: each top-level field may be missing (a newer or older hub may omit
// some; the CLI shows `-` rather than failing). The shapes themselves are core/api/views.ts.
export type EdgeWorkloadStatus = Partial<EdgeWorkloadView>;
export type IntentView = Intent;
export type EdgeStatus = Partial<EdgeStatusView>;
export type RolloutStatus = Partial<RolloutView>;
export type PlacementStatus = Partial<PlacementStatusView>;
export type AgentUpgradeStatusView = Partial<UpgradeView>;
export type DataObjectStatusView = Partial<DeliveryView>;
export type WorkloadStatus = Partial<WorkloadStatusView>;
export type EventView = Pick<Event, 'at' | 'reason' | 'message'> & Partial<Event>;
export { deliveryStateText, upgradeStateText };

/** `Ready 8, Failed 1, Progressing 1`, worst last so the eye lands on it. */
export function formatStates(s: Summary | undefined): string {
  const entries = Object.entries(s?.states ?? {}).filter(([, n]) => (n ?? 0) > 0);
  return entries.length ? entries.map(([k, n]) => `${k} ${n}`).join(', ') : NONE;
}

/** `3/10 edges updated, 2 ready, 0 failed`. */
export function rolloutCounts(r: RolloutStatus): string {
  const c: Partial<RolloutCountsView> = r.counts ?? {};
  const total = c.total ?? 0;
  const apart = (['held', 'skipped', 'blocked', 'waiting'] as const)
    .filter((k) => (c[k] ?? 0) > 0)
    .map((k) => `, ${c[k]} ${k}`)
    .join('');
  return `${c.updated ?? 0}/${total} edge${total === 1 ? '' : 's'} updated, ${c.ready ?? 0} ready, ${c.failed ?? 0} failed${apart}`;
}

/** `3/10 edges updated, 2 ready, 0 failed: <reason>`, the line `rollout status` prints. */
export function rolloutLine(r: RolloutStatus | undefined): string {
  if (!r) return 'no rollout status yet (the hub has not planned this placement)';
  return `${rolloutCounts(r)}: ${r.reason || r.phase || 'no reason given'}`;
}
