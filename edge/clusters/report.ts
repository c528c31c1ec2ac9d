/**
 * @module What a node reports (core/cluster.ts ClusterNodeReport): the next report from the
 * current one, a patch and a step. The report's `template` is always the order's (what the node is
 * brought to), `runs` what its components last ran healthy; events are the last 20 steps, each at
 * a time after the one before (the hub records those it has not seen as the Cluster's events).
 */
import type { ClusterNodeReport, NodeEvent } from '../../core/cluster.js';
import type { KeptOrder } from './node-state.js';

const EVENTS_KEPT = 20;

export type ReportPatch = Partial<
  Pick<ClusterNodeReport, 'phase' | 'message' | 'components' | 'node' | 'runs' | 'address' | 'drained' | 'draining'>
>;

/** The report after `patch` and `event`; undefined when nothing but its time would change. */
export function nextReport(
  cur: ClusterNodeReport | undefined,
  o: KeptOrder,
  template: string,
  patch: ReportPatch,
  event?: { step: string; message: string },
  now = Date.now(),
): ClusterNodeReport | undefined {
  const events: NodeEvent[] = [...(cur?.events ?? [])];
  if (event)
    events.push({
      at: Math.max(now, (events.at(-1)?.at ?? 0) + 1),
      step: event.step,
      message: event.message.slice(0, 512),
    });
  const next: ClusterNodeReport = {
    cluster: o.cluster,
    uid: o.uid,
    role: o.role,
    template,
    phase: patch.phase ?? cur?.phase ?? 'Staging',
    step: event?.step ?? cur?.step ?? 'Reserved',
    components: patch.components ?? cur?.components ?? {},
    events: events.slice(-EVENTS_KEPT),
    at: cur?.at ?? now,
  };
  const runs = patch.runs ?? cur?.runs;
  if (runs) next.runs = runs;
  const message = 'message' in patch ? patch.message : event?.step === 'Failed' ? event.message : cur?.message;
  if (message) next.message = message.slice(0, 1024);
  // `node: undefined` forgets it (a node torn down is no node of the cluster).
  const node = 'node' in patch ? patch.node : cur?.node;
  if (node) next.node = node;
  const address = patch.address ?? cur?.address;
  if (address) next.address = address;
  const drained = patch.drained ?? cur?.drained;
  if (drained?.length) next.drained = drained;
  const draining = 'draining' in patch ? patch.draining : cur?.draining;
  if (draining) next.draining = draining.slice(0, 1024);
  if (cur && JSON.stringify({ ...cur, at: 0 }) === JSON.stringify({ ...next, at: 0 })) return undefined;
  next.at = now;
  return next;
}
