/** One workload: status, manifests (read-only YAML, or the editor), revisions with a diff between two, roll back. */
import { useEffect, useState } from 'preact/hooks';
import { enc } from '../api.js';
import { ConfirmButton } from '../components/confirm.js';
import { DiffView } from '../components/diff-view.js';
import { YamlEditor } from '../components/editor.js';
import { ErrorBox } from '../components/error-box.js';
import { DeleteButton } from '../components/delete-button.js';
import { Link } from '../components/link.js';
import { ReadyBar } from '../components/ready-bar.js';
import { ago, dateTime } from '../format.js';
import { useAction, useGet } from '../hooks.js';
import { api, can, useApp } from '../store.js';
import type { List, Revision, WorkloadObj } from '../types.js';
import { editable, toYaml, toYamlDocs } from '../yaml.js';
import { BrokenList } from './broken.js';
import { Events } from './overview.js';

function Revisions(props: { project: string; name: string; current: number; canWrite: boolean }) {
  const revs = useGet<List<Revision>>(`/api/v1/projects/${enc(props.project)}/workloads/${enc(props.name)}/revisions`);
  const rollback = useAction();
  const items = revs.data?.items ?? [];
  const [from, setFrom] = useState<number>();
  const [to, setTo] = useState<number>();
  useEffect(() => {
    if (items.length >= 2 && (from === undefined || to === undefined)) {
      setFrom(items[items.length - 2].revision);
      setTo(items[items.length - 1].revision);
    }
  }, [items.length]);
  const a = items.find((r) => r.revision === from);
  const b = items.find((r) => r.revision === to);
  return (
    <section aria-labelledby="rev-h">
      <h2 id="rev-h">Revisions</h2>
      <ErrorBox error={revs.error} />
      <ErrorBox error={rollback.error} />
      <div class="table-wrap">
        <table class="table compact">
          <thead>
            <tr>
              <th scope="col">Revision</th>
              <th scope="col">Created</th>
              <th scope="col">Manifests</th>
              {props.canWrite && (
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {[...items].reverse().map((r) => (
              <tr key={r.revision}>
                <th scope="row">
                  #{r.revision} {r.revision === props.current && <span class="tag">current</span>}
                </th>
                <td>
                  <time dateTime={r.createdAt} title={dateTime(r.createdAt)}>
                    {ago(r.createdAt)}
                  </time>
                </td>
                <td>
                  {(r.manifests as { kind?: string; metadata?: { name?: string } }[])
                    .map((m) => `${m.kind}/${m.metadata?.name}`)
                    .join(', ')}
                </td>
                {props.canWrite && (
                  <td>
                    {r.revision !== props.current && (
                      <ConfirmButton
                        label={`Roll back to #${r.revision}`}
                        confirm={`Roll back ${props.name} to the manifests of revision #${r.revision}? Every edge running it gets them.`}
                        confirmLabel="Roll back"
                        busy={rollback.busy}
                        onConfirm={() =>
                          rollback.run(() =>
                            api
                              .post(`/api/v1/projects/${enc(props.project)}/workloads/${enc(props.name)}/rollback`, {
                                revision: r.revision,
                              })
                              .then(() => revs.reload()),
                          )
                        }
                      />
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {items.length >= 2 && (
        <div class="compare">
          <h3>Compare revisions</h3>
          <div class="filters">
            <RevisionSelect id="rev-from" label="From" revisions={items} value={from} onChange={setFrom} />
            <RevisionSelect id="rev-to" label="To" revisions={items} value={to} onChange={setTo} />
          </div>
          {a && b && (
            <DiffView
              before={toYamlDocs(a.manifests)}
              after={toYamlDocs(b.manifests)}
              label={`changes from revision ${a.revision} to ${b.revision}`}
            />
          )}
        </div>
      )}
    </section>
  );
}

export function WorkloadDetail(props: { name: string }) {
  const session = useApp().session!;
  const wl = useGet<WorkloadObj>(`/api/v1/projects/${enc(session.project)}/workloads/${enc(props.name)}`);
  const [editing, setEditing] = useState(false);
  const [applied, setApplied] = useState<string>();
  const w = wl.data;
  return (
    <>
      <p class="crumbs">
        <Link href="/workloads">Workloads</Link> /
      </p>
      <div class="title-row">
        <h1>Workload {props.name}</h1>
        {w && <span class="tag">revision #{w.status.revision}</span>}
        {w && can(session, 'write') && (
          <div class="actions">
            <DeleteButton
              project={session.project}
              kind="workloads"
              name={props.name}
              warning={`Delete workload ${props.name}? Every edge that runs it stops it, and placements naming it fail until it is back.`}
            />
          </div>
        )}
      </div>
      <ErrorBox error={wl.error} />
      {applied && (
        <p class="notice" role="status">
          {applied}
        </p>
      )}
      {w && (
        <>
          <section aria-labelledby="st-h">
            <h2 id="st-h">Status on edges</h2>
            <ReadyBar summary={w.status.summary} label={`workload ${props.name}`} />
          </section>
          <BrokenList summary={w.status.summary} />
          <section aria-labelledby="man-h">
            <div class="section-head">
              <h2 id="man-h">Manifests</h2>
              {can(session, 'write') && !editing && (
                <button
                  type="button"
                  class="btn"
                  onClick={() => {
                    setApplied(undefined);
                    setEditing(true);
                  }}
                >
                  Edit
                </button>
              )}
            </div>
            {editing ? (
              <YamlEditor
                title={`Workload ${props.name} (YAML)`}
                project={session.project}
                initial={toYaml(editable(w))}
                onCancel={() => setEditing(false)}
                onApplied={(r) => {
                  setEditing(false);
                  setApplied(r.results.map((x) => `${x.kind} ${x.name} ${x.action}`).join(', '));
                  wl.reload();
                }}
              />
            ) : (
              <pre class="code" tabIndex={0} aria-label={`manifests of ${props.name}`}>
                {toYamlDocs(w.spec.manifests)}
              </pre>
            )}
          </section>
          <Revisions
            project={session.project}
            name={props.name}
            current={w.status.revision}
            canWrite={can(session, 'write')}
          />
          <Events
            project={session.project}
            kind="Workload"
            name={props.name}
            title="Events of this workload"
            limit={8}
          />
        </>
      )}
    </>
  );
}

function RevisionSelect(p: {
  id: string;
  label: string;
  revisions: { revision: number }[];
  value: number | undefined;
  onChange: (n: number) => void;
}) {
  return (
    <div class="field">
      <label for={p.id}>{p.label}</label>
      <select
        id={p.id}
        value={String(p.value)}
        onChange={(e) => p.onChange(Number((e.target as HTMLSelectElement).value))}
      >
        {p.revisions.map((r) => (
          <option key={r.revision} value={String(r.revision)}>
            #{r.revision}
          </option>
        ))}
      </select>
    </div>
  );
}
