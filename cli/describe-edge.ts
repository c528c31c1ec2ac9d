/**
 * @module `outpost describe edge`: its state and the hub replica serving it, its inventory,
 * workloads, the agent releases it switched to (committed or rolled back, when, ordered by whom,
 * why), the DataObjects it holds and the images it staged, what happened on site (local intents
 * with time and origin, so a person at the hub sees why an edge does not run exactly what the hub
 * asked for), its latest connections with why each ended, and its events with those of the
 * AgentUpgrades about it.
 */
import { formatAge } from '../core/durations.js';
import { describeConnections } from './connections.js';
import { eventsBlock, fields, indent, metadataBlock, section, when, type DescribeOptions } from './describe-blocks.js';
import { cell, formatTable } from './output.js';
import {
  age,
  edgeState,
  formatBytes,
  lastSeenMs,
  NONE,
  ready,
  statusOf,
  type ApiObject,
  type EdgeStatus,
  type IntentView,
} from './views.js';

type AgentRelease = NonNullable<NonNullable<EdgeStatus['inventory']>['agentRelease']>;

/** A switch's state in the words the rest of the CLI uses for it. */
const releaseWord = (state: AgentRelease['state']): string =>
  state === 'rolled-back' ? 'RolledBack' : state === 'committed' ? 'Committed' : 'Switching';

/** The last release switch an edge reported: `9.9.2 RolledBack (from 0.1.0 at ...): reason`. */
function agentRelease(r: AgentRelease | undefined): string | undefined {
  if (!r) return undefined;
  return `${r.version} ${releaseWord(r.state)} (from ${r.previousVersion} at ${r.at})${r.reason ? `: ${r.reason}` : ''}`;
}

/** The switches that ended on the edge, newest first, each with when, who ordered it and why it rolled back. */
function releaseHistoryBlock(r: AgentRelease | undefined, now: number): string {
  const history = r?.history ?? [];
  if (history.length === 0) return '';
  const rows = history.map((h) => [
    when(h.at, now) ?? h.at,
    h.version,
    h.previousVersion,
    releaseWord(h.state),
    h.upgrade ? `agentupgrade/${h.upgrade}` : 'local upgrade',
    h.reason ?? '',
  ]);
  return (
    'Agent release history (newest first, times on the edge):\n' +
    indent(formatTable(['ENDED', 'VERSION', 'FROM', 'RESULT', 'ORDERED BY', 'REASON'], rows))
  );
}

/** The DataObjects the edge was ordered to hold: the version its file holds and where the next one is. */
function dataObjectsBlock(s: EdgeStatus, now: number): string {
  const held = s.dataObjects ?? [];
  if (held.length === 0) return '';
  const rows = held.map((d) => [
    d.name,
    d.path,
    d.holds ?? '-',
    `${d.state} ${d.version}${d.state === 'Downloading' ? ` ${d.percent ?? 0}%` : ''}`,
    age(d.since, now),
    d.reason ?? '',
  ]);
  return 'DataObjects:\n' + indent(formatTable(['NAME', 'PATH', 'HOLDS', 'STATE', 'SINCE', 'REASON'], rows));
}

/** The images the edge staged for a rollout, each with its state (Present, Staging, OverBudget, Failed, Skipped). */
function stagedImagesBlock(s: EdgeStatus): string {
  const st = s.imageStaging;
  if (!st?.images.length) return '';
  const rows = st.images.map((i) => [i.image, i.state, formatBytes(i.size), formatBytes(i.done), i.reason ?? '']);
  return `Staged images (${st.summary}):\n` + indent(formatTable(['IMAGE', 'STATE', 'SIZE', 'DONE', 'REASON'], rows));
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
          // Which hub process serves it (`outpost get replicas`), while it is connected.
          [
            'Served by',
            s.servedBy ? `hub replica ${s.servedBy.replica}${s.servedBy.url ? ` (${s.servedBy.url})` : ''}` : '-',
          ],
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
  out += releaseHistoryBlock(s.inventory?.agentRelease, now);
  out += dataObjectsBlock(s, now);
  out += stagedImagesBlock(s);
  out += localIntentsBlock(o.metadata.name, s, now);
  if (opts.connections !== undefined)
    out +=
      'Connections (newest first):\n' +
      (typeof opts.connections === 'string'
        ? `  <cannot read the connection history: ${opts.connections}>\n`
        : describeConnections(opts.connections, now));
  out += eventsBlock(opts.events, now, { kind: 'Edge', name: o.metadata.name });
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
