/**
 * Blobs of the project (docs/bytes.md): files in the hub's content-addressed store, what refers to
 * each, and who uploaded it (an API token, or an edge that sent it over its connection). Read-only:
 * uploads and removals go through `outpost blob push|rm`.
 */
import { enc } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
import { Table } from '../components/table.js';
import { ago, bytes } from '../format.js';
import { useGet } from '../hooks.js';
import { useApp } from '../store.js';
import { AGENT_MEDIA_TYPE, type BlobInfo } from '../../../core/blobs.js';
import type { List } from '../types.js';

/** One item of `GET .../blobs` (core/blobs.ts). */
export type BlobView = BlobInfo;

/** The malware scanner's verdict: agent binaries are scanned before their release is signed. */
function scanText(b: BlobView): string {
  if (b.scan) return `${b.scan.state}${b.scan.signature ? ` (${b.scan.signature})` : ''} · ${b.scan.engine}`;
  return b.mediaType === AGENT_MEDIA_TYPE ? 'not scanned yet' : '—';
}

export function Blobs() {
  const session = useApp().session!;
  const list = useGet<List<BlobView>>(`/api/v1/projects/${enc(session.project)}/blobs`);
  const items = list.data?.items ?? [];
  const total = items.reduce((n, b) => n + b.size, 0);
  return (
    <>
      <div class="title-row">
        <h1>Blobs</h1>
      </div>
      <p class="muted">
        Files of project {session.project} in the hub's blob store, {bytes(total)} in all: agent releases, and what
        edges sent. A blob nothing refers to is removed after the grace period. Upload with{' '}
        <code>outpost blob push FILE</code>.
      </p>
      <ErrorBox error={list.error} />
      <Table
        columns={['Digest', 'Size', 'Media type', 'Uploaded by', 'Age', 'Scan', 'Referred to by']}
        count={items.length}
        loading={list.loading}
        empty="No blobs in this project."
      >
        {items.map((b) => (
          <tr key={b.digest}>
            <th scope="row">
              <code title={b.digest}>{b.digest.slice(0, 19)}…</code>
            </th>
            <td>{bytes(b.size)}</td>
            <td>{b.mediaType}</td>
            <td>{b.uploadedBy}</td>
            <td>{ago(b.createdAt)}</td>
            <td>{scanText(b)}</td>
            <td class="wrap-anywhere">
              {b.references.length > 0 ? b.references.join(', ') : 'nothing (collected after the grace period)'}
            </td>
          </tr>
        ))}
      </Table>
    </>
  );
}
