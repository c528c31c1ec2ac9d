/**
 * @module An edge's connection history as `outpost describe edge` shows it (issue #42): when each
 * connection began and ended, through which hub replica, from where, and why it ended.
 */
import type { ConnectionView, ServedByView } from '../core/api/views.js';
import { formatAge } from '../core/durations.js';
import { formatTable } from './output.js';
import { NONE } from './views.js';

/** A replica as the CLI names it: its URL when the hub knows it, else its id. */
export function replicaName(r: Partial<ServedByView> | undefined): string {
  return r?.url ?? r?.replica ?? '-';
}

/** The table of connections, newest first as the hub gives them; an open one says so. */
export function describeConnections(list: Partial<ConnectionView>[], now: number): string {
  if (!list.length) return `  ${NONE}\n`;
  return formatTable(
    ['CONNECTED', 'ENDED', 'DURATION', 'REPLICA', 'FROM', 'REASON'],
    list.map((c) => {
      const start = c.connectedAt ? Date.parse(c.connectedAt) : NaN;
      const open = c.disconnectedAt === undefined;
      const ms = c.durationMs ?? (open && Number.isFinite(start) ? Math.max(0, now - start) : undefined);
      return [
        c.connectedAt ?? '-',
        open ? '(open)' : c.disconnectedAt!,
        ms === undefined ? '-' : formatAge(ms),
        replicaName(c.servedBy),
        c.remoteAddress ?? '-',
        c.reason ?? (open ? '' : '-'),
      ];
    }),
  )
    .split('\n')
    .map((l) => (l ? `  ${l}` : l))
    .join('\n');
}
