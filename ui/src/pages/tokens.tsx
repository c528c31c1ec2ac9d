/**
 * Tokens of the project, for admins (docs/security.md): API and join tokens without their secrets,
 * their state, and revoking one; creating a join or API token, shown once. The hub answers 403 to
 * anyone else, and the navigation shows this page to admins only.
 */
import { useState } from 'preact/hooks';
import { enc } from '../api.js';
import { ConfirmButton } from '../components/confirm.js';
import { ErrorBox } from '../components/error-box.js';
import { ago, dateTime } from '../format.js';
import { useAction, useGet } from '../hooks.js';
import { api, useApp } from '../store.js';
import { tokenState, type TokenView } from '../../../core/api/views.js';
import type { List } from '../types.js';

export { tokenState, type TokenView };

function CreateToken(props: { project: string }) {
  const act = useAction();
  const [kind, setKind] = useState<'join' | 'api'>('join');
  const [role, setRole] = useState('viewer');
  const [labels, setLabels] = useState('');
  const [ttl, setTtl] = useState('');
  const [created, setCreated] = useState<string>();
  const submit = (e: Event) => {
    e.preventDefault();
    setCreated(undefined);
    void act.run(async () => {
      const labelMap = Object.fromEntries(
        labels
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
          .map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)]),
      );
      const r =
        kind === 'join'
          ? await api.post<{ token: string }>('/api/v1/tokens/join', {
              project: props.project,
              labels: labelMap,
              ...(ttl ? { ttl } : {}),
            })
          : await api.post<{ token: string }>('/api/v1/tokens/api', {
              project: props.project,
              role,
              ...(ttl ? { ttl } : {}),
            });
      setCreated(r.token);
    });
  };
  return (
    <section aria-labelledby="new-h" class="card">
      <h2 id="new-h">New token</h2>
      <form class="filters" onSubmit={submit} aria-label="Create a token">
        <div class="field">
          <label for="t-kind">Kind</label>
          <select id="t-kind" value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value as 'join')}>
            <option value="join">join token (for an edge)</option>
            <option value="api">API token (for a person or script)</option>
          </select>
        </div>
        {kind === 'api' ? (
          <div class="field">
            <label for="t-role">Role</label>
            <select id="t-role" value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value)}>
              <option value="viewer">viewer</option>
              <option value="operator">operator</option>
              <option value="admin">admin</option>
            </select>
          </div>
        ) : (
          <div class="field grow">
            <label for="t-labels">Labels (bind the edge)</label>
            <input
              id="t-labels"
              placeholder="region=eu,site=lyon"
              value={labels}
              onInput={(e) => setLabels((e.target as HTMLInputElement).value)}
            />
          </div>
        )}
        <div class="field">
          <label for="t-ttl">Valid for</label>
          <input
            id="t-ttl"
            placeholder={kind === 'join' ? '24h (default)' : 'never expires'}
            value={ttl}
            onInput={(e) => setTtl((e.target as HTMLInputElement).value)}
          />
        </div>
        <button type="submit" class="btn primary" disabled={act.busy}>
          Create
        </button>
      </form>
      <ErrorBox error={act.error} />
      {created && (
        <div class="created-token" role="status">
          <p>
            <strong>Copy it now:</strong> the hub keeps only a hash and will not show it again.
          </p>
          <code aria-label="new token">{created}</code>
        </div>
      )}
    </section>
  );
}

export function Tokens() {
  const session = useApp().session!;
  const list = useGet<List<TokenView>>(`/api/v1/tokens?project=${enc(session.project)}`);
  const act = useAction();
  const items = list.data?.items ?? [];
  return (
    <>
      <div class="title-row">
        <h1>Tokens</h1>
      </div>
      <p class="muted">
        API and join tokens of project {session.project}. Secrets are never shown again after creation; a revoked token
        is refused at once, everywhere.
      </p>
      <CreateToken project={session.project} />
      <ErrorBox error={list.error} />
      <ErrorBox error={act.error} />
      <section aria-labelledby="list-h">
        <h2 id="list-h">All tokens</h2>
        <div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">ID</th>
                <th scope="col">Kind</th>
                <th scope="col">Role or labels</th>
                <th scope="col">Uses</th>
                <th scope="col">State</th>
                <th scope="col">Expires</th>
                <th scope="col">Created</th>
                <th scope="col">Description</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((t) => {
                const state = tokenState(t);
                return (
                  <tr key={t.id}>
                    <th scope="row">
                      <code>{t.id}</code>
                    </th>
                    <td>{t.kind}</td>
                    <td>
                      {t.kind === 'api'
                        ? `${t.role}${t.project === '*' ? ' (all projects)' : ''}`
                        : Object.entries(t.labels ?? {})
                            .map(([k, v]) => `${k}=${v}`)
                            .join(', ') || '—'}
                    </td>
                    <td>{t.kind === 'join' ? `${t.uses ?? 0} / ${t.usesLimit ?? '∞'}` : '—'}</td>
                    <td>{state}</td>
                    <td>{t.expiresAt ? dateTime(t.expiresAt) : 'never'}</td>
                    <td>{ago(t.createdAt)}</td>
                    <td>{t.description}</td>
                    <td>
                      {state === 'Valid' && t.id !== session.token.split('.')[2] && (
                        <ConfirmButton
                          label="Revoke"
                          confirm={`Revoke ${t.kind} token ${t.id}?`}
                          confirmLabel="Revoke now"
                          danger
                          class="btn small danger"
                          busy={act.busy}
                          onConfirm={() => act.run(() => api.request(`/api/v1/tokens/${t.id}`, { method: 'DELETE' }))}
                        />
                      )}
                    </td>
                  </tr>
                );
              })}
              {items.length === 0 && !list.loading && (
                <tr>
                  <td colSpan={9} class="muted">
                    No tokens in this project.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      </section>
    </>
  );
}
