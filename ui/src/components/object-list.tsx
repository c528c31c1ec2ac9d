/** A project's list of one kind of object: title with the Apply button, the table, the pager. */
import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { enc, query } from '../api.js';
import { useGet } from '../hooks.js';
import { can, useApp } from '../store.js';
import type { List } from '../types.js';
import { ErrorBox } from './error-box.js';
import { Link } from './link.js';
import { Pager } from './pager.js';

export interface ObjectListProps<T> {
  /** The API path segment: `workloads`, `placements`. */
  kind: string;
  title: string;
  /** The header cells (`<th scope="col">`). */
  head: ComponentChildren;
  columns: number;
  row: (item: T) => JSX.Element;
  empty: string;
}

export function ObjectList<T extends { metadata: { name: string } }>(p: ObjectListProps<T>) {
  const session = useApp().session!;
  const [cursors, setCursors] = useState<string[]>([]);
  const list = useGet<List<T>>(
    `/api/v1/projects/${enc(session.project)}/${p.kind}${query({ limit: 50, continue: cursors[cursors.length - 1] })}`,
  );
  const items = list.data?.items ?? [];
  return (
    <>
      <div class="title-row">
        <h1>{p.title}</h1>
        {can(session, 'write') && (
          <Link href="/apply" class="btn primary">
            Apply YAML…
          </Link>
        )}
      </div>
      <ErrorBox error={list.error} />
      <div class="table-wrap">
        <table class="table">
          <caption class="sr-only">
            {p.title} of project {session.project}
          </caption>
          <thead>
            <tr>{p.head}</tr>
          </thead>
          <tbody>
            {items.map((item) => p.row(item))}
            {list.data && items.length === 0 && (
              <tr>
                <td colSpan={p.columns} class="empty">
                  {p.empty}
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <Pager
        label={p.title}
        page={cursors.length}
        shown={items.length}
        hasNext={!!list.data?.continue}
        onPrev={() => setCursors(cursors.slice(0, -1))}
        onNext={() => list.data?.continue && setCursors([...cursors, list.data.continue])}
      />
    </>
  );
}
