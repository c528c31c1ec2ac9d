/**
 * @module The hub's HTTP API (hono): authentication middleware, routes, and the one error mapper
 * (`onError`) that turns an OutpostError into its status and `{error: {code, message, details}}`.
 */
import { Hono } from 'hono';
import type { WhoAmI } from '../../core/api/types.js';
import { diskFullError, isDiskFull, OutpostError, toOutpostError } from '../../core/errors.js';
import { createLogger, throttle } from '../../core/logger.js';
import { principalFromHeader } from '../auth/principal.js';
import { principal, type Env, type HubDeps } from './context.js';
import { applyRoutes } from './apply.js';
import { catalogRoutes } from '../catalog/routes.js';
import { edgeRoutes, enrollRoute } from './edges.js';
import { fleetRoutes } from './fleet.js';
import { objectRoutes } from './objects.js';
import { openApiDocument } from './openapi.js';
import { releaseRoutes } from './releases.js';
import { replicaRoutes } from './replicas.js';
import { dataRoutes } from '../data/routes.js';
import { streamRoutes } from './stream.js';
import { tokenRoutes } from './tokens.js';
import { uiRoutes } from './ui.js';
import { apiBodyLimit } from '../http-limits.js';
import { kubeApiDeps, kubeApiRoutes } from '../k8s/index.js';

const log = createLogger('hub:api');

export function createApi(deps: HubDeps): Hono {
  const app = new Hono();
  // Every write fails while the disk is full: one log line a minute says so.
  const diskFullLog = throttle(60_000);
  let openapi: string | undefined;

  app.onError((err, c) => {
    let e = toOutpostError(err);
    if (!(err instanceof OutpostError) && isDiskFull(err)) {
      const full = (e = diskFullError(deps.store.db.name, err));
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
  app.route('/api/v1', enrollRoute(deps));

  const api = new Hono<Env>();
  api.use('*', async (c, next) => {
    c.set(
      'principal',
      principalFromHeader((t) => deps.auth.verifyApiToken(t), c.req.header('authorization')),
    );
    await next();
  });
  api.get('/whoami', (c) => {
    const { role, project, tokenId } = principal(c);
    return c.json({ role, project, tokenId, replica: deps.replicas.self() } satisfies WhoAmI);
  });

  api.route('/', tokenRoutes(deps));

  // Before objectRoutes: its /projects/:project/:kind would take /stream and /edges-online.
  api.route('/', fleetRoutes(deps));
  api.route('/', replicaRoutes(deps));
  api.route('/', streamRoutes(deps));
  api.route('/', edgeRoutes(deps));
  api.route('/', dataRoutes(deps));
  api.route('/', applyRoutes(deps));
  api.route('/', releaseRoutes(deps));
  if (deps.catalog) api.route('/', catalogRoutes(deps, deps.catalog));
  api.route('/', objectRoutes(deps));
  app.route('/api/v1', api);
  // The Kubernetes API for the same objects (docs/kubernetes-api.md): kubectl, client-go, GitOps.
  app.route('/k8s', kubeApiRoutes(kubeApiDeps(deps)));
  app.route('/', uiRoutes());
  return app;
}
