/**
 * Interconnect of the project (docs/interconnect.md): the ServiceExports with the edges serving
 * each (online, workload phase, healthy, what this hub relayed to it) and the ServiceImports with
 * the edges consuming each (listening, connections, errors, bytes, connect latency, why refused).
 * Read-only: the objects are applied like the others (`outpost apply -f`).
 */
import { enc } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
import { Table } from '../components/table.js';
import { ago, bytes } from '../format.js';
import { useGet } from '../hooks.js';
import { useApp } from '../store.js';
import type { ServiceExportStatusView, ServiceImportStatusView } from '../../../core/api/interconnect-views.js';
import type { ServiceExportSpec, ServiceImportSpec } from '../../../core/resources.js';
import type { List } from '../types.js';

interface ObjectView<S, T> {
  metadata: { name: string; creationTimestamp?: string };
  spec: S;
  status?: Partial<T>;
}
type ExportView = ObjectView<ServiceExportSpec, ServiceExportStatusView>;
type ImportView = ObjectView<ServiceImportSpec, ServiceImportStatusView>;

const ms = (v: number | undefined) => (v === undefined ? '-' : `${Math.round(v)} ms`);
const yes = (b: boolean | undefined) => (b ? 'yes' : 'no');

export function Interconnect() {
  const session = useApp().session!;
  const base = `/api/v1/projects/${enc(session.project)}`;
  const exports = useGet<List<ExportView>>(`${base}/serviceexports`);
  const imports = useGet<List<ImportView>>(`${base}/serviceimports`);
  const ex = exports.data?.items ?? [];
  const im = imports.data?.items ?? [];
  return (
    <>
      <div class="title-row">
        <h1>Interconnect</h1>
      </div>
      <p class="muted">
        TCP services of one site reached from others through the hub, over the edges' own connections: a ServiceExport
        offers a workload's port, a ServiceImport makes it appear on 127.0.0.1 of the edges it selects.
      </p>
      <ErrorBox error={exports.error ?? imports.error} />
      <h2>Exports</h2>
      <Table
        columns={['Name', 'Workload', 'Port', 'Allowed projects', 'Status', 'Age']}
        label="Exports"
        count={ex.length}
        loading={exports.loading}
        empty="No ServiceExports in this project."
      >
        {ex.map((o) => (
          <tr key={o.metadata.name}>
            <th scope="row">{o.metadata.name}</th>
            <td>{o.spec.workload}</td>
            <td>{o.spec.port}</td>
            <td>{o.spec.allowedProjects?.join(', ') || '-'}</td>
            <td>{o.status?.summary ?? '-'}</td>
            <td>{o.metadata.creationTimestamp ? ago(o.metadata.creationTimestamp) : '-'}</td>
          </tr>
        ))}
      </Table>
      <h3>Serving edges</h3>
      <Table
        columns={['Export', 'Edge', 'Online', 'Phase', 'Healthy', 'Open', 'Total', 'Failed', 'Last error']}
        label="Serving edges"
      >
        {ex.flatMap((o) =>
          (o.status?.serving ?? []).map((e) => (
            <tr key={`${o.metadata.name}/${e.edge}`}>
              <td>{o.metadata.name}</td>
              <th scope="row">{e.edge}</th>
              <td>{yes(e.online)}</td>
              <td>{e.phase ?? '-'}</td>
              <td>{yes(e.healthy)}</td>
              <td>{e.open ?? 0}</td>
              <td>{e.total ?? 0}</td>
              <td>{e.failed ?? 0}</td>
              <td>{e.lastError ?? '-'}</td>
            </tr>
          )),
        )}
      </Table>
      <h2>Imports</h2>
      <Table
        columns={['Name', 'Export', 'Port', 'Open', 'Errors', 'Connect p50 / p99', 'Status']}
        label="Imports"
        count={im.length}
        loading={imports.loading}
        empty="No ServiceImports in this project."
      >
        {im.map((o) => (
          <tr key={o.metadata.name}>
            <th scope="row">{o.metadata.name}</th>
            <td>{o.status?.export ?? `${o.spec.project ?? session.project}/${o.spec.export}`}</td>
            <td>{o.spec.port}</td>
            <td>{o.status?.open ?? 0}</td>
            <td>{o.status?.errors ?? 0}</td>
            <td>
              {ms(o.status?.connectP50Ms)} / {ms(o.status?.connectP99Ms)}
            </td>
            <td>{o.status?.summary ?? '-'}</td>
          </tr>
        ))}
      </Table>
      <h3>Consuming edges</h3>
      <Table
        columns={[
          'Import',
          'Edge',
          'Online',
          'Listening',
          'Open',
          'Total',
          'Refused',
          'Failed',
          'Sent / received',
          'Connect p50 / p99',
          'Last error',
        ]}
        label="Consuming edges"
      >
        {im.flatMap((o) =>
          (o.status?.edges ?? []).map((e) => (
            <tr key={`${o.metadata.name}/${e.edge}`}>
              <td>{o.metadata.name}</td>
              <th scope="row">{e.edge}</th>
              <td>{yes(e.online)}</td>
              <td>{e.listening ? 'yes' : e.error ? `no: ${e.error}` : 'no'}</td>
              <td>{e.open}</td>
              <td>{e.total}</td>
              <td>{e.refused}</td>
              <td>{e.failed}</td>
              <td>
                {bytes(e.bytesOut)} / {bytes(e.bytesIn)}
              </td>
              <td>
                {ms(e.connectP50Ms)} / {ms(e.connectP99Ms)}
              </td>
              <td>{e.refusing ?? e.lastError ?? '-'}</td>
            </tr>
          )),
        )}
      </Table>
    </>
  );
}
