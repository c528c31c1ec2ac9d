/**
 * @module `outpost describe serviceexport|serviceimport NAME` (docs/interconnect.md): what an export
 * offers and which edges serve it (healthy, and what the answering hub relayed to each); what an
 * import listens on, why its connections are refused if they are, and per consuming edge its
 * connections, errors, bytes and connect latency.
 */
import type { ServiceExportStatusView, ServiceImportStatusView } from '../core/api/interconnect-views.js';
import { eventsBlock, fields, metadataBlock, section, when, type DescribeOptions } from './describe-blocks.js';
import { formatTable } from './output.js';
import { formatBytes, NONE, statusOf, type ApiObject } from './views.js';

const ms = (v: number | undefined) => (v === undefined ? '-' : `${Math.round(v)}ms`);

export function describeServiceExport(o: ApiObject, opts: DescribeOptions): string {
  const spec = (o.spec ?? {}) as {
    workload?: string;
    port?: number;
    protocol?: string;
    allowedProjects?: string[];
    idleTimeoutSeconds?: number;
  };
  const s = statusOf<Partial<ServiceExportStatusView>>(o);
  let out = metadataBlock(o, opts.now, [
    ['Workload', spec.workload ?? '-'],
    ['Port', `${spec.port ?? '-'}/${spec.protocol ?? 'tcp'}`],
    ['Allowed projects', spec.allowedProjects?.length ? spec.allowedProjects.join(', ') : `${NONE} (its own only)`],
    ['Idle timeout', `${spec.idleTimeoutSeconds ?? '-'}s`],
  ]);
  out += section('Status', fields([['Summary', s.summary ?? '-']]));
  out += section(
    'Serving edges (connections: relayed by the hub replica that answered)',
    s.serving?.length
      ? formatTable(
          ['EDGE', 'ONLINE', 'PHASE', 'HEALTHY', 'OPEN', 'TOTAL', 'FAILED', 'SENT', 'RECEIVED', 'LAST ERROR'],
          s.serving.map((e) => [
            e.edge,
            e.online ? 'yes' : 'no',
            e.phase ?? '-',
            e.healthy ? 'yes' : 'no',
            String(e.open ?? 0),
            String(e.total ?? 0),
            String(e.failed ?? 0),
            formatBytes(e.bytesOut ?? 0),
            formatBytes(e.bytesIn ?? 0),
            e.lastError ? `${e.lastError} (${when(e.lastErrorAt, opts.now) ?? '?'})` : '-',
          ]),
        )
      : `${NONE}\n`,
  );
  out += eventsBlock(opts.events, opts.now);
  return out;
}

export function describeServiceImport(o: ApiObject, opts: DescribeOptions): string {
  const spec = (o.spec ?? {}) as { export?: string; project?: string; port?: number };
  const s = statusOf<Partial<ServiceImportStatusView>>(o);
  let out = metadataBlock(o, opts.now, [
    ['Export', s.export ?? `${spec.project ?? o.metadata.project ?? '-'}/${spec.export ?? '-'}`],
    ['Listens on', `127.0.0.1:${spec.port ?? '-'} of each consuming edge`],
  ]);
  out += section(
    'Status',
    fields([
      ['Summary', s.summary ?? '-'],
      ['Refused', s.refused],
      ['Connections', `${s.open ?? 0} open, ${s.errors ?? 0} refused or failed`],
      ['Bytes', `${formatBytes(s.bytesOut ?? 0)} sent, ${formatBytes(s.bytesIn ?? 0)} received`],
      ['Connect latency', `p50 ${ms(s.connectP50Ms)}, p99 ${ms(s.connectP99Ms)} (the slowest edge)`],
    ]),
  );
  out += section(
    'Consuming edges',
    s.edges?.length
      ? formatTable(
          [
            'EDGE',
            'ONLINE',
            'LISTENING',
            'OPEN',
            'TOTAL',
            'REFUSED',
            'FAILED',
            'SENT',
            'RECEIVED',
            'P50',
            'P99',
            'LAST ERROR',
          ],
          s.edges.map((e) => [
            e.edge,
            e.online ? 'yes' : 'no',
            e.listening ? 'yes' : e.error ? `no: ${e.error}` : 'no',
            String(e.open),
            String(e.total),
            String(e.refused),
            String(e.failed),
            formatBytes(e.bytesOut),
            formatBytes(e.bytesIn),
            ms(e.connectP50Ms),
            ms(e.connectP99Ms),
            e.refusing ?? (e.lastError ? `${e.lastError} (${when(e.lastErrorAt, opts.now) ?? '?'})` : '-'),
          ]),
        )
      : `${NONE}\n`,
  );
  out += eventsBlock(opts.events, opts.now);
  return out;
}
