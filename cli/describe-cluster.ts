/**
 * @module Clusters in the CLI (docs/clusters.md): the `get clustertemplates` and `get clusters`
 * rows, and `describe cluster` (its template, phase, nodes, the control plane's components, events).
 */
import type { ClusterStatusView } from '../core/api/views.js';
import { eventsBlock, fields, metadataBlock, section, type DescribeOptions } from './describe-blocks.js';
import { formatTable } from './output.js';
import { type ClusterSpecView } from '../core/api/columns.js';
import { age, NONE, statusOf, type ApiObject } from './views.js';

export function describeCluster(o: ApiObject, opts: DescribeOptions): string {
  const spec = (o.spec ?? {}) as ClusterSpecView;
  const s = statusOf<Partial<ClusterStatusView>>(o);
  let out = metadataBlock(o, opts.now, [
    [
      'Template',
      `${spec.template?.name ?? '?'}@${spec.template?.version ?? '?'}${spec.template?.scope === 'Global' ? ' (global: metadata.project "*")' : ''}`,
    ],
    ['Kubernetes', s.kubernetesVersion ?? '-'],
    ['Control plane', spec.controlPlane?.edges?.join(', ') ?? '-'],
  ]);
  out += section(
    'Status',
    fields([
      ['Phase', s.phase ?? '-'],
      ['Summary', s.summary ?? '-'],
      [
        'Deletion',
        s.deletion
          ? `asked ${s.deletion.at} by ${s.deletion.by ?? '?'}${s.deletion.forced ? ' (forced past its Placements)' : ''}: it goes once every node tore down`
          : undefined,
      ],
      ['Message', s.message],
      ['Endpoint', s.endpoint ? `${s.endpoint} on the hub (outpost cluster kubeconfig ${o.metadata.name})` : undefined],
    ]),
  );
  out += section(
    'Nodes',
    s.nodes?.length
      ? formatTable(
          ['EDGE', 'ROLE', 'PHASE', 'READY', 'KUBELET', 'RUNS', 'ONLINE', 'REASON'],
          s.nodes.map((n) => [
            n.edge,
            n.role,
            n.phase,
            n.ready ? 'yes' : 'no',
            n.kubeletVersion ?? '-',
            n.runs ?? '-',
            n.online ? 'yes' : 'no',
            (n.message ?? n.reason ?? '').slice(0, 120),
          ]),
        )
      : `${NONE}\n`,
  );
  const comps = Object.entries(s.components ?? {});
  out += section(
    'Components',
    comps.length
      ? formatTable(
          ['COMPONENT', 'RUNNING', 'HEALTHY', 'RESTARTS', 'MESSAGE'],
          comps.map(([name, c]) => [
            name,
            c.running ? 'yes' : 'no',
            c.healthy ? 'yes' : 'no',
            String(c.restarts),
            (c.message ?? '').slice(0, 120),
          ]),
        )
      : `${NONE}\n`,
  );
  out += eventsBlock(opts.events, opts.now);
  return out;
}

export function describeClusterTemplate(o: ApiObject, opts: DescribeOptions): string {
  const spec = (o.spec ?? {}) as {
    version?: string;
    kubernetesVersion?: string;
    pauseImage?: string;
    network?: { serviceCIDR?: string; podCIDR?: string; cni?: string };
    artifacts?: Record<string, { digest?: string; size?: number }>;
  };
  let out = metadataBlock(o, opts.now, [
    ['Scope', o.metadata.project === '*' ? 'Global (every project may use it)' : `Project ${o.metadata.project}`],
    ['Version', spec.version ?? '-'],
    ['Kubernetes', spec.kubernetesVersion ?? '-'],
    ['Pause image', spec.pauseImage ?? '-'],
    [
      'Network',
      `services ${spec.network?.serviceCIDR ?? '-'}, pods ${spec.network?.podCIDR ?? '-'}, CNI ${spec.network?.cni ?? '-'}`,
    ],
  ]);
  out += section(
    'Artifacts',
    formatTable(
      ['NAME', 'DIGEST', 'SIZE'],
      Object.entries(spec.artifacts ?? {}).map(([n, a]) => [n, a.digest?.slice(0, 19) ?? '-', String(a.size ?? '-')]),
    ),
  );
  out += eventsBlock(opts.events, opts.now);
  return out;
}
