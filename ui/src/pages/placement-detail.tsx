/**
 * One placement: selector and matched edges, the package it deploys (resolved), customization,
 * rollout progress (live) and image pre-staging, the broken list, pause/resume, edit.
 */
import { useState } from 'preact/hooks';
import { enc, query } from '../api.js';
import { Badge } from '../components/badge.js';
import { ConfirmButton } from '../components/confirm.js';
import { YamlEditor } from '../components/editor.js';
import { ErrorBox } from '../components/error-box.js';
import { LabelChips } from '../components/labels.js';
import { DeleteButton } from '../components/delete-button.js';
import { Link } from '../components/link.js';
import { Pager } from '../components/pager.js';
import { ReadyBar } from '../components/ready-bar.js';
import { formatSelector } from '../../../core/selector.js';
import { ago } from '../format.js';
import { useAction, useGet } from '../hooks.js';
import { api, can, useApp } from '../store.js';
import type { EdgeObj, List, PlacementObj, RolloutView } from '../types.js';
import { editable, toYaml } from '../yaml.js';
import { BrokenList } from './broken.js';
import { Events } from './overview.js';
import { PackageFacts, PrestageSection, prestageText } from './placement-package.js';

function RolloutProgress(props: { rollout: RolloutView }) {
  const r = props.rollout;
  const c = r.counts;
  const seg = (n: number, cls: string, label: string) =>
    c && c.total > 0 && n > 0 ? (
      <div class={`seg ${cls}`} style={{ width: `${(n / c.total) * 100}%` }} title={`${n} ${label}`} />
    ) : null;
  const held = c?.held ?? 0;
  const skipped = c?.skipped ?? 0;
  const blocked = c?.blocked ?? 0;
  const inFlight = c ? Math.max(0, c.updated - c.ready - c.failed - held - blocked) : 0;
  return (
    <div class="rollout">
      <p>
        <Badge value={r.paused ? 'Paused' : r.phase} /> <span class="reason">{r.reason}</span>
      </p>
      {c && (
        <>
          <div
            class="stack"
            role="img"
            aria-label={`rollout: ${c.ready} ready, ${inFlight} updating, ${c.failed} failed, ${c.pending} waiting, of ${c.total} edges`}
          >
            {seg(c.ready, 'seg-ready', 'ready on the new content')}
            {seg(inFlight, 'seg-flight', 'updating')}
            {seg(c.failed, 'seg-failed', 'failed')}
            {seg(c.pending, 'seg-pending', 'waiting')}
          </div>
          <ul class="legend">
            <li>
              <span class="dot seg-ready" aria-hidden="true" /> {c.ready} ready
            </li>
            <li>
              <span class="dot seg-flight" aria-hidden="true" /> {inFlight} updating
            </li>
            <li>
              <span class="dot seg-failed" aria-hidden="true" /> {c.failed} failed
            </li>
            <li>
              <span class="dot seg-pending" aria-hidden="true" /> {c.pending} waiting
            </li>
            {held > 0 && <li>{held} held on the edge (paused on site or stopped)</li>}
            {skipped > 0 && <li>{skipped} skipped (offline)</li>}
            {blocked > 0 && <li>{blocked} blocked by another placement</li>}
            {(c.waiting ?? 0) > 0 && <li>{c.waiting} waiting for a dependency on the edge</li>}
            <li>of {c.total} edges</li>
          </ul>
        </>
      )}
    </div>
  );
}

function MatchedEdges(props: { project: string; placement: PlacementObj }) {
  const sel = props.placement.spec.edgeSelector;
  const [cursors, setCursors] = useState<string[]>([]);
  // The hub filters: the selector in kubectl syntax is what the list API takes.
  const selector = sel ? formatSelector(sel) : undefined;
  const list = useGet<List<EdgeObj>>(
    sel
      ? `/api/v1/projects/${enc(props.project)}/edges${query({ labelSelector: selector === '<all>' ? '' : selector, limit: 25, continue: cursors[cursors.length - 1] })}`
      : null,
  );
  // The hub counts matches of a filtered list; an empty selector matches every edge.
  const matched = list.data?.matched ?? (selector === '<all>' ? list.data?.total : undefined);
  const named = props.placement.spec.edges ?? [];
  const mine = new Set(props.placement.spec.workloads);
  const row = (e: EdgeObj) => {
    const ws = e.status.workloads.filter((w) => w.placement === props.placement.metadata.name && mine.has(w.name));
    return (
      <tr key={e.metadata.name}>
        <th scope="row">
          <Link href={`/edges/${enc(e.metadata.name)}`}>{e.metadata.name}</Link>
        </th>
        <td>
          <Badge value={e.status.phase} />
        </td>
        <td>
          <LabelChips labels={e.metadata.labels} max={4} />
        </td>
        <td>
          {ws.length === 0 ? (
            <span class="muted">
              {e.status.phase === 'Pending' ? 'not approved' : e.spec.unschedulable ? 'drained' : 'not written yet'}
            </span>
          ) : (
            ws.map((w) => <Badge key={w.name} value={w.state} title={`${w.name}: ${w.reason ?? w.state}`} />)
          )}
        </td>
        <td>{e.status.lastSeen ? ago(e.status.lastSeen) : 'never'}</td>
      </tr>
    );
  };
  return (
    <section aria-labelledby="matched-h">
      <h2 id="matched-h">Matched edges</h2>
      {named.length > 0 && (
        <p>
          Named explicitly:{' '}
          {named.map((n, i) => (
            <span key={n}>
              {i > 0 && ', '}
              <Link href={`/edges/${enc(n)}`}>{n}</Link>
            </span>
          ))}
        </p>
      )}
      {sel && (
        <>
          <ErrorBox error={list.error} />
          {matched !== undefined && (
            <p class="muted">
              {matched} {matched === 1 ? 'edge matches' : 'edges match'} the selector
            </p>
          )}
          <div class="table-wrap">
            <table class="table compact">
              <caption class="sr-only">Edges matching {selector}</caption>
              <thead>
                <tr>
                  <th scope="col">Edge</th>
                  <th scope="col">State</th>
                  <th scope="col">Labels</th>
                  <th scope="col">This placement</th>
                  <th scope="col">Last seen</th>
                </tr>
              </thead>
              <tbody>
                {list.data?.items.map(row)}
                {list.data && list.data.items.length === 0 && (
                  <tr>
                    <td colSpan={5} class="empty">
                      No edge matches the selector.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </div>
          <Pager
            label="Matched edges"
            page={cursors.length}
            shown={list.data?.items.length ?? 0}
            hasNext={!!list.data?.continue}
            onPrev={() => setCursors(cursors.slice(0, -1))}
            onNext={() => list.data?.continue && setCursors([...cursors, list.data.continue])}
          />
        </>
      )}
    </section>
  );
}

export function PlacementDetail(props: { name: string }) {
  const session = useApp().session!;
  const p = enc(session.project);
  const n = enc(props.name);
  const pl = useGet<PlacementObj>(`/api/v1/projects/${p}/placements/${n}`);
  const act = useAction();
  const [editing, setEditing] = useState(false);
  const x = pl.data;
  // Paused by the user, or by the planner when failures reached the threshold (or every edge
  // failed): all resume, the latter two by accepting the failures. A rollout Paused only because an
  // edge holds its workload (a pause on site, a remote stop) has no failures to accept: resuming
  // would change nothing, so it offers what a running one does.
  const phase = x?.status.rollout?.phase;
  const failed = x?.status.rollout?.counts?.failed ?? 0;
  const paused = x?.spec.rollout.paused || ((phase === 'Paused' || phase === 'Failed') && failed > 0);
  return (
    <>
      <p class="crumbs">
        <Link href="/placements">Placements</Link> /
      </p>
      <div class="title-row">
        <h1>Placement {props.name}</h1>
        {x && can(session, 'write') && (
          <div class="actions">
            {paused ? (
              <button
                type="button"
                class="btn primary"
                disabled={act.busy}
                onClick={() => act.run(() => api.post(`/api/v1/projects/${p}/placements/${n}/resume`))}
              >
                {x?.spec.rollout.paused ? 'Resume rollout' : 'Resume rollout (accept the failures)'}
              </button>
            ) : (
              <ConfirmButton
                label="Pause rollout"
                confirm="Pause this rollout? No more edges get new content until you resume."
                confirmLabel="Pause"
                busy={act.busy}
                onConfirm={() => act.run(() => api.post(`/api/v1/projects/${p}/placements/${n}/pause`))}
              />
            )}
            {!editing && (
              <button type="button" class="btn" onClick={() => setEditing(true)}>
                Edit
              </button>
            )}
            <DeleteButton
              project={session.project}
              kind="placements"
              name={props.name}
              warning={`Delete placement ${props.name}? Its workloads are removed from the edges it selects (unless another placement selects them).`}
            />
          </div>
        )}
      </div>
      <ErrorBox error={pl.error} />
      <ErrorBox error={act.error} />
      {x && (
        <>
          {editing && (
            <YamlEditor
              title={`Placement ${props.name} (YAML)`}
              project={session.project}
              initial={toYaml(editable(x))}
              onCancel={() => setEditing(false)}
              onApplied={() => {
                setEditing(false);
                pl.reload();
              }}
            />
          )}
          <div class="grid2">
            <section aria-labelledby="sum-h">
              <h2 id="sum-h">Status</h2>
              <ReadyBar summary={x.status.summary} label={`placement ${props.name}`} />
              <dl class="facts">
                <PackageFacts placement={x} />
                <dt>Workloads</dt>
                <dd>
                  {x.spec.workloads.map((w, i) => (
                    <span key={w}>
                      {i > 0 && ', '}
                      <Link href={`/workloads/${enc(w)}`}>{w}</Link>
                    </span>
                  ))}
                </dd>
                <dt>Edge selector</dt>
                <dd>
                  <code>{x.spec.edgeSelector ? formatSelector(x.spec.edgeSelector) : 'none (named edges only)'}</code>
                </dd>
                <dt>Selected edges</dt>
                <dd>{x.status.selectedEdges}</dd>
                <dt>Rollout settings</dt>
                <dd>
                  maxUnavailable {String(x.spec.rollout.maxUnavailable)}, failureThreshold{' '}
                  {x.spec.rollout.failureThreshold}, {prestageText(x.spec.rollout)}
                </dd>
              </dl>
            </section>
            <section aria-labelledby="ro-h">
              <h2 id="ro-h">Rollout</h2>
              {x.status.rollout ? (
                <RolloutProgress rollout={x.status.rollout} />
              ) : (
                <p class="muted">Not planned yet.</p>
              )}
            </section>
          </div>
          <PrestageSection placement={x} />
          <BrokenList summary={x.status.summary} title="Broken" />
          <section aria-labelledby="cust-h">
            <h2 id="cust-h">Customization</h2>
            {x.spec.customization.length === 0 ? (
              <p class="muted">None: every edge gets the workloads as written.</p>
            ) : (
              <pre class="code" tabIndex={0} aria-label="customization rules">
                {toYaml(x.spec.customization)}
              </pre>
            )}
          </section>
          <MatchedEdges project={session.project} placement={x} />
          <Events
            project={session.project}
            kind="Placement"
            name={props.name}
            title="Events of this placement"
            limit={8}
          />
        </>
      )}
    </>
  );
}
