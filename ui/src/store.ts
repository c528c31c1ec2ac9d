/**
 * App-wide state: the session (token, role, project; the token lives in sessionStorage so it
 * dies with the tab; a person's session from the identity provider arrives in the URL fragment
 * and moves there at once, `takeSignInFromUrl`), the hub link state for the banner, and the live-update counter pages
 * refetch on. A tiny observable; components read it through `useApp`.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiClient } from './api.js';
import type { LinkState } from './live.js';
import type { Role } from './types.js';

export interface Session {
  token: string;
  role: Role;
  /** The token's scope: a project, or `*` for all. */
  scope: string;
  project: string;
  /** A person signed in with the identity provider (their email or subject); absent for an API token. */
  person?: string;
  /** The hub replica this page talks to (`GET /api/v1/whoami`), shown in the header. */
  replica?: { id: string; url: string };
}

export interface AppState {
  session?: Session;
  link: LinkState;
  linkDetail?: string;
  /** Bumped on every live change event (and on reconnect): pages refetch when it moves. */
  tick: number;
  /** Set when the hub refused the token mid-session. */
  signedOutReason?: string;
}

const TOKEN_KEY = 'outpost.token';
const PROJECT_KEY = 'outpost.project';

type Listener = () => void;

class AppStore {
  state: AppState = { link: 'connecting', tick: 0 };
  private listeners = new Set<Listener>();

  set(patch: Partial<AppState>): void {
    this.state = { ...this.state, ...patch };
    for (const l of this.listeners) l();
  }

  subscribe(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  bump(): void {
    this.set({ tick: this.state.tick + 1 });
  }
}

export const app = new AppStore();

export const api = new ApiClient(() => app.state.session?.token, {
  reachable: (ok) => {
    if (!ok && app.state.link !== 'lost') app.set({ link: 'lost', linkDetail: 'a request to the hub failed' });
  },
  unauthorized: () => {
    if (app.state.session)
      signOut('the hub no longer accepts this token (expired or revoked): sign in with a valid one');
  },
});

export function useApp(): AppState {
  const [, force] = useState(0);
  useEffect(() => app.subscribe(() => force((n) => n + 1)), []);
  return app.state;
}

export function storedToken(): string | undefined {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

export function storedProject(): string | undefined {
  try {
    return sessionStorage.getItem(PROJECT_KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

export function signIn(s: Session): void {
  try {
    sessionStorage.setItem(TOKEN_KEY, s.token);
    sessionStorage.setItem(PROJECT_KEY, s.project);
  } catch {
    /* private mode: the session lasts until reload */
  }
  app.set({ session: s, signedOutReason: undefined });
}

export function setProject(project: string): void {
  const s = app.state.session;
  if (!s || s.project === project) return;
  try {
    sessionStorage.setItem(PROJECT_KEY, project);
  } catch {
    /* see signIn */
  }
  app.set({ session: { ...s, project } });
}

/**
 * After the hub's sign-in with the identity provider (`/auth/oidc/callback`), the session token is
 * in the URL fragment (`#session=...`, never sent to a server): moved into sessionStorage, like a
 * typed token, and taken out of the address bar and the history entry. `#signin-error=...`
 * becomes the sign-in page's notice.
 */
export function takeSignInFromUrl(): void {
  const hash = new URLSearchParams(location.hash.slice(1));
  const token = hash.get('session');
  const error = hash.get('signin-error');
  if (!token && !error) return;
  history.replaceState(history.state, '', location.pathname + location.search);
  if (error) app.set({ signedOutReason: `Sign-in with the identity provider failed: ${error}` });
  if (token)
    try {
      sessionStorage.setItem(TOKEN_KEY, token);
    } catch {
      /* private mode: the sign-in does not survive; the hub's session ends at its expiry */
    }
}

/** Signs out; a person's session is also ended on the hub (and its refresh token revoked at the provider). */
export function signOut(reason?: string): void {
  const s = app.state.session;
  if (s?.person && !reason) void new ApiClient(() => s.token).post('/api/v1/auth/logout').catch(() => {});
  try {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(PROJECT_KEY);
  } catch {
    /* see signIn */
  }
  app.set({ session: undefined, signedOutReason: reason });
}

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

/** Mirrors the hub's role matrix (docs/security.md) so a viewer sees no button that would fail. */
export function can(s: Session | undefined, action: 'write' | 'admin'): boolean {
  if (!s) return false;
  return RANK[s.role] >= (action === 'write' ? 2 : 3);
}
