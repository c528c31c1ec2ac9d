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
import { formatAge } from '../core/durations.js';
import type { Summary } from '../core/status.js';
import { readyColumn } from '../core/summary.js';

export interface ApiMetadata {
  name: string;
  project?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
}

export interface ApiObject {
  apiVersion?: string;
  kind: string;
  metadata: ApiMetadata;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

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

export const NONE = '<none>';

export function statusOf<T>(o: ApiObject): T {
  return (o.status ?? {}) as T;
}

export function ready(s: Summary | undefined): string {
  return s ? readyColumn(s) : '0/0';
}

export function formatLabels(labels: Record<string, string> | undefined): string {
  const entries = Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(',') : NONE;
}

/** Milliseconds since an ISO time or epoch milliseconds; undefined if there is none. */
export function ageMs(t: string | number | undefined, now: number): number | undefined {
  if (t === undefined || t === '') return undefined;
  const ms = typeof t === 'number' ? t : Date.parse(t);
  return Number.isFinite(ms) ? Math.max(0, now - ms) : undefined;
}

export function age(t: string | number | undefined, now: number): string {
  const ms = ageMs(t, now);
  return ms === undefined ? '-' : formatAge(ms);
}

/** How long ago the edge was last heard from: the hub's own figure, else from lastSeen. */
export function lastSeenMs(s: EdgeStatus, now: number): number | undefined {
  return typeof s.lastSeenAgo === 'number' ? s.lastSeenAgo : ageMs(s.lastSeen, now);
}

/**
 * The STATE of an edge as people need it: an offline edge says for how long (never a bare
 * "Unknown"), a pending one that it waits for approval, a drained one that it takes no work.
 */
export function edgeState(o: ApiObject, now: number): string {
  const s = statusOf<EdgeStatus>(o);
  const phase = s.phase ?? 'Unknown';
  let state = phase;
  if (phase === 'Offline') {
    const ms = lastSeenMs(s, now);
    state = ms === undefined ? 'Offline (never connected)' : `Offline (${formatAge(ms)})`;
  } else if (phase === 'Pending') {
    state = 'Pending (needs approval)';
  }
  if ((o.spec as { unschedulable?: boolean } | undefined)?.unschedulable) state += ',Drained';
  return state;
}

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

export function formatBytes(n: number | undefined): string {
  if (n === undefined) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}
