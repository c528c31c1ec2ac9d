/**
 * @module The steps of a running node's supervision that only look and report (the follower,
 * follower.ts, brings the node there): each component alive and healthy and the node's readiness,
 * reported when they change; a control plane's drain of the workers its order removes (drain.ts).
 */
import type { ClusterNodeOrder, ClusterNodeReport, NodePhase } from '../../core/cluster.js';
import { componentCommands, type NodeLayout } from './configs.js';
import { drainWorkers } from './drain.js';
import { surveyComponents } from './gate.js';
import type { NodeSeen } from './health.js';
import type { KeptOrder } from './node-state.js';
import type { ReportPatch } from './report.js';

/** The node's report as last written (this cluster's), and the way to write the next. */
export interface Reporting {
  cur: ClusterNodeReport | undefined;
  update(patch: ReportPatch, event?: { step: string; message: string }): void;
}

/** One look at a running node: components alive and healthy, the node's readiness; reported when it changed. */
export async function superviseNode(
  o: KeptOrder,
  l: NodeLayout,
  edge: string,
  nodeIp: string,
  seen: NodeSeen,
  rolledBack: string | undefined,
  r: Reporting,
): Promise<void> {
  const { podCIDR: _podCIDR, ...node } = seen;
  const components = await surveyComponents(o, l, componentCommands(o, edge, l, nodeIp), r.cur?.components ?? {});
  const allHealthy = Object.values(components).every((c) => c.healthy);
  const phase: NodePhase = !(node.ready && allHealthy) ? 'NotReady' : rolledBack ? 'RolledBack' : 'Ready';
  const was = r.cur?.phase;
  r.update(
    {
      phase,
      components,
      node,
      message: rolledBack,
      runs: `${o.template.name}@${o.template.version}`,
      address: nodeIp,
    },
    was !== phase && phase !== 'RolledBack'
      ? phase === 'Ready'
        ? { step: 'NodeReady', message: `node ${edge} is Ready (kubelet ${node.kubeletVersion ?? '?'})` }
        : { step: 'NotReady', message: node.reason ?? 'a component is not healthy' }
      : undefined,
  );
}

/**
 * Drains the workers the order removes (drain.ts); reports which are done and what the rest wait
 * for. While a drain waits, the next look comes at the supervision tick.
 */
export async function reportDrain(
  order: ClusterNodeOrder,
  target: KeptOrder,
  l: NodeLayout,
  r: Reporting,
): Promise<void> {
  const cur = r.cur;
  if (!order.drain?.length && !cur?.drained?.length && !cur?.draining) return;
  const d = await drainWorkers(target, l, order.drain ?? [], cur?.drained ?? []);
  const fresh = d.drained.filter((e) => !cur?.drained?.includes(e));
  r.update(
    { drained: d.drained, draining: d.waiting },
    fresh.length
      ? { step: 'Drained', message: `worker ${fresh.join(', ')} drained and deleted from the cluster` }
      : d.waiting && d.waiting !== cur?.draining
        ? { step: 'Draining', message: d.waiting }
        : undefined,
  );
}
