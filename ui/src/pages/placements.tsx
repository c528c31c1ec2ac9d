/** Placements with their selector, selected edges, READY x/y with the worst state, and rollout phase. */
import { useState } from 'preact/hooks';
import { enc, query } from '../api.js';
import { Badge } from '../components/badge.js';
import { ErrorBox } from '../components/error-box.js';
import { Link } from '../components/link.js';
import { Pager } from '../components/pager.js';
import { ReadyBar } from '../components/ready-bar.js';
import { selectorString } from '../format.js';
import { useGet } from '../hooks.js';
import { can, useApp } from '../store.js';
import type { List, PlacementObj } from '../types.js';

export function selectorText(p: PlacementObj): string {
  const parts: string[] = [];
  if (p.spec.edgeSelector) parts.push(selectorString(p.spec.edgeSelector));
  if (p.spec.edges?.length) parts.push(`edges: ${p.spec.edges.join(', ')}`);
  return parts.join(' + ');
}

export function Placements() {
  const session = useApp().session!;
  const [cursors, setCursors] = useState<string[]>([]);
  const list = useGet<List<PlacementObj>>(`/api/v1/projects/${enc(session.project)}/placements${query({ limit: 50, continue: cursors[cursors.length - 1] })}`);
  const items = list.data?.items ?? [];
  return (
    <>
      <div class="title-row">
        <h1>Placements</h1>
        {can(session, 'write') && (
          <Link href="/apply" class="btn primary">
            Apply YAML…
          </Link>
        )}
      </div>
      <ErrorBox error={list.error} />
      <div class="table-wrap">
        <table class="table">
          <caption class="sr-only">Placements of project {session.project}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Workloads</th>
              <th scope="col">Selector</th>
              <th scope="col">Edges</th>
              <th scope="col" class="w-ready">
                Status
              </th>
              <th scope="col">Rollout</th>
            </tr>
          </thead>
          <tbody>
            {items.map((p) => (
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
                <td>{p.status.rollout ? <Badge value={p.status.rollout.paused ? 'Paused' : p.status.rollout.phase} title={p.status.rollout.reason} /> : '—'}</td>
              </tr>
            ))}
            {list.data && items.length === 0 && (
              <tr>
                <td colSpan={6} class="empty">
                  No placements yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <Pager label="Placements" page={cursors.length} shown={items.length} hasNext={!!list.data?.continue} onPrev={() => setCursors(cursors.slice(0, -1))} onNext={() => list.data?.continue && setCursors([...cursors, list.data.continue])} />
    </>
  );
}
