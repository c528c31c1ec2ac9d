/**
 * @module The columns of each kind's table, one definition for the two places that print them:
 * `outpost get` (cli/tables.ts) and the hub's Kubernetes API `Table` answers, which `kubectl get`
 * prints (hub/k8s/table.ts). A row is computed from an object as the API shows it (with status);
 * fields may be missing (a newer or older hub may omit some): a cell shows `-` rather than failing.
 */
import { formatAge } from '../durations.js';
import type { Summary } from '../status.js';
import { readyColumn } from '../summary.js';
import type {
  AgentUpgradeStatusView,
  ClusterStatusView,
  DataObjectStatusView,
  GitRepoStatusView,
  EdgeStatusView,
  PlacementStatusView,
  WorkloadStatusView,
} from './views.js';
import type { ServiceExportStatusView, ServiceImportStatusView } from './interconnect-views.js';

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

type EdgeStatus = Partial<EdgeStatusView>;

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

export interface RowOptions {
  now: number;
  wide?: boolean;
  /** Across projects the PROJECT column leads the row instead of ending a wide one. */
  allProjects?: boolean;
}

function edgeRow(o: ApiObject, opts: RowOptions): string[] {
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

function workloadRow(o: ApiObject, opts: RowOptions): string[] {
  const s = statusOf<Partial<WorkloadStatusView>>(o);
  return [
    o.metadata.name,
    s.revision === undefined ? '-' : String(s.revision),
    ready(s.summary),
    String(s.summary?.total ?? 0),
    age(o.metadata.creationTimestamp, opts.now),
  ];
}

function placementRow(o: ApiObject, opts: RowOptions): string[] {
  const s = statusOf<Partial<PlacementStatusView>>(o);
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

function agentUpgradeRow(o: ApiObject, opts: RowOptions): string[] {
  const s = statusOf<Partial<AgentUpgradeStatusView>>(o);
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

function registryRow(o: ApiObject, opts: RowOptions): string[] {
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

function dataObjectRow(o: ApiObject, opts: RowOptions): string[] {
  const s = statusOf<Partial<DataObjectStatusView>>(o);
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

export interface KindColumns {
  /** Headers of the table; `wide` are added with `-o wide`. */
  base: string[];
  wide: string[];
  row: (o: ApiObject, opts: RowOptions) => string[];
  /** The columns whose cells a terminal may color by state. */
  color: string[];
}

function gitRepoRow(o: ApiObject, opts: RowOptions): string[] {
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

function serviceExportRow(o: ApiObject, opts: RowOptions): string[] {
  const s = statusOf<Partial<ServiceExportStatusView>>(o);
  const spec = (o.spec ?? {}) as { workload?: string; port?: number };
  return [
    o.metadata.name,
    spec.workload ?? '-',
    spec.port === undefined ? '-' : String(spec.port),
    s.serving ? `${s.healthy ?? 0}/${s.serving.length}` : '-',
    s.serving ? `${s.online ?? 0}/${s.serving.length}` : '-',
    age(o.metadata.creationTimestamp, opts.now),
  ];
}

const ms = (v: number | undefined) => (v === undefined ? '-' : `${Math.round(v)}ms`);

function serviceImportRow(o: ApiObject, opts: RowOptions): string[] {
  const s = statusOf<Partial<ServiceImportStatusView>>(o);
  const spec = (o.spec ?? {}) as { export?: string; project?: string; port?: number };
  return [
    o.metadata.name,
    s.export ?? `${spec.project ?? o.metadata.project ?? '-'}/${spec.export ?? '-'}`,
    spec.port === undefined ? '-' : String(spec.port),
    s.edges ? `${s.listening ?? 0}/${s.edges.length}` : '-',
    s.open === undefined ? '-' : String(s.open),
    s.errors === undefined ? '-' : String(s.errors),
    s.summary ?? '-',
    age(o.metadata.creationTimestamp, opts.now),
    ...(opts.wide
      ? [
          s.bytesOut === undefined ? '-' : formatBytes(s.bytesOut),
          s.bytesIn === undefined ? '-' : formatBytes(s.bytesIn),
          ms(s.connectP50Ms),
          ms(s.connectP99Ms),
        ]
      : []),
  ];
}

/** What a Cluster's spec shows (its template, its control plane). */
export interface ClusterSpecView {
  template?: { name?: string; version?: string; scope?: string };
  controlPlane?: { edges?: string[] };
}

export function clusterTemplateRow(o: ApiObject, opts: RowOptions): string[] {
  const spec = (o.spec ?? {}) as { version?: string; kubernetesVersion?: string };
  return [
    o.metadata.name,
    // A global template (metadata.project "*") serves every project's clusters.
    o.metadata.project === '*' ? 'Global' : 'Project',
    spec.version ?? '-',
    spec.kubernetesVersion ?? '-',
    age(o.metadata.creationTimestamp, opts.now),
  ];
}

export function clusterRow(o: ApiObject, opts: RowOptions): string[] {
  const spec = (o.spec ?? {}) as ClusterSpecView;
  const s = statusOf<Partial<ClusterStatusView>>(o);
  return [
    o.metadata.name,
    `${spec.template?.name ?? '?'}@${spec.template?.version ?? '?'}${spec.template?.scope === 'Global' ? ' (global)' : ''}`,
    s.phase ?? '-',
    s.summary?.replace(/ nodes Ready$/, '') ?? '-',
    spec.controlPlane?.edges?.join(',') ?? '-',
    age(o.metadata.creationTimestamp, opts.now),
  ];
}

/** Each kind's columns, by kind. */
export const KIND_COLUMNS: Record<string, KindColumns> = {
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
  ClusterTemplate: {
    base: ['NAME', 'SCOPE', 'VERSION', 'KUBERNETES', 'AGE'],
    wide: [],
    row: clusterTemplateRow,
    color: [],
  },
  Cluster: {
    base: ['NAME', 'TEMPLATE', 'PHASE', 'READY', 'CONTROL-PLANE', 'AGE'],
    wide: [],
    row: clusterRow,
    color: ['PHASE'],
  },
  ServiceExport: {
    base: ['NAME', 'WORKLOAD', 'PORT', 'HEALTHY', 'ONLINE', 'AGE'],
    wide: [],
    row: serviceExportRow,
    color: [],
  },
  ServiceImport: {
    base: ['NAME', 'EXPORT', 'PORT', 'LISTENING', 'OPEN', 'ERRORS', 'STATUS', 'AGE'],
    wide: ['SENT', 'RECEIVED', 'CONNECT-P50', 'CONNECT-P99'],
    row: serviceImportRow,
    color: [],
  },
};
