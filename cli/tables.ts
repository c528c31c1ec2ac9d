/** @module The tables of `outpost get`, one per kind, plus the revision history of a workload. */
import type { GitRepoStatusView, RevisionView as Revision } from '../core/api/views.js';
import type { KindInfo } from './kinds.js';
import { clusterRow, clusterTemplateRow } from './describe-cluster.js';
import { formatTable } from './output.js';
import {
  age,
  edgeState,
  formatBytes,
  formatLabels,
  lastSeenMs,
  ready,
  statusOf,
  deliveryStateText,
  upgradeStateText,
  type AgentUpgradeStatusView,
  type DataObjectStatusView,
  type ApiObject,
  type EdgeStatus,
  type PlacementStatus,
  type WorkloadStatus,
} from './views.js';
import { formatAge } from '../core/durations.js';

export type OutputFormat = 'table' | 'wide' | 'yaml' | 'json';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['table', 'wide', 'yaml', 'json'];

export interface TableOptions {
  now: number;
  wide?: boolean;
  /** Adds a PROJECT column in front, as kubectl does for --all-namespaces. */
  allProjects?: boolean;
  color?: boolean;
  /** Adds a LABELS column to kinds that have none (`--show-labels`). */
  showLabels?: boolean;
}

/** The LOCAL column: intents made on site still in force, `app:paused,db:override`, or `-`. */
export function localColumn(s: EdgeStatus): string {
  const parts = Object.entries(s.localIntents ?? {})
    .filter(([, l]) => l.paused || Object.keys(l.overrides ?? {}).length)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([w, l]) => `${w}:${l.paused ? 'paused' : 'override'}`);
  return parts.length ? parts.join(',') : '-';
}

function edgeRow(o: ApiObject, opts: TableOptions): string[] {
  const s = statusOf<EdgeStatus>(o);
  const seen = lastSeenMs(s, opts.now);
  const row = [
    o.metadata.name,
    edgeState(o, opts.now),
    ready(s.summary),
    seen === undefined ? 'never' : formatAge(seen),
    formatLabels(o.metadata.labels),
  ];
  if (opts.wide) {
    row.push(s.agentVersion ?? s.inventory?.agentVersion ?? '-', s.inventory?.driver ?? '-');
    if (!opts.allProjects) row.push(o.metadata.project ?? '-');
  }
  return row;
}

function workloadRow(o: ApiObject, opts: TableOptions): string[] {
  const s = statusOf<WorkloadStatus>(o);
  return [
    o.metadata.name,
    s.revision === undefined ? '-' : String(s.revision),
    ready(s.summary),
    String(s.summary?.total ?? 0),
    age(o.metadata.creationTimestamp, opts.now),
  ];
}

function placementRow(o: ApiObject, opts: TableOptions): string[] {
  const s = statusOf<PlacementStatus>(o);
  const pausedBySpec = (o.spec as { rollout?: { paused?: boolean } } | undefined)?.rollout?.paused;
  const rollout = s.rollout?.phase ?? (pausedBySpec ? 'Paused' : '-');
  return [
    o.metadata.name,
    ready(s.summary),
    s.summary?.worst ?? '-',
    rollout,
    String(s.selectedEdges ?? 0),
    age(o.metadata.creationTimestamp, opts.now),
  ];
}

function agentUpgradeRow(o: ApiObject, opts: TableOptions): string[] {
  const s = statusOf<AgentUpgradeStatusView>(o);
  const spec = (o.spec ?? {}) as { release?: { version?: string } };
  return [
    o.metadata.name,
    spec.release?.version ?? '-',
    String(s.counts?.total ?? s.edges?.length ?? 0),
    String(s.running ?? 0),
    String(s.rolledBack ?? 0),
    s.phase ?? '-',
    age(o.metadata.creationTimestamp, opts.now),
  ];
}

function registryRow(o: ApiObject, opts: TableOptions): string[] {
  const spec = (o.spec ?? {}) as {
    url?: string;
    credentials?: { username?: string };
    caBundle?: string;
    insecure?: boolean;
  };
  return [
    o.metadata.name,
    spec.url ?? '-',
    spec.credentials?.username ?? '-',
    spec.insecure ? 'insecure' : spec.caBundle ? 'own CA' : 'system CA',
    age(o.metadata.creationTimestamp, opts.now),
  ];
}

function gitRepoRow(o: ApiObject, opts: TableOptions): string[] {
  const s = statusOf<Partial<GitRepoStatusView>>(o);
  const spec = (o.spec ?? {}) as { repo?: string; branch?: string; tag?: string; commit?: string };
  const ref = spec.branch ? `branch ${spec.branch}` : spec.tag ? `tag ${spec.tag}` : (spec.commit?.slice(0, 12) ?? '-');
  return [
    o.metadata.name,
    spec.repo ?? '-',
    ref,
    s.commit?.slice(0, 12) ?? '-',
    String(s.objects ?? 0),
    s.state ?? '-',
    age(o.metadata.creationTimestamp, opts.now),
  ];
}

function dataObjectRow(o: ApiObject, opts: TableOptions): string[] {
  const s = statusOf<DataObjectStatusView>(o);
  const spec = (o.spec ?? {}) as { version?: string; size?: number; path?: string };
  return [
    o.metadata.name,
    spec.version ?? '-',
    formatBytes(spec.size),
    spec.path ?? o.metadata.name,
    s.summary ?? '-',
    age(o.metadata.creationTimestamp, opts.now),
  ];
}

/**
 * What `get dataobjects` adds under its table: an expired object stays, holding its path on its
 * edges, until it is deleted; nothing deletes it by itself.
 */
export function dataObjectHints(objects: ApiObject[], opts: { allProjects?: boolean }): string[] {
  return objects
    .filter((o) => statusOf<DataObjectStatusView>(o).expired)
    .map((o) => {
      const at = (o.spec as { expiresAt?: string } | undefined)?.expiresAt;
      const project = opts.allProjects && o.metadata.project ? ` --project ${o.metadata.project}` : '';
      return `dataobject/${o.metadata.name} expired${at ? ` at ${at}` : ''}: the edges removed its file, and it keeps its path until deleted: outpost delete dataobject ${o.metadata.name}${project}`;
    });
}

/** `describe dataobject`'s per-edge table: the delivery in words and the version each edge's file holds. */
export function formatDeliveryEdges(s: DataObjectStatusView): string {
  const rows = (s.edges ?? []).map((e) => [
    e.edge,
    deliveryStateText(e),
    e.version ?? '-',
    e.online ? 'Online' : 'Offline',
  ]);
  return formatTable(['EDGE', 'STATE', 'HOLDS', 'CONNECTION'], rows);
}

/** `describe agentupgrade`'s per-edge table: the state in words and the version each runs now. */
export function formatUpgradeEdges(s: AgentUpgradeStatusView, version: string): string {
  const rows = (s.edges ?? []).map((e) => [
    e.edge,
    upgradeStateText(e, version),
    e.agentVersion ?? '-',
    e.online ? 'Online' : 'Offline',
  ]);
  return formatTable(['EDGE', 'STATE', 'AGENT', 'CONNECTION'], rows);
}

const HEADERS: Record<
  string,
  { base: string[]; wide: string[]; row: (o: ApiObject, opts: TableOptions) => string[]; color: string[] }
> = {
  Edge: {
    base: ['NAME', 'STATE', 'READY', 'LAST-SEEN', 'LABELS'],
    wide: ['AGENT', 'RUNTIME', 'PROJECT'],
    row: edgeRow,
    color: ['STATE'],
  },
  Workload: { base: ['NAME', 'REVISION', 'READY', 'EDGES', 'AGE'], wide: [], row: workloadRow, color: [] },
  Placement: {
    base: ['NAME', 'READY', 'WORST', 'ROLLOUT', 'EDGES', 'AGE'],
    wide: [],
    row: placementRow,
    color: ['WORST', 'ROLLOUT'],
  },
  AgentUpgrade: {
    base: ['NAME', 'VERSION', 'EDGES', 'RUNNING', 'ROLLEDBACK', 'PHASE', 'AGE'],
    wide: [],
    row: agentUpgradeRow,
    color: ['PHASE'],
  },
  Registry: { base: ['NAME', 'URL', 'USER', 'TLS', 'AGE'], wide: [], row: registryRow, color: [] },
  DataObject: {
    base: ['NAME', 'VERSION', 'SIZE', 'PATH', 'DELIVERED', 'AGE'],
    wide: [],
    row: dataObjectRow,
    color: [],
  },
  GitRepo: {
    base: ['NAME', 'REPO', 'REF', 'COMMIT', 'OBJECTS', 'STATUS', 'AGE'],
    wide: [],
    row: gitRepoRow,
    color: [],
  },
  ClusterTemplate: { base: ['NAME', 'VERSION', 'KUBERNETES', 'AGE'], wide: [], row: clusterTemplateRow, color: [] },
  Cluster: {
    base: ['NAME', 'TEMPLATE', 'PHASE', 'READY', 'CONTROL-PLANE', 'AGE'],
    wide: [],
    row: clusterRow,
    color: ['PHASE'],
  },
};

/** The `get` table for objects of one kind. */
export function formatObjectTable(info: KindInfo, objects: ApiObject[], opts: TableOptions): string {
  const h = HEADERS[info.kind];
  let headers = opts.wide ? [...h.base, ...h.wide] : [...h.base];
  if (opts.allProjects) headers = ['PROJECT', ...headers.filter((x) => x !== 'PROJECT')];
  let rows = objects.map((o) => h.row(o, opts));
  // Edges: a LOCAL column (before LABELS) as soon as one listed edge holds intents made on site.
  const local = info.kind === 'Edge' ? objects.map((o) => localColumn(statusOf<EdgeStatus>(o))) : [];
  if (local.some((l) => l !== '-')) {
    const at = headers.indexOf('LABELS');
    headers.splice(at, 0, 'LOCAL');
    rows = rows.map((r, i) => [...r.slice(0, 4), local[i], ...r.slice(4)]);
  }
  if (opts.showLabels && !headers.includes('LABELS')) {
    headers.push('LABELS');
    rows = rows.map((r, i) => [...r, formatLabels(objects[i].metadata.labels)]);
  }
  if (opts.allProjects) rows = rows.map((r, i) => [objects[i].metadata.project ?? '-', ...r]);
  return formatTable(headers, rows, { color: opts.color, colorColumns: h.color });
}

/** One workload revision as the CLI reads it (core/api/views.ts). */
export type RevisionView = Pick<Revision, 'revision'> & Partial<Revision>;

/** `outpost rollout history workload NAME`: oldest first, the current (newest) one marked. */
export function formatRevisions(revisions: RevisionView[], now: number): string {
  const sorted = [...revisions].sort((a, b) => a.revision - b.revision);
  const last = sorted[sorted.length - 1]?.revision;
  const rows = sorted.map((r) => [
    String(r.revision) + (r.revision === last ? ' (current)' : ''),
    age(r.createdAt, now),
    (r.manifests ?? [])
      .map((m) => m as { kind?: string; metadata?: { name?: string } })
      .map((m) => `${m.kind ?? '?'}/${m.metadata?.name ?? '?'}`)
      .join(', ') || '-',
    r.changeCause ?? '<none>',
  ]);
  return formatTable(['REVISION', 'AGE', 'MANIFESTS', 'CHANGE-CAUSE'], rows);
}
