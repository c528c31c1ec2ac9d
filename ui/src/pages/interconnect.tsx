/**
 * Interconnect of the project (docs/interconnect.md): the ServiceExports with the edges serving
 * each (online, workload phase, healthy, what this hub relayed to it) and the ServiceImports with
 * the edges consuming each (listening, connections, errors, bytes, connect latency, why refused).
 * Read-only: the objects are applied like the others (`outpost apply -f`).
 */
import { enc } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
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
      <div class="table-wrap">
        <table class="table" aria-label="Exports">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Workload</th>
              <th scope="col">Port</th>
              <th scope="col">Allowed projects</th>
              <th scope="col">Status</th>
              <th scope="col">Age</th>
            </tr>
          </thead>
          <tbody>
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
            {ex.length === 0 && !exports.loading && (
              <tr>
                <td colSpan={6} class="muted">
                  No ServiceExports in this project.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <h3>Serving edges</h3>
      <div class="table-wrap">
        <table class="table" aria-label="Serving edges">
          <thead>
            <tr>
              <th scope="col">Export</th>
              <th scope="col">Edge</th>
              <th scope="col">Online</th>
              <th scope="col">Phase</th>
              <th scope="col">Healthy</th>
              <th scope="col">Open</th>
              <th scope="col">Total</th>
              <th scope="col">Failed</th>
              <th scope="col">Last error</th>
            </tr>
          </thead>
          <tbody>
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
          </tbody>
        </table>
      </div>
      <h2>Imports</h2>
      <div class="table-wrap">
        <table class="table" aria-label="Imports">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Export</th>
              <th scope="col">Port</th>
              <th scope="col">Open</th>
              <th scope="col">Errors</th>
              <th scope="col">Connect p50 / p99</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
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
            {im.length === 0 && !imports.loading && (
              <tr>
                <td colSpan={7} class="muted">
                  No ServiceImports in this project.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <h3>Consuming edges</h3>
      <div class="table-wrap">
        <table class="table" aria-label="Consuming edges">
          <thead>
            <tr>
              <th scope="col">Import</th>
              <th scope="col">Edge</th>
              <th scope="col">Online</th>
              <th scope="col">Listening</th>
              <th scope="col">Open</th>
              <th scope="col">Total</th>
              <th scope="col">Refused</th>
              <th scope="col">Failed</th>
              <th scope="col">Sent / received</th>
              <th scope="col">Connect p50 / p99</th>
              <th scope="col">Last error</th>
            </tr>
          </thead>
          <tbody>
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
          </tbody>
        </table>
      </div>
    </>
  );
}
