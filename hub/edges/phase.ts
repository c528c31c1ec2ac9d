/**
 * @module When an edge counts as online, its phase (Pending, Online, Offline) and which edges a
 * placement may schedule to: pure rules over the runtime facts of hub/state/edges.ts, used by the
 * API, the scheduler, the status summaries and the metrics alike.
 */
import type { EdgePhase } from '../../core/api/views.js';
import { OFFLINE_AFTER_MS } from '../../core/durations.js';
import type { Edge, LabelSelector } from '../../core/resources.js';
import { selectEdges } from '../../core/selector.js';
import type { EdgeLiveness } from '../state/edges.js';

export type { EdgeLiveness, EdgeRuntime } from '../state/edges.js';

/** Connected, and heard from within OFFLINE_AFTER_MS. */
export function isOnline(rt: Pick<EdgeLiveness, 'connectedSince' | 'lastSeen'> | undefined, now = Date.now()): boolean {
  return !!rt?.connectedSince && rt.lastSeen !== undefined && now - rt.lastSeen < OFFLINE_AFTER_MS;
}

export function edgePhase(
  rt: Pick<EdgeLiveness, 'approved' | 'connectedSince' | 'lastSeen'> | undefined,
  now = Date.now(),
): EdgePhase {
  if (!rt?.approved) return 'Pending';
  return isOnline(rt, now) ? 'Online' : 'Offline';
}

/** Edges a placement may schedule to: approved and not drained. */
export function schedulableEdges(
  edges: Edge[],
  runtimes: Map<string, EdgeLiveness>,
): { name: string; labels: Record<string, string>; annotations: Record<string, string>; unschedulable: boolean }[] {
  return edges
    .filter((e) => runtimes.get(e.metadata.name)?.approved)
    .map((e) => ({
      name: e.metadata.name,
      // The edge's own labels plus those derived from its inventory (docs/inventory.md).
      labels: { ...runtimes.get(e.metadata.name)?.inventoryLabels, ...e.metadata.labels },
      annotations: e.metadata.annotations,
      unschedulable: e.spec.unschedulable,
    }));
}

/**
 * The approved edges `spec` selects, drained ones included: draining stops placing workloads on
 * an edge, not the upgrades of its agent (hub/upgrades/) nor the data delivered to it (hub/data/).
 */
export function edgesReached(
  edges: ReturnType<typeof schedulableEdges>,
  spec: { edgeSelector?: LabelSelector; edges?: string[] },
): string[] {
  return selectEdges(
    edges.map((e) => ({ ...e, unschedulable: false })),
    spec,
  );
}
