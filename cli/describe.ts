/**
 * @module `outpost describe`: a human-readable, multi-section view of one object. For edges it
 * shows what happened on site too (local intents with time and origin), so a person at the hub
 * sees why an edge does not run exactly what the hub asked for.
 */
import { formatAge } from '../core/durations.js';
import type { Summary } from '../core/status.js';
import { DEFAULT_MAX_UNAVAILABLE } from '../core/resources.js';
import { formatSelector } from '../core/selector.js';
import type { LabelSelector } from '../core/resources.js';
import { cell, formatTable, paint } from './output.js';
import { formatDeliveryEdges, formatUpgradeEdges } from './tables.js';
import {
  age,
  ageMs,
  edgeState,
  formatBytes,
  formatLabels,
  formatStates,
  lastSeenMs,
  NONE,
  ready,
  rolloutCounts,
  statusOf,
  type AgentUpgradeStatusView,
  type DataObjectStatusView,
  type ApiObject,
  type EdgeStatus,
  type EventView,
  type IntentView,
  type PlacementStatus,
  type WorkloadStatus,
} from './views.js';

export interface DescribeOptions {
  now: number;
  color?: boolean;
  /** Latest events, newest first, as the hub returns them; a string says why they could not be read. */
  events?: EventView[] | string;
}

export const indent = (text: string, n = 2): string =>
  text
    .split('\n')
    .map((l) => (l ? ' '.repeat(n) + l : l))
    .join('\n');

/**
 * `Key:` padded so the values line up within a block; each value shown through `cell` (control
 * characters escaped), then painted when the pair asks for it (`paint` colours by state).
 */
type Field = [key: string, value: string | undefined, paint?: 'paint'];
export function fields(pairs: Field[], color = false): string {
  const shown = pairs.filter((p): p is [string, string, 'paint' | undefined] => p[1] !== undefined);
  const w = Math.max(...shown.map(([k]) => k.length)) + 2;
  return shown.map(([k, v, p]) => `${(k + ':').padEnd(w)}${p ? paint(cell(v), color) : cell(v)}`).join('\n') + '\n';
}

function when(t: string | number | undefined, now: number): string | undefined {
  const ms = ageMs(t, now);
  if (ms === undefined) return undefined;
  const iso = typeof t === 'number' ? new Date(t).toISOString() : String(t);
  return `${iso} (${formatAge(ms)} ago)`;
}

function metadataBlock(o: ApiObject, now: number, extra: [string, string | undefined][] = []): string {
  const m = o.metadata;
  const annotations = Object.entries(m.annotations ?? {});
  return fields([
    ['Name', m.name],
    ['Kind', o.kind],
    ['Project', m.project ?? '-'],
    ['Labels', formatLabels(m.labels)],
    ['Annotations', annotations.length ? annotations.map(([k, v]) => `${k}=${v}`).join(', ') : NONE],
    ['Created', when(m.creationTimestamp, now) ?? '-'],
    ['Generation', m.generation === undefined ? undefined : String(m.generation)],
    ['Resource version', m.resourceVersion],
    ...extra,
  ]);
}

function summaryBlock(s: Summary | undefined, color: boolean, lead: [string, string][] = []): string {
  let out = fields(
    [...lead, ['Ready', ready(s)], ['Worst', s?.worst ?? '-', 'paint'], ['States', formatStates(s)]],
    color,
  );
  const broken = s?.broken ?? [];
  if (broken.length > 0) {
    out += 'Broken:\n';
    out += indent(
      formatTable(
        ['EDGE', 'WORKLOAD', 'OBJECT', 'REASON'],
        broken.map((b) => [b.edge, b.workload, b.object ?? '-', b.reason]),
      ),
    );
  }
  return out;
}

export function eventsBlock(events: EventView[] | string | undefined, now: number): string {
  if (events === undefined) return '';
  if (typeof events === 'string') return `Events:\n  <cannot read events: ${events}>\n`;
  if (events.length === 0) return `Events:\n  ${NONE}\n`;
  // The hub answers newest first; read top to bottom like a log, as kubectl does.
  const rows = [...events].reverse().map((e) => [age(e.at ?? e.time, now), e.reason, e.message]);
  return 'Events:\n' + indent(formatTable(['AGE', 'REASON', 'MESSAGE'], rows));
}

/** The last release switch an edge reported: `9.9.2 RolledBack (from 0.1.0 at ...): reason`. */
function agentRelease(r: NonNullable<EdgeStatus['inventory']>['agentRelease']): string | undefined {
  if (!r) return undefined;
  const word = r.state === 'rolled-back' ? 'RolledBack' : r.state === 'committed' ? 'Committed' : 'Switching';
  return `${r.version} ${word} (from ${r.previousVersion} at ${r.at})${r.reason ? `: ${r.reason}` : ''}`;
}

export function section(title: string, body: string): string {
  return `${title}:\n${indent(body)}`;
}

function intentDetails(i: IntentView): string {
  if (i.action === 'override') {
    const set = Object.entries(i.set ?? {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
    return set.length ? set.join(', ') : '-';
  }
  return '-';
}

export function describeEdge(o: ApiObject, opts: DescribeOptions): string {
  const { now } = opts;
  const s = statusOf<EdgeStatus>(o);
  const unschedulable = (o.spec as { unschedulable?: boolean } | undefined)?.unschedulable;
  const seen = lastSeenMs(s, now);
  let out = metadataBlock(o, now);
  out +=
    'Status:\n' +
    indent(
      fields(
        [
          ['State', edgeState(o, now), 'paint'],
          [
            'Schedulable',
            unschedulable ? `no (drained: run \`outpost edge uncordon ${o.metadata.name}\` to take work again)` : 'yes',
          ],
          ['Last seen', seen === undefined ? 'never' : `${formatAge(seen)} ago${s.lastSeen ? ` (${s.lastSeen})` : ''}`],
          ['Connected since', s.connectedSince],
          ['Agent version', s.agentVersion ?? s.inventory?.agentVersion],
          ['Agent release', agentRelease(s.inventory?.agentRelease)],
          ['Workloads ready', ready(s.summary)],
          // Pre-staging (docs/drivers.md): `images staged 3/3, 412 MB`, with why when one is stuck.
          [
            'Images',
            s.imageStaging
              ? [
                  s.imageStaging.summary,
                  ...s.imageStaging.images
                    .filter((i) => i.reason && i.state !== 'Skipped')
                    .map((i) => `${i.state}: ${i.reason}`),
                ].join('; ')
              : undefined,
          ],
        ],
        !!opts.color,
      ),
    );
  if (s.phase === 'Pending') out += `  (approve it with \`outpost edge approve ${o.metadata.name}\`)\n`;
  const inv = s.inventory;
  out += inv
    ? section(
        'Inventory',
        fields([
          ['Hostname', inv.hostname ?? '-'],
          ['OS/arch', `${inv.os ?? '?'}/${inv.arch ?? '?'}`],
          ['CPUs', inv.cpus === undefined ? '-' : String(inv.cpus)],
          ['Memory', formatBytes(inv.memoryBytes)],
          ['Driver', inv.driver ?? '-'],
          ['Runtimes', inv.runtimes?.length ? inv.runtimes.join(', ') : '-'],
          ['CPU model', inv.cpuModel],
          ['Vendor', inv.vendor],
          ['Product', inv.product],
          ['Serial', inv.serial],
          [
            'Disks',
            inv.disks?.length
              ? inv.disks
                  .map(
                    (d) =>
                      `${d.name} ${formatBytes(d.sizeBytes)}${d.rotational === false ? ' ssd' : d.rotational ? ' hdd' : ''}${d.removable ? ' removable' : ''}${d.model ? ` (${d.model})` : ''}`,
                  )
                  .join(', ')
              : undefined,
          ],
          [
            'NICs',
            inv.nics?.length
              ? inv.nics
                  .map(
                    (n) =>
                      `${n.name}${n.mac ? ` ${n.mac}` : ''}${n.speedMbps ? ` ${n.speedMbps} Mb/s` : ''}${n.virtual ? ' virtual' : ''}`,
                  )
                  .join(', ')
              : undefined,
          ],
        ]),
      )
    : 'Inventory:\n  <not reported yet>\n';
  const derived = Object.entries(s.inventoryLabels ?? {});
  if (derived.length)
    out += section(
      'Inventory labels (selectable by placements)',
      derived.map(([k, v]) => cell(`${k}=${v}`)).join('\n') + '\n',
    );
  const wls = s.workloads ?? [];
  out += 'Workloads:\n';
  out += wls.length
    ? indent(
        formatTable(
          ['NAME', 'PLACEMENT', 'STATE', 'GENERATION', 'OBSERVED', 'RESTARTS', 'REASON'],
          wls.map((w) => [
            w.name,
            w.placement ?? '-',
            w.state ?? '-',
            w.generation === undefined ? '-' : String(w.generation),
            w.observedGeneration === undefined ? '-' : String(w.observedGeneration),
            String(w.restarts ?? 0),
            w.reason ?? '',
          ]),
          { color: opts.color, colorColumns: ['STATE'] },
        ),
      )
    : `  ${NONE}\n`;
  out += localIntentsBlock(o.metadata.name, s, now);
  out += eventsBlock(opts.events, now);
  return out;
}

function localIntentsBlock(edge: string, s: EdgeStatus, now: number): string {
  const entries = Object.entries(s.localIntents ?? {}).filter(
    ([, st]) => (st.intents?.length ?? 0) > 0 || st.paused || Object.keys(st.overrides ?? {}).length > 0,
  );
  if (entries.length === 0) return `Local intents made on site:\n  ${NONE}\n`;
  let out = 'Local intents made on site (they win over the hub on what they name until cleared):\n';
  const rows: string[][] = [];
  for (const [wl, st] of entries.sort(([a], [b]) => (a < b ? -1 : 1))) {
    for (const i of st.intents ?? [])
      rows.push([wl, when(i.at, now) ?? '-', i.origin || '-', i.action, intentDetails(i)]);
  }
  out += indent(formatTable(['WORKLOAD', 'TIME', 'ORIGIN', 'ACTION', 'DETAILS'], rows));
  const lines = entries.map(([wl, st]) => {
    const ov = Object.keys(st.overrides ?? {});
    const parts = [st.paused ? 'paused' : '', ov.length ? `overrides ${ov.join(', ')}` : ''].filter(Boolean);
    return cell(`    ${wl}: ${parts.join('; ') || 'no effect'} (clear: \`outpost edge clear ${edge} ${wl}\`)`);
  });
  return out + '  In effect:\n' + lines.join('\n') + '\n';
}

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
  if (o.kind === 'Placement') return describePlacement(o, opts);
  return describeWorkload(o, opts);
}
