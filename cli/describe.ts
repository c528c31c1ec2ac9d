/**
 * @module `outpost describe`: a human-readable, multi-section view of one object. Edges have a
 * module of their own (cli/describe-edge.ts).
 */
import { DEFAULT_MAX_UNAVAILABLE } from '../core/resources.js';
import { formatSelector } from '../core/selector.js';
import type { LabelSelector } from '../core/resources.js';
import { describeEdge } from './describe-edge.js';
import { describeGitRepo } from './describe-gitrepo.js';
import { describeServiceExport, describeServiceImport } from './describe-interconnect.js';
import { describeCluster, describeClusterTemplate } from './describe-cluster.js';
import {
  eventsBlock,
  fields,
  indent,
  metadataBlock,
  section,
  summaryBlock,
  type DescribeOptions,
} from './describe-blocks.js';
import { cell } from './output.js';
import { formatDeliveryEdges, formatUpgradeEdges } from './tables.js';
import {
  formatBytes,
  NONE,
  rolloutCounts,
  statusOf,
  type AgentUpgradeStatusView,
  type DataObjectStatusView,
  type ApiObject,
  type PlacementStatus,
  type WorkloadStatus,
} from './views.js';

export type { DescribeOptions };
export { describeEdge };

export function describePlacement(o: ApiObject, opts: DescribeOptions): string {
  const { now } = opts;
  const spec = (o.spec ?? {}) as {
    workloads?: string[];
    edgeSelector?: LabelSelector;
    edges?: string[];
    customization?: unknown[];
    rollout?: {
      maxUnavailable?: number | string;
      failureThreshold?: number;
      paused?: boolean;
      skipOfflineAfter?: string;
      prestage?: boolean;
      prestageBudget?: string;
    };
  };
  const s = statusOf<PlacementStatus>(o);
  let out = metadataBlock(o, now);
  out += section(
    'Spec',
    fields([
      ['Workloads', spec.workloads?.join(', ') || NONE],
      ['Edge selector', formatSelector(spec.edgeSelector)],
      ['Edges', spec.edges?.length ? spec.edges.join(', ') : NONE],
      ['Customization', `${spec.customization?.length ?? 0} rule${spec.customization?.length === 1 ? '' : 's'}`],
      [
        'Rollout',
        `maxUnavailable ${spec.rollout?.maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE}, failureThreshold ${spec.rollout?.failureThreshold ?? 1}${spec.rollout?.skipOfflineAfter ? `, skipOfflineAfter ${spec.rollout.skipOfflineAfter}` : ''}${spec.rollout?.prestage ? `, prestage${spec.rollout.prestageBudget ? ` (budget ${spec.rollout.prestageBudget})` : ''}` : ''}${spec.rollout?.paused ? ', paused' : ''}`,
      ],
    ]),
  );
  out +=
    'Status:\n' + indent(summaryBlock(s.summary, !!opts.color, [['Selected edges', String(s.selectedEdges ?? 0)]]));
  const r = s.rollout;
  out += section(
    'Rollout',
    r
      ? fields(
          [
            ['Phase', r.phase ?? '-', 'paint'],
            ['Reason', r.reason || '-'],
            ['Progress', rolloutCounts(r) + (r.counts?.pending !== undefined ? `, ${r.counts.pending} pending` : '')],
            ...(s.imageStaging ? [['Images', s.imageStaging.summary] as [string, string]] : []),
            ...(s.heldLocally?.length
              ? [['Held on site', s.heldLocally.map((h) => `${h.edge} (${h.workload})`).join(', ')] as [string, string]]
              : []),
          ],
          !!opts.color,
        )
      : 'not planned yet\n',
  );
  out += eventsBlock(opts.events, now);
  return out;
}

export function describeWorkload(o: ApiObject, opts: DescribeOptions): string {
  const { now } = opts;
  const s = statusOf<WorkloadStatus>(o);
  const manifests = (
    (o.spec as { manifests?: { kind?: string; metadata?: { name?: string } }[] } | undefined)?.manifests ?? []
  ).map((m) => `${m.kind ?? '?'}/${m.metadata?.name ?? '?'}`);
  let out = metadataBlock(o, now, [['Revision', s.revision === undefined ? '-' : String(s.revision)]]);
  out += 'Manifests:\n' + (manifests.length ? manifests.map((m) => `  ${cell(m)}\n`).join('') : `  ${NONE}\n`);
  out += 'Status:\n' + indent(summaryBlock(s.summary, !!opts.color));
  out += eventsBlock(opts.events, now);
  return out;
}

export function describeAgentUpgrade(o: ApiObject, opts: DescribeOptions): string {
  const { now } = opts;
  const spec = (o.spec ?? {}) as {
    release?: { scope?: string; version?: string; digest?: string; size?: number };
    edgeSelector?: LabelSelector;
    edges?: string[];
    allowDowngrade?: boolean;
    rollout?: { maxUnavailable?: number | string; failureThreshold?: number; deadline?: string; paused?: boolean };
  };
  const s = statusOf<AgentUpgradeStatusView>(o);
  const version = spec.release?.version ?? '?';
  let out = metadataBlock(o, now);
  out += section(
    'Spec',
    fields([
      ['Release', `${version} ${spec.release?.digest ?? ''} (${formatBytes(spec.release?.size)})`],
      [
        'Signed for',
        spec.release?.scope === '*'
          ? 'every project'
          : spec.release?.scope
            ? `project ${spec.release.scope}`
            : 'no project (signed before releases had a scope: edges refuse it)',
      ],
      ['Edge selector', formatSelector(spec.edgeSelector)],
      ['Edges', spec.edges?.length ? spec.edges.join(', ') : NONE],
      [
        'Downgrade',
        spec.allowDowngrade ? 'allowed (allowDowngrade)' : 'refused (an edge on a newer version refuses it)',
      ],
      [
        'Rollout',
        `maxUnavailable ${spec.rollout?.maxUnavailable ?? 1}, failureThreshold ${spec.rollout?.failureThreshold ?? 1}, deadline ${spec.rollout?.deadline ?? '2m'}${spec.rollout?.paused ? ', paused' : ''}`,
      ],
    ]),
  );
  out += section(
    'Rollout',
    fields(
      [
        ['Phase', s.phase ?? '-', 'paint'],
        ['Reason', s.reason || '-'],
        [
          'Progress',
          `${s.running ?? 0} of ${s.counts?.total ?? 0} running ${version}, ${s.rolledBack ?? 0} rolled back or refused, ${s.counts?.pending ?? 0} waiting`,
        ],
      ],
      !!opts.color,
    ),
  );
  out += section('Edges', s.edges?.length ? formatUpgradeEdges(s, version) : `${NONE}\n`);
  out += eventsBlock(opts.events, now);
  return out;
}

/** A Registry: where it is and how the edges reach it; the password is never printed (the API redacts it). */
export function describeRegistry(o: ApiObject, opts: DescribeOptions): string {
  const spec = (o.spec ?? {}) as {
    url?: string;
    kind?: string;
    credentials?: { username?: string };
    caBundle?: string;
    insecure?: boolean;
  };
  let out = metadataBlock(o, opts.now, [
    ['URL', spec.url ?? '-'],
    ['API', spec.kind ?? 'distribution'],
    ['Credentials', spec.credentials ? `user ${spec.credentials.username ?? '?'}, password set` : NONE],
    ['TLS', spec.insecure ? 'not verified (insecure)' : spec.caBundle ? 'checked against its caBundle' : 'system CAs'],
  ]);
  out += eventsBlock(opts.events, opts.now);
  return out;
}

/** A DataObject: what it is, which edges it selects, and where each edge's delivery stands. */
export function describeDataObject(o: ApiObject, opts: DescribeOptions): string {
  const spec = (o.spec ?? {}) as {
    version?: string;
    digest?: string;
    size?: number;
    path?: string;
    edgeSelector?: LabelSelector;
    edges?: string[];
    activateAt?: string;
    expiresAt?: string;
  };
  const s = statusOf<DataObjectStatusView>(o);
  let out = metadataBlock(o, opts.now);
  out += section(
    'Spec',
    fields([
      ['Version', `${spec.version ?? '?'} ${spec.digest ?? ''} (${formatBytes(spec.size)})`],
      ['Path', `${spec.path ?? o.metadata.name} (under the edge's objects directory)`],
      ['Edge selector', formatSelector(spec.edgeSelector)],
      ['Edges', spec.edges?.length ? spec.edges.join(', ') : NONE],
      ['Activates', spec.activateAt ?? 'on arrival'],
      ['Expires', spec.expiresAt ?? 'never'],
    ]),
  );
  out += section('Delivery', fields([['Summary', s.summary ?? '-']]));
  out += section('Edges', s.edges?.length ? formatDeliveryEdges(s) : `${NONE}\n`);
  out += eventsBlock(opts.events, opts.now);
  return out;
}

export function describeObject(o: ApiObject, opts: DescribeOptions): string {
  if (o.kind === 'DataObject') return describeDataObject(o, opts);
  if (o.kind === 'Edge') return describeEdge(o, opts);
  if (o.kind === 'AgentUpgrade') return describeAgentUpgrade(o, opts);
  if (o.kind === 'Registry') return describeRegistry(o, opts);
  if (o.kind === 'GitRepo') return describeGitRepo(o, opts);
  if (o.kind === 'Cluster') return describeCluster(o, opts);
  if (o.kind === 'ClusterTemplate') return describeClusterTemplate(o, opts);
  if (o.kind === 'Placement') return describePlacement(o, opts);
  if (o.kind === 'ServiceExport') return describeServiceExport(o, opts);
  if (o.kind === 'ServiceImport') return describeServiceImport(o, opts);
  return describeWorkload(o, opts);
}
