/**
 * @module The catalog's API routes (docs/api.md): publish a package whose archive (or Helm chart)
 * was uploaded as a blob, or a Helm chart the hub pulls from an OCI registry, list packages and versions, read one version (readme, icon, parameters, workloads), and
 * `POST .../placements/NAME/restart`, which resolves a package placement's version range again.
 */
import { Hono } from 'hono';
import { isDigest } from '../../core/blobs.js';
import { OutpostError } from '../../core/errors.js';
import { authorize, type Env } from '../auth/middleware.js';
import { byOf } from '../auth/principal.js';
import { jsonBody } from '../json-body.js';
import type { Catalog } from './index.js';

export function catalogRoutes(catalog: Catalog): Hono<Env> {
  const app = new Hono<Env>();
  app.post('/projects/:project/packages', async (c) => {
    const project = c.req.param('project');
    const p = authorize(c, 'write', project);
    const b = await jsonBody<{ digest?: unknown; chart?: unknown }>(c);
    if (typeof b.chart === 'string' && b.digest === undefined)
      return c.json(await catalog.pushChart(project, b.chart, `token:${p.tokenId}`), 201);
    if (!isDigest(b.digest))
      throw new OutpostError(
        'invalid',
        'body must be {"digest": "sha256:..."}: the digest of the package archive or Helm chart uploaded with POST /api/v1/projects/P/blobs, or {"chart": "oci://HOST/REPO:VERSION"}: a Helm chart the hub pulls through the project\'s Registry for HOST',
      );
    return c.json(await catalog.push(project, b.digest, byOf(p)), 201);
  });
  app.get('/projects/:project/packages', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    return c.json({ items: catalog.list(project) });
  });
  app.get('/projects/:project/packages/:name', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    return c.json({ items: catalog.versions(project, c.req.param('name')) });
  });
  app.get('/projects/:project/packages/:name/:version', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    return c.json(catalog.get(project, c.req.param('name'), c.req.param('version')));
  });
  app.post('/projects/:project/placements/:name/restart', (c) => {
    const project = c.req.param('project');
    const p = authorize(c, 'write', project);
    const r = catalog.restart(project, c.req.param('name'), byOf(p));
    return c.json({ deployment: r.deployment });
  });
  return app;
}
