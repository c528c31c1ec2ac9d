/** @module The tables of `outpost get`, one per kind, plus the revision history of a workload. */
import type { RevisionView as Revision } from '../core/api/views.js';
import type { KindInfo } from './kinds.js';
import { formatTable } from './output.js';
import { KIND_COLUMNS } from '../core/api/columns.js';
import {
  age,
  formatLabels,
  statusOf,
  deliveryStateText,
  upgradeStateText,
  type AgentUpgradeStatusView,
  type DataObjectStatusView,
  type ApiObject,
  type EdgeStatus,
} from './views.js';

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

/** The `get` table for objects of one kind. */
export function formatObjectTable(info: KindInfo, objects: ApiObject[], opts: TableOptions): string {
  const h = KIND_COLUMNS[info.kind];
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
