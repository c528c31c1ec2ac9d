/**
 * @module The Kubernetes API for Outpost's kinds (docs/kubernetes-api.md), mounted under `/k8s`
 * on the hub's port: discovery, the `outpost.dev/v1alpha1` resources (one namespace per
 * project), the self reviews kubectl sends, and `Status` errors. kubectl and client-go programs
 * (Argo CD, Flux: docs/gitops.md) drive the hub through it with a kubeconfig `outpost
 * kubeconfig` prints.
 *
 * @example
 * app.route('/k8s', kubeApiRoutes(kubeApiDeps({ version, auth, objects, watch }))); // hub/api/app.ts
 */
import { Hono, type Context } from 'hono';
import { createLogger } from '../../core/logger.js';
import { ALL_PROJECTS } from '../auth/roles.js';
import { authorizeKube, principalOfRequest } from './access.js';
import type { KubeApiDeps } from './deps.js';
import { discovery } from './discovery.js';
import { serveWatch, WatchBroker } from './watch.js';
import { groupVersionDocument, openApiIndex } from './openapi.js';
import { accessReviewFromProtobuf, PROTOBUF, rulesReviewFromProtobuf } from './protobuf.js';
import { accessReview, rulesReview, selfReview } from './reviews.js';
import { bodyOf, resourceRoutes, type KubeEnv } from './resources.js';
import { KubeError, toKubeStatus } from './status.js';

export type { KubeApiDeps } from './deps.js';

const log = createLogger('hub:k8s');

const OUTPOST = '/apis/outpost.dev/v1alpha1';

function namespaceObject(name: string) {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name }, spec: {}, status: { phase: 'Active' } };
}

export function kubeApiRoutes(deps: KubeApiDeps): Hono<KubeEnv> {
  const app = new Hono<KubeEnv>();

  app.onError((err, c) => {
    const s = toKubeStatus(err);
    if (s.code >= 500) log.error({ err, path: c.req.path }, 'Kubernetes API error');
    return c.body(JSON.stringify(s), s.code as 400, { 'content-type': 'application/json' });
  });

  app.use('*', async (c, next) => {
    c.set('principal', principalOfRequest(deps.verifyToken, c.req.header('authorization')));
    await next();
  });

  app.get('/version', (c) => {
    const m = /^(\d+)\.(\d+)/.exec(deps.version);
    return c.json({
      major: m?.[1] ?? '0',
      minor: m?.[2] ?? '0',
      gitVersion: `v${deps.version.replace(/^v/, '')}`,
      platform: `${process.platform}/${process.arch}`,
    });
  });
  app.get('/openapi/v3', (c) => c.json(openApiIndex(deps.version)));
  app.get(`/openapi/v3${OUTPOST}`, (c) =>
    c.body(groupVersionDocument(deps.version).doc, 200, { 'content-type': 'application/json' }),
  );
  app.get('/api', (c) => discovery.legacy(c));
  app.get('/api/v1', (c) => discovery.legacyV1(c));
  app.get('/apis', (c) => discovery.groups(c));

  // Namespaces are the projects the token sees: every project's for a token of every project.
  app.get('/api/v1/namespaces', (c) => {
    const p = c.get('principal');
    const names =
      p.project === ALL_PROJECTS ? [...new Set(['default', ...deps.objects.projects()])].sort() : [p.project];
    return c.json({ apiVersion: 'v1', kind: 'NamespaceList', metadata: {}, items: names.map(namespaceObject) });
  });
  app.get('/api/v1/namespaces/:name', (c) => {
    const name = c.req.param('name');
    authorizeKube(c.get('principal'), { verb: 'get', resource: 'namespaces', group: '', namespace: name });
    return c.json(namespaceObject(name));
  });

  // kubectl sends these built-in kinds as protobuf; the answers are JSON, which it accepts too.
  const review = async (c: Context<KubeEnv>, fromProtobuf: (b: Buffer) => Record<string, unknown>) =>
    c.req.header('content-type')?.startsWith(PROTOBUF)
      ? fromProtobuf(Buffer.from(await c.req.arrayBuffer()))
      : ((await bodyOf(c)) as Record<string, unknown>);
  app.post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', async (c) =>
    c.json(accessReview(c.get('principal'), await review(c, accessReviewFromProtobuf)), 201),
  );
  app.post('/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', async (c) =>
    c.json(rulesReview(c.get('principal'), await review(c, rulesReviewFromProtobuf)), 201),
  );
  app.post('/apis/authentication.k8s.io/v1/selfsubjectreviews', (c) => c.json(selfReview(c.get('principal')), 201));

  const broker = new WatchBroker(deps.watch);
  const routes = resourceRoutes(deps, {
    currentResourceVersion: () => deps.objects.resourceVersion(),
    watch: (c, r, namespace) => serveWatch(deps, broker, c, r, namespace),
  });
  app.get(`${OUTPOST}/:resource`, (c) => routes.list(c));
  app.get(`${OUTPOST}/namespaces/:namespace/:resource`, (c) => routes.list(c));
  app.post(`${OUTPOST}/namespaces/:namespace/:resource`, (c) => routes.create(c));
  app.get(`${OUTPOST}/namespaces/:namespace/:resource/:name`, (c) => routes.get(c));
  app.put(`${OUTPOST}/namespaces/:namespace/:resource/:name`, (c) => routes.update(c));
  app.patch(`${OUTPOST}/namespaces/:namespace/:resource/:name`, (c) => routes.patch(c));
  app.delete(`${OUTPOST}/namespaces/:namespace/:resource/:name`, (c) => routes.remove(c));
  app.all(`${OUTPOST}/namespaces/:namespace/:resource/:name/status`, (c) => routes.status(c));

  app.get('/apis/:group', (c) => discovery.group(c, c.req.param('group')) ?? notServed(c));
  app.get(
    '/apis/:group/:version',
    (c) => discovery.version(c, c.req.param('group'), c.req.param('version')) ?? notServed(c),
  );
  app.all('*', notServed);
  return app;
}

function notServed(c: Context): never {
  throw new KubeError(
    404,
    'NotFound',
    `the server could not find the requested resource (${c.req.method} ${c.req.path})`,
  );
}
