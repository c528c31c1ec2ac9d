/** Placements with their selector, selected edges, READY x/y with the worst state, and rollout phase. */
import { enc } from '../api.js';
import { Badge } from '../components/badge.js';
import { Link } from '../components/link.js';
import { ObjectList } from '../components/object-list.js';
import { ReadyBar } from '../components/ready-bar.js';
import { formatSelector } from '../../../core/selector.js';
import type { PlacementObj } from '../types.js';

export function selectorText(p: PlacementObj): string {
  const parts: string[] = [];
  if (p.spec.edgeSelector) parts.push(formatSelector(p.spec.edgeSelector));
  if (p.spec.edges?.length) parts.push(`edges: ${p.spec.edges.join(', ')}`);
  return parts.join(' + ');
}

export function Placements() {
  return (
    <ObjectList<PlacementObj>
      kind="placements"
      title="Placements"
      columns={6}
      empty="No placements yet."
      head={
        <>
          <th scope="col">Name</th>
          <th scope="col">Workloads</th>
          <th scope="col">Selector</th>
          <th scope="col">Edges</th>
          <th scope="col" class="w-ready">
            Status
          </th>
          <th scope="col">Rollout</th>
        </>
      }
      row={(p) => (
        <tr key={p.metadata.name}>
          <th scope="row">
            <Link href={`/placements/${enc(p.metadata.name)}`}>{p.metadata.name}</Link>
          </th>
          <td>{p.spec.workloads.join(', ')}</td>
          <td>
            <code>{selectorText(p)}</code>
          </td>
          <td>{p.status.selectedEdges}</td>
          <td>
            <ReadyBar summary={p.status.summary} label={`placement ${p.metadata.name}`} compact />
          </td>
          <td>
            {p.status.rollout ? (
              <Badge
                value={p.status.rollout.paused ? 'Paused' : p.status.rollout.phase}
                title={p.status.rollout.reason}
              />
            ) : (
              '—'
            )}
          </td>
        </tr>
      )}
    />
  );
}
