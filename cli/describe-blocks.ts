/** @module The blocks `outpost describe` builds its views of with (cli/describe.ts, cli/describe-edge.ts). */
import { formatAge } from '../core/durations.js';
import type { Summary } from '../core/status.js';
import type { ConnectionView } from '../core/api/views.js';
import { cell, formatTable, paint } from './output.js';
import { age, ageMs, formatLabels, formatStates, NONE, ready, type ApiObject, type EventView } from './views.js';

export interface DescribeOptions {
  now: number;
  color?: boolean;
  /** Latest events, newest first, as the hub returns them; a string says why they could not be read. */
  events?: EventView[] | string;
  /** An edge's latest connections, newest first; a string says why they could not be read. */
  connections?: Partial<ConnectionView>[] | string;
}

export const indent = (text: string, n = 2): string =>
  text
    .split('\n')
    .map((l) => (l ? ' '.repeat(n) + l : l))
    .join('\n');

/** `Key:` padded so the values line up within a block. */
/**
 * `Key:` padded so the values line up within a block; each value shown through `cell` (control
 * characters escaped), then painted when the pair asks for it (`paint` colours by state).
 */
export type Field = [key: string, value: string | undefined, paint?: 'paint'];
export function fields(pairs: Field[], color = false): string {
  const shown = pairs.filter((p): p is [string, string, 'paint' | undefined] => p[1] !== undefined);
  const w = Math.max(...shown.map(([k]) => k.length)) + 2;
  return shown.map(([k, v, p]) => `${(k + ':').padEnd(w)}${p ? paint(cell(v), color) : cell(v)}`).join('\n') + '\n';
}

export function when(t: string | number | undefined, now: number): string | undefined {
  const ms = ageMs(t, now);
  if (ms === undefined) return undefined;
  const iso = typeof t === 'number' ? new Date(t).toISOString() : String(t);
  return `${iso} (${formatAge(ms)} ago)`;
}

export function metadataBlock(o: ApiObject, now: number, extra: [string, string | undefined][] = []): string {
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

export function summaryBlock(s: Summary | undefined, color: boolean, lead: [string, string][] = []): string {
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

/**
 * The events of the object described (`self`); those of other objects about it (an edge's
 * AgentUpgrade events) get an OBJECT column naming theirs.
 */
export function eventsBlock(
  events: EventView[] | string | undefined,
  now: number,
  self?: { kind: string; name: string },
): string {
  if (events === undefined) return '';
  if (typeof events === 'string') return `Events:\n  <cannot read events: ${events}>\n`;
  if (events.length === 0) return `Events:\n  ${NONE}\n`;
  // The hub answers newest first; read top to bottom like a log, as kubectl does.
  const ordered = [...events].reverse();
  const other = (e: EventView) => !!self && !!e.kind && (e.kind !== self.kind || e.name !== self.name);
  if (!ordered.some(other))
    return (
      'Events:\n' +
      indent(
        formatTable(
          ['AGE', 'REASON', 'MESSAGE'],
          ordered.map((e) => [age(e.at ?? e.time, now), e.reason, e.message]),
        ),
      )
    );
  const rows = ordered.map((e) => [
    age(e.at ?? e.time, now),
    other(e) ? `${e.kind!.toLowerCase()}/${e.name}` : '-',
    e.reason,
    e.message,
  ]);
  return 'Events:\n' + indent(formatTable(['AGE', 'OBJECT', 'REASON', 'MESSAGE'], rows));
}

export function section(title: string, body: string): string {
  return `${title}:\n${indent(body)}`;
}
