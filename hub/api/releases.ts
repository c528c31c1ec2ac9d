/** @module `POST /api/v1/projects/P/agent-releases {digest, version}`: the hub signs an agent release (admin). */
import { Hono } from 'hono';
import { OutpostError } from '../../core/errors.js';
import { authorize, jsonBody, type Env, type HubDeps } from './context.js';

export function releaseRoutes(deps: HubDeps): Hono<Env> {
  const app = new Hono<Env>();
  app.post('/projects/:project/agent-releases', async (c) => {
    const project = c.req.param('project');
    // Signing decides what code edges run: admins only.
    authorize(c, 'admin', project);
    if (!deps.releases) throw new OutpostError('unavailable', 'this hub has no release key');
    const b = await jsonBody<{ digest?: unknown; version?: unknown }>(c);
    if (typeof b.digest !== 'string' || typeof b.version !== 'string')
      throw new OutpostError('invalid', 'body must be {"digest": "sha256:...", "version": "X.Y.Z"}');
    return c.json(await deps.releases.sign(project, b.digest, b.version), 201);
  });
  app.get('/release-key', (c) => {
    if (!deps.releases) throw new OutpostError('not_found', 'this hub has no release key');
    return c.body(deps.releases.publicKeyPem, 200, { 'content-type': 'application/x-pem-file' });
  });
  return app;
}
