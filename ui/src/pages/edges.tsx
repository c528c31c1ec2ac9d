/**
 * The edges table. Filtering happens on the hub (name substring, label selector, state) and the
 * table pages through the API's `continue` cursor, so 10,000 edges cost one page at a time.
 * The filters live in the URL: a filtered view can be bookmarked and the overview links into it.
 */
import { useEffect, useState } from 'preact/hooks';
import { enc, query } from '../api.js';
import { Badge } from '../components/badge.js';
import { ConfirmButton } from '../components/confirm.js';
import { ErrorBox } from '../components/error-box.js';
import { LabelChips } from '../components/labels.js';
import { Link } from '../components/link.js';
import { Pager } from '../components/pager.js';
import { ago } from '../format.js';
import { useAction, useGet } from '../hooks.js';
import { navigate, useRoute } from '../router.js';
import { api, can, useApp } from '../store.js';
import type { EdgeObj, List } from '../types.js';

export const PAGE_SIZES = [25, 50, 100];
const STATES = ['', 'Online', 'Offline', 'Pending'];

export function runtimeOf(e: EdgeObj): string {
  const inv = e.status.inventory;
  if (!inv) return '—';
  return [inv.driver, inv.os && inv.arch ? `${inv.os}/${inv.arch}` : undefined].filter(Boolean).join(' · ');
}

/** Intents made on site still in force (`hello: paused`), or a dash: what the hub's spec does not say. */
export function localOf(e: EdgeObj): string {
  const parts = Object.entries(e.status.localIntents ?? {})
    .filter(([, l]) => l.paused || Object.keys(l.overrides ?? {}).length)
    .map(([w, l]) => `${w}: ${l.paused ? 'paused' : 'override'}`);
  return parts.length ? parts.join(', ') : '—';
}

export function Edges() {
  const session = useApp().session!;
  const route = useRoute();
  const q = route.query.get('q') ?? '';
  const selector = route.query.get('labelSelector') ?? '';
  const state = route.query.get('state') ?? '';
  const local = route.query.get('local') === 'true' ? 'true' : '';
  const limit = Number(route.query.get('limit')) || 50;
  // Cursors of the pages before the current one; [] is the first page.
  const [cursors, setCursors] = useState<string[]>([]);
  const [draft, setDraft] = useState({ q, selector, state, local });
  const filterKey = `${q}|${selector}|${state}|${local}|${limit}|${session.project}`;
  useEffect(() => {
    setCursors([]);
    setDraft({ q, selector, state, local });
  }, [filterKey]);
  const cursor = cursors[cursors.length - 1];
  const list = useGet<List<EdgeObj>>(
    `/api/v1/projects/${enc(session.project)}/edges${query({ q, labelSelector: selector, state, local, limit, continue: cursor })}`,
  );
  const approve = useAction();

  const apply = (e: Event) => {
    e.preventDefault();
    navigate(
      `/edges${query({ q: draft.q.trim(), labelSelector: draft.selector.trim(), state: draft.state, local: draft.local, limit: limit === 50 ? undefined : limit })}`,
      { replace: true },
    );
  };
  const items = list.data?.items ?? [];
  const filtered = q || selector || state || local;
  return (
    <>
      <h1>Edges</h1>
      <form class="filters" onSubmit={apply} role="search" aria-label="Filter edges">
        <div class="field">
          <label for="f-q">Name contains</label>
          <input
            id="f-q"
            type="search"
            value={draft.q}
            onInput={(e) => setDraft({ ...draft, q: (e.target as HTMLInputElement).value })}
          />
        </div>
        <div class="field grow">
          <label for="f-sel">Label selector</label>
          <input
            id="f-sel"
            type="text"
            placeholder="region=eu,tier!=small"
            spellcheck={false}
            value={draft.selector}
            onInput={(e) => setDraft({ ...draft, selector: (e.target as HTMLInputElement).value })}
          />
        </div>
        <div class="field">
          <label for="f-state">State</label>
          <select
            id="f-state"
            value={draft.state}
            onChange={(e) => setDraft({ ...draft, state: (e.target as HTMLSelectElement).value })}
          >
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s || 'any'}
              </option>
            ))}
          </select>
        </div>
        <div class="field check">
          <label for="f-local">Held on site</label>
          <input
            id="f-local"
            type="checkbox"
            checked={draft.local === 'true'}
            onChange={(e) => setDraft({ ...draft, local: (e.target as HTMLInputElement).checked ? 'true' : '' })}
          />
        </div>
        <div class="field">
          <label for="f-limit">Per page</label>
          <select
            id="f-limit"
            value={String(limit)}
            onChange={(e) =>
              navigate(
                `/edges${query({ q, labelSelector: selector, state, local, limit: (e.target as HTMLSelectElement).value })}`,
                { replace: true },
              )
            }
          >
            {PAGE_SIZES.map((n) => (
              <option key={n} value={String(n)}>
                {n}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" class="btn primary">
          Filter
        </button>
        {filtered && (
          <button type="button" class="btn ghost" onClick={() => navigate('/edges', { replace: true })}>
            Clear
          </button>
        )}
      </form>
      <ErrorBox error={list.error} />
      <ErrorBox error={approve.error} />
      <p class="muted" aria-live="polite">
        {list.data
          ? `${items.length} shown${filtered ? ` · ${list.data.matched ?? '?'} match the filter` : ''} · ${list.data.total ?? '?'} edges in project ${session.project}`
          : 'Loading…'}
      </p>
      <div class="table-wrap">
        <table class="table">
          <caption class="sr-only">Edges of project {session.project}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Labels</th>
              <th scope="col">State</th>
              <th scope="col">Workloads</th>
              <th scope="col">Last seen</th>
              <th scope="col">Local</th>
              <th scope="col">Runtime</th>
              <th scope="col">Agent</th>
              {can(session, 'admin') && (
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {items.map((e) => (
              <tr key={e.metadata.name}>
                <th scope="row">
                  <Link href={`/edges/${enc(e.metadata.name)}`}>{e.metadata.name}</Link>
                  {e.spec.unschedulable && <span class="tag">drained</span>}
                </th>
                <td>
                  <LabelChips labels={e.metadata.labels} max={4} />
                </td>
                <td>
                  <Badge value={e.status.phase} />
                </td>
                <td>
                  {e.status.summary.total === 0 ? (
                    <span class="muted">none</span>
                  ) : (
                    `${e.status.summary.ready}/${e.status.summary.total} ready`
                  )}
                </td>
                <td>
                  {e.status.lastSeen ? (
                    <time dateTime={e.status.lastSeen}>{ago(e.status.lastSeen)}</time>
                  ) : (
                    <span class="muted">never</span>
                  )}
                </td>
                <td>{localOf(e)}</td>
                <td>{runtimeOf(e)}</td>
                <td>{e.status.agentVersion ?? e.status.inventory?.agentVersion ?? '—'}</td>
                {can(session, 'admin') && (
                  <td>
                    {e.status.phase === 'Pending' && (
                      <ConfirmButton
                        label="Approve"
                        confirm={`Approve ${e.metadata.name}? It will get workloads.`}
                        busy={approve.busy}
                        onConfirm={() =>
                          approve.run(() =>
                            api.post(`/api/v1/projects/${enc(session.project)}/edges/${enc(e.metadata.name)}/approve`),
                          )
                        }
                      />
                    )}
                  </td>
                )}
              </tr>
            ))}
            {list.data && items.length === 0 && (
              <tr>
                <td colSpan={9} class="empty">
                  {filtered
                    ? 'No edge matches the filter.'
                    : 'No edges yet: create a join token (outpost token create) and start an edge agent with it.'}
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <Pager
        label="Edges"
        page={cursors.length}
        shown={items.length}
        hasNext={!!list.data?.continue}
        onPrev={() => setCursors(cursors.slice(0, -1))}
        onNext={() => list.data?.continue && setCursors([...cursors, list.data.continue])}
      />
    </>
  );
}
