/** Workloads of the project with their revision and READY x/y over every edge that runs them. */
import { useState } from 'preact/hooks';
import { enc, query } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
import { Link } from '../components/link.js';
import { Pager } from '../components/pager.js';
import { ReadyBar } from '../components/ready-bar.js';
import { useGet } from '../hooks.js';
import { can, useApp } from '../store.js';
import type { List, WorkloadObj } from '../types.js';

export function Workloads() {
  const session = useApp().session!;
  const [cursors, setCursors] = useState<string[]>([]);
  const list = useGet<List<WorkloadObj>>(`/api/v1/projects/${enc(session.project)}/workloads${query({ limit: 50, continue: cursors[cursors.length - 1] })}`);
  const items = list.data?.items ?? [];
  return (
    <>
      <div class="title-row">
        <h1>Workloads</h1>
        {can(session, 'write') && (
          <Link href="/apply" class="btn primary">
            Apply YAML…
          </Link>
        )}
      </div>
      <ErrorBox error={list.error} />
      <div class="table-wrap">
        <table class="table">
          <caption class="sr-only">Workloads of project {session.project}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Revision</th>
              <th scope="col">Manifests</th>
              <th scope="col" class="w-ready">
                Status on edges
              </th>
            </tr>
          </thead>
          <tbody>
            {items.map((w) => (
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
            ))}
            {list.data && items.length === 0 && (
              <tr>
                <td colSpan={4} class="empty">
                  No workloads yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <Pager label="Workloads" page={cursors.length} shown={items.length} hasNext={!!list.data?.continue} onPrev={() => setCursors(cursors.slice(0, -1))} onNext={() => list.data?.continue && setCursors([...cursors, list.data.continue])} />
    </>
  );
}
