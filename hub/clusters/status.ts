/**
 * @module A Cluster's status (docs/clusters.md, "Status"), read from what its nodes reported
 * (hub/state/clusters.ts `cluster_nodes`), writing nothing: the phase (Provisioning until the control
 * plane is Ready, then Scaling until every worker is, Degraded when one failed or a Ready cluster lost a node's readiness), each node (its
 * edge, role, phase and step, kubelet version, Ready), and the control plane's components.
 */
import type { ClusterNodeView, ClusterStatusView } from '../../core/api/views.js';
import { ClusterNodeReport } from '../../core/cluster.js';
import type { Cluster } from '../../core/resources.js';
import { isOnline } from '../edges/phase.js';
import { templateScope } from './global-templates.js';
import type { HubState } from '../state/index.js';

export function clusterStatus(
  state: HubState,
  c: Cluster,
  heldElsewhere: string[],
  /** Why the workers' upgrade is paused (upgrade-plan.ts), when it is. */
  paused?: string,
  /** Its deletion, when asked for (deletion.ts): the phase is then `Deleting`, the message what it waits for. */
  deleting?: { deletion: NonNullable<ClusterStatusView['deletion']>; message: string },
  now = Date.now(),
): ClusterStatusView {
  const { project, name, uid } = c.metadata;
  const template = `${c.spec.template.name}@${c.spec.template.version}`;
  const spec = state.clusters.templateVersion(templateScope(c), c.spec.template.name, c.spec.template.version);
  const kubernetesVersion = spec ? (JSON.parse(spec) as { kubernetesVersion?: string }).kubernetesVersion : undefined;
  const reports = new Map<string, ClusterNodeReport>();
  for (const r of state.clusters.nodesOf(project, name)) {
    const parsed = ClusterNodeReport.safeParse(JSON.parse(r.report));
    if (parsed.success && parsed.data.uid === uid) reports.set(r.edge, parsed.data);
  }
  const live = state.edges.liveness(project);
  const nodes: ClusterNodeView[] = state.clusters.hostsOf(project, name).map((h) => {
    const r = reports.get(h.edge);
    return {
      edge: h.edge,
      role: h.role,
      phase: r?.phase ?? 'Pending',
      ...(r ? { step: r.step } : {}),
      ...(r?.runs ? { runs: r.runs } : {}),
      ...(r?.message ? { message: r.message } : {}),
      ready: !!r?.node?.ready,
      ...(r?.node?.kubeletVersion ? { kubeletVersion: r.node.kubeletVersion } : {}),
      ...(r?.node?.reason ? { reason: r.node.reason } : {}),
      online: isOnline(live.get(h.edge), now),
    };
  });
  const cp = nodes.find((n) => n.role === 'control-plane');
  const components = Object.fromEntries(
    Object.entries((cp && reports.get(cp.edge)?.components) ?? {}).map(([k, v]) => [
      k,
      { running: v.running, healthy: v.healthy, restarts: v.restarts, ...(v.message ? { message: v.message } : {}) },
    ]),
  );
  // A node is on the cluster's version once its order names it and its components run it.
  const current = (edge: string) => {
    const r = reports.get(edge);
    return r?.template === template && r.runs === template;
  };
  // A worker being removed is no longer counted; the cluster is Scaling until it is gone.
  const removing = nodes.filter((n) => n.role === 'removing');
  const counted = nodes.filter((n) => n.role !== 'removing');
  const ready = counted.filter((n) => n.ready && n.phase === 'Ready' && current(n.edge)).length;
  const failed = nodes.filter((n) => n.phase === 'Failed' || n.phase === 'RolledBack');
  const everReady = nodes.some((n) => n.kubeletVersion);
  const upgrading = nodes.some((n) => {
    const r = reports.get(n.edge);
    return r?.runs !== undefined && !current(n.edge) && n.phase !== 'RolledBack';
  });
  const phase: ClusterStatusView['phase'] =
    counted.length && ready === counted.length && !removing.length
      ? 'Ready'
      : failed.length || (everReady && nodes.some((n) => n.phase === 'NotReady'))
        ? 'Degraded'
        : upgrading
          ? 'Upgrading'
          : cp?.ready || removing.length
            ? 'Scaling'
            : 'Provisioning';
  const drain = cp && reports.get(cp.edge)?.draining;
  const messages = [
    ...(paused ? [paused] : []),
    ...removing.map((n) => `removing worker ${n.edge}${drain ? `: ${drain}` : ': draining'}`),
    ...failed.map((n) => `${n.edge}: ${n.message ?? 'failed'}`),
    ...(heldElsewhere.length
      ? [`selected edges held by another cluster, left out: ${heldElsewhere.slice(0, 5).join(', ')}`]
      : []),
    ...(spec ? [] : [`${c.spec.template.scope === 'Global' ? 'global ' : ''}template ${template} is not applied`]),
  ];
  if (deleting) {
    const down = nodes.filter((n) => n.phase === 'Deleted').length;
    return {
      phase: 'Deleting',
      summary: `${down}/${nodes.length} nodes torn down`,
      template,
      ...(kubernetesVersion ? { kubernetesVersion } : {}),
      // A node that cannot tear down says why (its report's message).
      message: [
        deleting.message,
        ...nodes.filter((n) => n.phase !== 'Deleted' && n.message).map((n) => `${n.edge}: ${n.message}`),
      ].join('; '),
      deletion: deleting.deletion,
      nodes,
      components,
    };
  }
  return {
    phase,
    summary: `${ready}/${counted.length} nodes Ready`,
    template,
    ...(kubernetesVersion ? { kubernetesVersion } : {}),
    ...(messages.length ? { message: messages.join('; ') } : {}),
    ...(cp ? { endpoint: `/api/v1/edges/${encodeURIComponent(cp.edge)}/kube` } : {}),
    nodes,
    components,
  };
}
