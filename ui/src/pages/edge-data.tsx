/**
 * Data on the edge detail page (docs/data.md): the DataObjects the edge holds (the version its file
 * holds, and where the next one is, as the edge last reported), and the files its workloads
 * exported: what the hub holds, newest version of each path, and how much still waits on the edge
 * as its last heartbeat said (the files themselves are listed once they arrive). A workload whose
 * queue reached its bound shows as Degraded with the reason in the Workloads table.
 */
import { enc } from '../api.js';
import { Badge } from '../components/badge.js';
import { ErrorBox } from '../components/error-box.js';
import { Link } from '../components/link.js';
import { ago, bytes, dateTime } from '../format.js';
import { useGet } from '../hooks.js';
import type { DataFile, EgressQueue } from '../../../core/data.js';
import type { EdgeStatus, List } from '../types.js';

export function HeldDataObjects(props: { objects: EdgeStatus['dataObjects'] }) {
  const objects = props.objects ?? [];
  return (
    <section aria-labelledby="held-h">
      <h2 id="held-h">DataObjects</h2>
      {objects.length === 0 ? (
        <p class="muted">No DataObject selects this edge.</p>
      ) : (
        <div class="table-wrap">
          <table class="table compact">
            <thead>
              <tr>
                <th scope="col">DataObject</th>
                <th scope="col">Path</th>
                <th scope="col">File holds</th>
                <th scope="col">State</th>
                <th scope="col">Since</th>
              </tr>
            </thead>
            <tbody>
              {objects.map((d) => (
                <tr key={d.name}>
                  <th scope="row">
                    <Link href={`/dataobjects/${enc(d.name)}`}>{d.name}</Link>
                  </th>
                  <td>
                    <code>{d.path}</code>
                  </td>
                  <td>{d.holds ?? '—'}</td>
                  <td>
                    <Badge value={d.state} /> {d.version}
                    {d.state === 'Downloading' && ` ${d.percent ?? 0}%`}
                    {d.reason && <div class="reason">{d.reason}</div>}
                  </td>
                  <td>
                    <time dateTime={d.since} title={dateTime(d.since)}>
                      {ago(d.since)}
                    </time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** One item of `GET .../edges/E/data-files` (core/data.ts). */
export type DataFileView = DataFile;

export function ExportedFiles(props: { project: string; edge: string }) {
  const list = useGet<List<DataFileView> & { queue?: EgressQueue }>(
    `/api/v1/projects/${enc(props.project)}/edges/${enc(props.edge)}/data-files`,
  );
  const items = list.data?.items ?? [];
  const queue = list.data?.queue;
  return (
    <section aria-labelledby="data-h">
      <h2 id="data-h">Exported files</h2>
      <p class="muted">
        On the hub: {items.length} file{items.length === 1 ? '' : 's'}, {bytes(items.reduce((n, f) => n + f.size, 0))}.
        {queue && (
          <>
            {' '}
            Waiting on the edge: {queue.files} file{queue.files === 1 ? '' : 's'}, {bytes(queue.bytes)} (as it said{' '}
            {ago(queue.reportedAt)}).
          </>
        )}{' '}
        Download with <code>outpost data get edge/{props.edge} WORKLOAD PATH</code>.
      </p>
      <ErrorBox error={list.error} />
      <div class="table-wrap">
        <table class="table compact">
          <thead>
            <tr>
              <th scope="col">Workload</th>
              <th scope="col">Path</th>
              <th scope="col">Size</th>
              <th scope="col">Digest</th>
              <th scope="col">Modified on the edge</th>
              <th scope="col">Uploaded</th>
            </tr>
          </thead>
          <tbody>
            {items.map((f) => (
              <tr key={`${f.workload}/${f.path}`}>
                <td>{f.workload}</td>
                <th scope="row">{f.path}</th>
                <td>{bytes(f.size)}</td>
                <td>
                  <code title={f.digest}>{f.digest.slice(0, 19)}…</code>
                </td>
                <td>{dateTime(f.modifiedAt)}</td>
                <td>{ago(f.uploadedAt)}</td>
              </tr>
            ))}
            {list.data && items.length === 0 && (
              <tr>
                <td colSpan={6} class="empty">
                  No exported files yet (a workload exports with the data.outpost.dev/egress annotation).
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </section>
  );
}
