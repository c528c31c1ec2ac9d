/** State names always in text (never colour alone); the colour is a second cue. */
import { STATE_RANK } from '../../../core/status.js';
import type { State } from '../types.js';

const TONE: Record<string, string> = {
  Ready: 'ok',
  Online: 'ok',
  Complete: 'ok',
  Progressing: 'info',
  Pending: 'muted',
  Paused: 'warn',
  Modified: 'warn',
  Stale: 'warn',
  Offline: 'warn',
  Degraded: 'bad',
  Failed: 'bad',
  Error: 'bad',
  // Agent upgrade states of an edge (ui/src/pages/agent-upgrades.tsx).
  Running: 'ok',
  Downloading: 'info',
  Staged: 'info',
  Switching: 'info',
  RolledBack: 'bad',
  NoSpace: 'bad',
  Refused: 'bad',
  // DataObject delivery states of an edge (ui/src/pages/data-objects.tsx).
  Delivered: 'ok',
  Waiting: 'info',
  Expired: 'muted',
  Blocked: 'warn',
  // A release switch an edge reports (ui/src/pages/edge-software.tsx); RolledBack as above.
  Committed: 'ok',
  // Images an edge staged for a rollout (ui/src/pages/edge-software.tsx).
  Present: 'ok',
  Staging: 'info',
  OverBudget: 'warn',
  Skipped: 'muted',
  // Hub replicas (ui/src/pages/replicas.tsx).
  Alive: 'ok',
  Down: 'bad',
  // Clusters, their nodes and components (ui/src/pages/clusters.tsx); Staging, RolledBack as above.
  Provisioning: 'info',
  Scaling: 'info',
  Upgrading: 'info',
  Deleting: 'muted',
  Starting: 'info',
  NotReady: 'bad',
  Healthy: 'ok',
  Unhealthy: 'bad',
};

export function toneOf(s: string): string {
  return TONE[s] ?? 'muted';
}

export function Badge(props: { value: string; title?: string }) {
  return (
    <span class={`badge tone-${toneOf(props.value)}`} title={props.title}>
      {props.value}
    </span>
  );
}

/** Sorts states worst first, for state breakdowns. */
export function byRank(states: Partial<Record<State, number>>): [State, number][] {
  return (Object.entries(states) as [State, number][])
    .filter(([, n]) => n > 0)
    .sort((a, b) => STATE_RANK[b[0]] - STATE_RANK[a[0]]);
}
