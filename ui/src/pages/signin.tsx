/** Sign-in with an API token (`outpost token create --api --role viewer`, or the admin token the hub printed at first start). */
import { useEffect, useState } from 'preact/hooks';
import { ApiClient, ApiError } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
import { signIn, storedProject } from '../store.js';
import type { List, WhoAmI } from '../types.js';

export async function sessionFor(token: string, preferred?: string) {
  const client = new ApiClient(() => token);
  const who = await client.get<WhoAmI>('/api/v1/whoami');
  let project = who.project;
  if (who.project === '*') {
    const projects = await client.get<List<{ metadata: { name: string } }>>('/api/v1/projects');
    const names = projects.items.map((p) => p.metadata.name);
    project =
      preferred && names.includes(preferred)
        ? preferred
        : names.includes('default')
          ? 'default'
          : (names[0] ?? 'default');
  }
  return {
    token,
    role: who.role,
    scope: who.project,
    project,
    ...(who.person ? { person: who.person } : {}),
    ...(who.replica ? { replica: who.replica } : {}),
  };
}

/** Sign-in with the hub's identity provider, when it has one: the browser goes to the hub's code flow. */
function ProviderSignIn() {
  const [provider, setProvider] = useState<{ enabled: boolean; issuer?: string }>();
  const [project, setProject] = useState('');
  useEffect(() => {
    new ApiClient(() => undefined)
      .get<{ enabled: boolean; issuer?: string }>('/api/v1/auth/oidc')
      .then(setProvider, () => setProvider({ enabled: false }));
  }, []);
  if (!provider?.enabled) return null;
  const go = (e: Event) => {
    e.preventDefault();
    const p = project.trim();
    location.assign(`/auth/oidc/login${p ? `?project=${encodeURIComponent(p)}` : ''}`);
  };
  return (
    <form onSubmit={go} class="signin-provider">
      <p class="muted">Sign in with your organisation's account ({provider.issuer}).</p>
      <label for="oidc-project">Project (if you are a member of several)</label>
      <input
        id="oidc-project"
        name="project"
        autocomplete="off"
        spellcheck={false}
        value={project}
        onInput={(e) => setProject((e.target as HTMLInputElement).value)}
      />
      <button type="submit" class="btn primary" id="oidc-sign-in">
        Sign in with the identity provider
      </button>
    </form>
  );
}

export function SignIn(props: { reason?: string }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const submit = async (e: Event) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) return;
    setBusy(true);
    setError(undefined);
    try {
      signIn(await sessionFor(t, storedProject()));
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? new Error(
              'The hub does not accept this token: it is unknown, expired or revoked. Ask an admin for a new one.',
            )
          : (err as Error),
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <div class="signin-card">
        <h1>
          <span class="logo" aria-hidden="true">
            ◆
          </span>{' '}
          Outpost
        </h1>
        <p class="muted">Sign in to the hub with an API token.</p>
        {props.reason && (
          <p class="notice" role="status">
            {props.reason}
          </p>
        )}
        <ProviderSignIn />
        <form onSubmit={submit}>
          <label for="token">API token</label>
          <input
            id="token"
            name="token"
            type="password"
            autocomplete="off"
            spellcheck={false}
            required
            value={token}
            onInput={(e) => setToken((e.target as HTMLInputElement).value)}
            aria-describedby="token-help"
          />
          <p id="token-help" class="help">
            Create one with <code>outpost token create --api --role viewer</code>, or use the admin token the hub
            printed at first start (also in <code>DATA/admin.token</code>). It is kept in this browser tab only (session
            storage).
          </p>
          <button type="submit" class="btn primary" disabled={busy}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
        <ErrorBox error={error} title="Sign-in failed" />
      </div>
    </main>
  );
}
