/**
 * @module The hub's HTTP API (hono): the routes of each module the hub is composed of (each route
 * file receives the module it serves), behind the authentication middleware (hub/auth/), and the
 * one error mapper (`onError`) that turns an OutpostError into its status and
 * `{error: {code, message, details}}`.
 */
import { Hono } from 'hono';
import type { WhoAmI } from '../../core/api/types.js';
import { diskFullError, isDiskFull, OutpostError, toOutpostError } from '../../core/errors.js';
import { createLogger, throttle } from '../../core/logger.js';
import type { HubAuth } from '../auth/contract.js';
import type { Catalog } from '../catalog/index.js';
import type { ChangeFeed } from '../changes/feed.js';
import type { DataRouteDeps } from '../data/routes.js';
import type { EdgeLifecycle } from '../edges/lifecycle.js';
import type { GitRepos } from '../gitops/index.js';
import { gitRepoRoutes, gitWebhookRoute } from '../gitops/routes.js';
import type { ObjectApi, ReleaseSigner, ReplicaNames } from './context.js';
import { authenticate, principal, type Env } from '../auth/middleware.js';
import { applyRoutes } from './apply.js';
import { catalogRoutes } from '../catalog/routes.js';
import { edgeRoutes, enrollRoute } from './edges.js';
import { logoutRoutes, signInRoutes, type PeopleApi } from './people.js';
import { projectRoutes, type ProjectApi } from './projects.js';
import { fleetRoutes } from './fleet.js';
import { objectRoutes } from './objects.js';
import { openApiDocument } from './openapi.js';
import { releaseRoutes } from './releases.js';
import { clusterArtifactRoutes } from '../clusters/routes.js';
import type { AgentReleases } from '../upgrades/releases.js';
import { replicaRoutes } from './replicas.js';
import { dataRoutes } from '../data/routes.js';
import { streamRoutes } from './stream.js';
import { tokenRoutes } from './tokens.js';
import { uiRoutes } from './ui.js';
import { apiBodyLimit } from '../http-limits.js';
import { kubeApiRoutes } from '../k8s/index.js';
import type { KubeWatchRecord } from '../k8s/watch-record.js';
import { kubeApiDeps } from './kube.js';

const log = createLogger('hub:api');

/** What the API serves: the hub's modules, each given to the route files that serve it. */
export interface ApiModules {
  /** The hub itself: /healthz, /readyz, /metrics, the OpenAPI document, its CA. */
  hub: {
    version: string;
    /** The file a full disk is reported for (the replica store's). */
    databaseFile: string;
    /** Why the hub cannot serve now (its database is unreachable); undefined when it can. For /readyz. */
    unready(): string | undefined;
    caPem: string | undefined;
    metricsText(): Promise<string>;
    metricsContentType: string;
  };
  auth: HubAuth;
  /** Live updates for the UI's stream (hub/changes/feed.ts). */
  changes: ChangeFeed;
  replicas: ReplicaNames;
  /** An edge's life: enroll, approve, label, drain, decommission (hub/edges/lifecycle.ts). */
  edges: EdgeLifecycle;
  objects: ObjectApi;
  data: DataRouteDeps;
  /** Undefined: no release key. */
  releases: ReleaseSigner | undefined;
  /** Signs cluster artifacts with the release key (hub/clusters/routes.ts). */
  clusterArtifacts?: Pick<AgentReleases, 'signAs'>;
  catalog: Catalog | undefined;
  /** The record of object changes the Kubernetes API's watches read (hub/k8s/watch-record.ts). */
  kubeWatch: KubeWatchRecord;
  /** Objects applied from Git (hub/gitops/): sync now, and the webhook. */
  gitRepos: GitRepos;
  /** Project objects and their deletions (hub/projects/). */
  projects: ProjectApi;
  /** Sign-in with the identity provider; undefined without --oidc-issuer (hub/modules/people.ts). */
  people?: PeopleApi;
}

export function createApi(m: ApiModules): Hono {
  const deps = m.hub;
  const app = new Hono();
  // Every write fails while the disk is full: one log line a minute says so.
  const diskFullLog = throttle(60_000);
  let openapi: string | undefined;

  app.onError((err, c) => {
    let e = toOutpostError(err);
    if (!(err instanceof OutpostError) && isDiskFull(err)) {
      const full = (e = diskFullError(deps.databaseFile, err));
      diskFullLog((suppressed) => log.error({ err, suppressed }, full.message));
    } else if (e.code === 'internal' && !(err instanceof OutpostError))
      log.error({ err, path: c.req.path }, 'unhandled API error');
    return c.json(e.toJSON(), e.status as 400);
  });
  app.notFound((c) =>
    c.json(
      { error: { code: 'not_found', message: `no route ${c.req.method} ${c.req.path}: see /api/v1/openapi.json` } },
      404,
    ),
  );

  // Every route, before any other work: the bytes actually read are counted (chunked bodies too).
  app.use('*', apiBodyLimit());

  app.get('/healthz', (c) => c.json({ ok: true, version: deps.version }));
  // Readiness, for a load balancer in front of hub replicas: false while the database is away.
  app.get('/readyz', (c) => {
    const reason = deps.unready();
    return reason === undefined ? c.json({ ready: true }) : c.json({ ready: false, reason }, 503);
  });
  app.get('/metrics', async (c) => c.body(await deps.metricsText(), 200, { 'content-type': deps.metricsContentType }));
  app.get('/api/v1/openapi.json', (c) => {
    openapi ??= JSON.stringify(openApiDocument(deps.version));
    return c.body(openapi, 200, { 'content-type': 'application/json' });
  });
  app.get('/api/v1/tls/ca.pem', (c) => {
    if (!deps.caPem) throw new OutpostError('not_found', 'this hub runs without TLS (--insecure-http)');
    return c.body(deps.caPem, 200, { 'content-type': 'application/x-pem-file' });
  });
  app.route('/api/v1', enrollRoute(m.edges, m.releases?.publicKeyPem));
  // Signed by the GitRepo's webhook secret, not by a token (hub/gitops/routes.ts).
  app.route(
    '/api/v1',
    gitWebhookRoute(m.gitRepos, (p, n) => m.objects.objects.get('GitRepo', p, n), m.objects.secrets.box),
  );

  // Before the authenticated routes: a sign-in is how a person gets a token.
  app.route('/', signInRoutes(m.people));

  const api = new Hono<Env>();
  api.use('*', authenticate(m.auth));
  api.get('/whoami', (c) => {
    const { role, project, tokenId, person } = principal(c);
    return c.json({
      role,
      project,
      tokenId,
      ...(person ? { person } : {}),
      replica: m.replicas.self(),
    } satisfies WhoAmI);
  });
  api.route('/', logoutRoutes(m.people));

  api.route('/', tokenRoutes(m.auth));

  // Before objectRoutes: its /projects/:project/:kind would take /stream and /edges-online.
  api.route('/', projectRoutes(m.projects));
  api.route('/', fleetRoutes(m.objects));
  api.route('/', replicaRoutes(m.replicas));
  api.route('/', streamRoutes(m.changes, m.auth));
  api.route('/', edgeRoutes(m.edges, m.objects));
  api.route('/', dataRoutes(m.data));
  api.route('/', applyRoutes(m.objects));
  api.route('/', releaseRoutes(m.releases));
  api.route('/', clusterArtifactRoutes(m.clusterArtifacts));
  if (m.catalog) api.route('/', catalogRoutes(m.catalog));
  api.route('/', gitRepoRoutes(m.gitRepos));
  api.route('/', objectRoutes(m.objects));
  app.route('/api/v1', api);
  // The Kubernetes API for the same objects (docs/kubernetes-api.md): kubectl, client-go, GitOps.
  app.route(
    '/k8s',
    kubeApiRoutes(kubeApiDeps({ version: deps.version, auth: m.auth, objects: m.objects, watch: m.kubeWatch })),
  );
  app.route('/', uiRoutes());
  return app;
}
