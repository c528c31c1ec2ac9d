/** Workloads of the project with their revision and READY x/y over every edge that runs them. */
import { enc } from '../api.js';
import { Link } from '../components/link.js';
import { ObjectList } from '../components/object-list.js';
import { ReadyBar } from '../components/ready-bar.js';
import type { WorkloadObj } from '../types.js';

export function Workloads() {
  return (
    <ObjectList<WorkloadObj>
      kind="workloads"
      title="Workloads"
      columns={4}
      empty="No workloads yet."
      head={
        <>
          <th scope="col">Name</th>
          <th scope="col">Revision</th>
          <th scope="col">Manifests</th>
          <th scope="col" class="w-ready">
            Status on edges
          </th>
        </>
      }
      row={(w) => (
        <tr key={w.metadata.name}>
          <th scope="row">
            <Link href={`/workloads/${enc(w.metadata.name)}`}>{w.metadata.name}</Link>
          </th>
          <td>#{w.status.revision}</td>
          <td>{w.spec.manifests.map((m) => `${m.kind}/${m.metadata.name}`).join(', ')}</td>
          <td>
            <ReadyBar summary={w.status.summary} label={`workload ${w.metadata.name}`} compact />
          </td>
        </tr>
      )}
    />
  );
}
