import { enc } from '../api.js';
import { Link } from '../components/link.js';
import type { Summary } from '../types.js';

/** The hub's bounded list of what is not ready and why (placement spec.statusSummary.maxBroken). */
export function BrokenList(props: { summary: Summary; title?: string }) {
  const { broken } = props.summary;
  const notReady = props.summary.total - props.summary.ready;
  return (
    <section aria-labelledby="broken-h">
      <h2 id="broken-h">{props.title ?? 'Not ready'}</h2>
      {broken.length === 0 ? (
        <p class="muted">{notReady === 0 ? 'Everything is ready.' : `${notReady} not ready yet, none broken.`}</p>
      ) : (
        <div class="table-wrap">
          <table class="table compact">
            <thead>
              <tr>
                <th scope="col">Edge</th>
                <th scope="col">Workload</th>
                <th scope="col">Object</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              {broken.map((b, i) => (
                <tr key={i}>
                  <th scope="row">
                    <Link href={`/edges/${enc(b.edge)}`}>{b.edge}</Link>
                  </th>
                  <td>
                    <Link href={`/workloads/${enc(b.workload)}`}>{b.workload}</Link>
                  </td>
                  <td>{b.object ?? '—'}</td>
                  <td>{b.reason}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {broken.length < notReady && (
            <p class="muted">
              Showing the first {broken.length} of {notReady} not ready.
            </p>
          )}
        </div>
      )}
    </section>
  );
}
