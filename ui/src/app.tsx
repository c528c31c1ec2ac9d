/** The shell: session restore, live feed, header with navigation and project switcher, the hub-link banner, routes. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, enc } from './api.js';
import { Link } from './components/link.js';
import { useGet } from './hooks.js';
import { LiveFeed } from './live.js';
import { EdgeDetail } from './pages/edge-detail.js';
import { Edges } from './pages/edges.js';
import { ApplyPage } from './pages/apply.js';
import { Overview } from './pages/overview.js';
import { PlacementDetail } from './pages/placement-detail.js';
import { Placements } from './pages/placements.js';
import { Replicas } from './pages/replicas.js';
import { Interconnect } from './pages/interconnect.js';
import { sessionFor, SignIn } from './pages/signin.js';
import { WorkloadDetail } from './pages/workload-detail.js';
import { Blobs } from './pages/blobs.js';
import { AgentUpgradeDetail, AgentUpgrades } from './pages/agent-upgrades.js';
import { DataObjectDetail, DataObjects } from './pages/data-objects.js';
import { Catalog } from './pages/catalog.js';
import { ClusterDetail, Clusters } from './pages/clusters.js';
import { Tokens } from './pages/tokens.js';
import { Workloads } from './pages/workloads.js';
import { match, navigate, useRoute } from './router.js';
import { app, can, setProject, signIn, signOut, storedProject, storedToken, useApp, type Session } from './store.js';
import type { List } from './types.js';

const NAV = [
  { href: '/', label: 'Overview' },
  { href: '/edges', label: 'Edges' },
  { href: '/workloads', label: 'Workloads' },
  { href: '/placements', label: 'Placements' },
  { href: '/catalog', label: 'Catalog' },
  { href: '/blobs', label: 'Blobs' },
  { href: '/agentupgrades', label: 'Upgrades' },
  { href: '/dataobjects', label: 'Data' },
  { href: '/interconnect', label: 'Interconnect' },
  { href: '/clusters', label: 'Clusters' },
  { href: '/replicas', label: 'Replicas' },
];

/** `hub-1.internal:7443` of `https://hub-1.internal:7443`: what the header has room for. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function useLiveFeed(session: Session | undefined): LiveFeed | undefined {
  const [feed, setFeed] = useState<LiveFeed>();
  useEffect(() => {
    if (!session) return;
    const f = new LiveFeed({
      url: `/api/v1/projects/${enc(session.project)}/stream`,
      token: session.token,
      onChange: () => app.bump(),
      onState: (link, detail) => app.set({ link, linkDetail: detail }),
      onUnauthorized: () =>
        signOut('the hub no longer accepts this token (expired or revoked): sign in with a valid one'),
    });
    f.start();
    setFeed(f);
    return () => f.stop();
  }, [session?.token, session?.project]);
  return feed;
}

function Banner(props: { feed?: LiveFeed }) {
  const { link, linkDetail } = useApp();
  const [, tick] = useState(0);
  useEffect(() => {
    if (link !== 'lost') return;
    const t = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, [link]);
  if (link !== 'lost') return null;
  const secs = props.feed?.retryAt ? Math.max(0, Math.ceil((props.feed.retryAt - Date.now()) / 1000)) : undefined;
  return (
    <div class="banner" role="alert">
      <strong>Connection to the hub lost.</strong> The page shows the last data received and is not updating.{' '}
      {secs !== undefined ? `Reconnecting in ${secs} s.` : 'Reconnecting…'}{' '}
      {linkDetail && <span class="banner-detail">({linkDetail})</span>}{' '}
      <button type="button" class="btn small" onClick={() => props.feed?.retryNow()}>
        Retry now
      </button>
    </div>
  );
}

function ProjectSwitcher(props: { session: Session }) {
  const s = props.session;
  const projects = useGet<List<{ metadata: { name: string } }>>(s.scope === '*' ? '/api/v1/projects' : null);
  const names = s.scope === '*' ? (projects.data?.items.map((p) => p.metadata.name) ?? [s.project]) : [s.project];
  if (!names.includes(s.project)) names.push(s.project);
  return (
    <div class="project">
      <label for="project">Project</label>
      <select
        id="project"
        value={s.project}
        disabled={names.length < 2}
        onChange={(e) => {
          setProject((e.target as HTMLSelectElement).value);
          navigate('/');
        }}
      >
        {names.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    </div>
  );
}

function Header(props: { session: Session; path: string }) {
  const s = props.session;
  const section = (href: string) =>
    href === '/' ? props.path === '/' : props.path === href || props.path.startsWith(href + '/');
  return (
    <header class="top">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Link href="/" class="brand">
        <span class="logo" aria-hidden="true">
          ◆
        </span>{' '}
        Outpost
      </Link>
      <nav aria-label="Main">
        <ul>
          {[...NAV, ...(can(s, 'admin') ? [{ href: '/tokens', label: 'Tokens' }] : [])].map((n) => (
            <li key={n.href}>
              <Link href={n.href} aria-current={section(n.href) ? 'page' : undefined}>
                {n.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <div class="top-right">
        {s.replica && (
          <Link
            href="/replicas"
            class="replica"
            title={`This page talks to hub replica ${s.replica.id} (${s.replica.url}); see every replica`}
          >
            <span class="replica-label">Replica</span> {hostOf(s.replica.url)}
          </Link>
        )}
        <ProjectSwitcher session={s} />
        {s.person && (
          <span class="person" title="signed in with the identity provider">
            {s.person}
          </span>
        )}
        <span class="role" title={`token ${s.scope === '*' ? 'for all projects' : `for project ${s.scope}`}`}>
          {s.role}
          {s.role === 'viewer' ? ' (read-only)' : ''}
        </span>
        <button type="button" class="btn ghost small" onClick={() => signOut()}>
          Sign out
        </button>
      </div>
    </header>
  );
}

function Routes(props: { path: string }) {
  const p = props.path;
  let m: Record<string, string> | null;
  if (p === '/' || p === '') return <Overview />;
  if (p === '/edges') return <Edges />;
  if ((m = match('/edges/:name', p))) return <EdgeDetail name={m.name} />;
  if (p === '/workloads') return <Workloads />;
  if ((m = match('/workloads/:name', p))) return <WorkloadDetail name={m.name} />;
  if (p === '/placements') return <Placements />;
  if ((m = match('/placements/:name', p))) return <PlacementDetail name={m.name} />;
  if (p === '/apply') return <ApplyPage />;
  if (p === '/tokens') return <Tokens />;
  if (p === '/blobs') return <Blobs />;
  if (p === '/agentupgrades') return <AgentUpgrades />;
  if ((m = match('/agentupgrades/:name', p))) return <AgentUpgradeDetail name={m.name} />;
  if (p === '/dataobjects') return <DataObjects />;
  if ((m = match('/dataobjects/:name', p))) return <DataObjectDetail name={m.name} />;
  if (p === '/catalog') return <Catalog />;
  if (p === '/replicas') return <Replicas />;
  if (p === '/interconnect') return <Interconnect />;
  if (p === '/clusters') return <Clusters />;
  if ((m = match('/clusters/:name', p))) return <ClusterDetail name={m.name} />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        Nothing lives at <code>{p}</code>. <Link href="/">Back to the overview</Link>.
      </p>
    </section>
  );
}

export function App() {
  const state = useApp();
  const route = useRoute();
  const [restoring, setRestoring] = useState(() => !!storedToken());
  const [restoreError, setRestoreError] = useState<string>();
  const feed = useLiveFeed(state.session);
  const main = useRef<HTMLElement>(null);

  useEffect(() => {
    const t = storedToken();
    if (!t || state.session) return;
    sessionFor(t, storedProject())
      .then((s) => signIn(s))
      .catch((err) => {
        if (err instanceof ApiError && err.status === 401) signOut('the saved token is no longer valid: sign in again');
        else setRestoreError((err as Error).message);
      })
      .finally(() => setRestoring(false));
  }, []);

  // Move focus to the page heading on navigation so screen readers announce the new page; not on
  // the first page shown, where Tab should start at the top (the skip link).
  const shownPath = useRef<string>();
  useEffect(() => {
    const h = main.current?.querySelector('h1');
    document.title = `${h?.textContent ?? 'Outpost'} · Outpost`;
    if (!state.session) return;
    const first = shownPath.current === undefined;
    shownPath.current = route.path;
    if (h && !first) {
      h.setAttribute('tabindex', '-1');
      h.focus({ preventScroll: true });
    }
  }, [route.path, !!state.session]);

  if (!state.session) {
    if (restoring || restoreError) {
      return (
        <main id="main" class="loading" ref={main}>
          {restoreError ? (
            <div class="error-box" role="alert">
              <strong>Cannot reach the hub.</strong> <p>{restoreError}</p>
              <button type="button" class="btn" onClick={() => location.reload()}>
                Try again
              </button>
            </div>
          ) : (
            <p>Connecting to the hub…</p>
          )}
        </main>
      );
    }
    return <SignIn reason={state.signedOutReason} />;
  }
  return (
    <>
      <Header session={state.session} path={route.path} />
      <Banner feed={feed} />
      <main id="main" ref={main} key={state.session.project}>
        <Routes path={route.path} />
      </main>
    </>
  );
}
