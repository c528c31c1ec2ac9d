/**
 * DataObjects of the project (docs/data.md, "Data to the sites"): the list with `delivered x/y`,
 * and one object's detail with each selected edge's delivery (Downloading 40%, Waiting until its
 * activation, Delivered v2, Failed: why). Read-only: objects are published with `outpost data publish`.
 */
import { enc } from '../api.js';
import { Badge } from '../components/badge.js';
import { ErrorBox } from '../components/error-box.js';
import { Table } from '../components/table.js';
import { Link } from '../components/link.js';
import { ago, bytes, dateTime } from '../format.js';
import { useGet } from '../hooks.js';
import { useApp } from '../store.js';
import { deliveryStateDetail, type DataObjectStatusView } from '../../../core/api/views.js';
import type { DataObjectSpec } from '../../../core/resources.js';
import type { List } from '../types.js';

export interface DataObjectView {
  metadata: { name: string; creationTimestamp?: string };
  spec: DataObjectSpec;
  /** Absent until the hub has computed it. */
  status?: Partial<DataObjectStatusView>;
}

export function DataObjects() {
  const session = useApp().session!;
  const list = useGet<List<DataObjectView>>(`/api/v1/projects/${enc(session.project)}/dataobjects`);
  const items = list.data?.items ?? [];
  return (
    <>
      <div class="title-row">
        <h1>Data objects</h1>
      </div>
      <p class="muted">
        Files the hub delivers to the edges it selects, written atomically on each edge. Publish one with{' '}
        <code>outpost data publish -f model.bin --name model -l region=eu</code>.
      </p>
      <ErrorBox error={list.error} />
      <Table
        columns={['Name', 'Version', 'Size', 'Path', 'Delivered', 'Age']}
        count={items.length}
        loading={list.loading}
        empty="No data objects in this project."
      >
        {items.map((o) => (
          <tr key={o.metadata.name}>
            <th scope="row">
              <Link href={`/dataobjects/${encodeURIComponent(o.metadata.name)}`}>{o.metadata.name}</Link>
            </th>
            <td>{o.spec.version}</td>
            <td>{bytes(o.spec.size)}</td>
            <td>
              <code>{o.spec.path ?? o.metadata.name}</code>
            </td>
            <td>{o.status?.summary ?? '-'}</td>
            <td>{o.metadata.creationTimestamp ? ago(o.metadata.creationTimestamp) : '-'}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}

export function DataObjectDetail(props: { name: string }) {
  const session = useApp().session!;
  const one = useGet<DataObjectView>(`/api/v1/projects/${enc(session.project)}/dataobjects/${enc(props.name)}`);
  const o = one.data;
  const edges = o?.status?.edges ?? [];
  return (
    <>
      <div class="title-row">
        <h1>Data object {props.name}</h1>
        {o?.status?.summary && <span class="muted">{o.status.summary}</span>}
      </div>
      <ErrorBox error={one.error} />
      {o && (
        <>
          <p>
            Version <strong>{o.spec.version}</strong> <code title={o.spec.digest}>{o.spec.digest.slice(0, 19)}…</code> (
            {bytes(o.spec.size)}) at <code>{o.spec.path ?? o.metadata.name}</code> under each edge's objects directory;{' '}
            {o.spec.activateAt ? `activates ${dateTime(o.spec.activateAt)}` : 'active on arrival'},{' '}
            {o.spec.expiresAt ? `expires ${dateTime(o.spec.expiresAt)}` : 'never expires'}.
          </p>
          <Table
            columns={['Edge', 'Delivery', 'File holds', 'Since', 'Connection']}
            count={edges.length}
            empty="No edge selected."
          >
            {edges.map((e) => (
              <tr key={e.edge}>
                <th scope="row">
                  <Link href={`/edges/${encodeURIComponent(e.edge)}`}>{e.edge}</Link>
                </th>
                <td>
                  <Badge value={e.state} /> {e.state !== 'Delivered' && deliveryStateDetail(e)}
                </td>
                <td>{e.version ?? '-'}</td>
                <td>{e.since ? ago(e.since) : '-'}</td>
                <td>{e.online ? 'Online' : 'Offline'}</td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </>
  );
}
