/**
 * @module `POST /api/v1/projects/P/agent-releases {digest, version, scope?}`: the hub signs an
 * agent release (an admin for every project only: docs/security.md, "Agent releases").
 */
import { Hono } from 'hono';
import { OutpostError } from '../../core/errors.js';
import { authorizeAllProjects } from '../auth/roles.js';
import type { ReleaseSigner } from './context.js';
import { principal, type Env } from '../auth/middleware.js';
import { jsonBody } from '../json-body.js';

/** `releases` undefined: this hub has no release key. */
export function releaseRoutes(releases: ReleaseSigner | undefined): Hono<Env> {
  const app = new Hono<Env>();
  app.post('/projects/:project/agent-releases', async (c) => {
    const project = c.req.param('project');
    authorizeAllProjects(
      principal(c),
      project,
      'sign agent releases',
      'a release decides what code runs as the edge agent, and every edge of every project trusts the one release key',
    );
    if (!releases) throw new OutpostError('unavailable', 'this hub has no release key');
    const b = await jsonBody<{ digest?: unknown; version?: unknown; scope?: unknown }>(c);
    if (
      typeof b.digest !== 'string' ||
      typeof b.version !== 'string' ||
      (b.scope !== undefined && typeof b.scope !== 'string')
    )
      throw new OutpostError(
        'invalid',
        'body must be {"digest": "sha256:...", "version": "X.Y.Z"} and optionally "scope": the project (default) or "*"',
      );
    return c.json(await releases.sign(project, b.digest, b.version, b.scope ?? project), 201);
  });
  app.get('/release-key', (c) => {
    if (!releases) throw new OutpostError('not_found', 'this hub has no release key');
    return c.body(releases.publicKeyPem, 200, { 'content-type': 'application/x-pem-file' });
  });
  return app;
}
