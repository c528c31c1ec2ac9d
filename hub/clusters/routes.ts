/**
 * @module `POST /api/v1/projects/P/cluster-artifacts {name, digest, version}`: the hub signs one
 * component of a cluster distribution pushed as a blob of project P (hub/clusters/artifacts.ts),
 * as `outpost cluster artifacts push DIR` asks for each. An admin for every project only, as for
 * agent releases: the signature makes edges run the file as root, and every edge trusts the one
 * release key.
 */
import { Hono } from 'hono';
import { OutpostError } from '../../core/errors.js';
import { authorizeAllProjects } from '../auth/roles.js';
import { principal, type Env } from '../auth/middleware.js';
import { jsonBody } from '../json-body.js';
import type { AgentReleases } from '../upgrades/releases.js';
import { signArtifact } from './artifacts.js';

export function clusterArtifactRoutes(releases: Pick<AgentReleases, 'signAs'> | undefined): Hono<Env> {
  const app = new Hono<Env>();
  app.post('/projects/:project/cluster-artifacts', async (c) => {
    const project = c.req.param('project');
    authorizeAllProjects(
      principal(c),
      project,
      'sign cluster artifacts',
      'a cluster artifact decides what code edges run as root, and every edge trusts the one release key',
    );
    if (!releases) throw new OutpostError('unavailable', 'this hub has no release key');
    const b = await jsonBody<{ name?: unknown; digest?: unknown; version?: unknown; scope?: unknown }>(c);
    if (
      typeof b.name !== 'string' ||
      typeof b.digest !== 'string' ||
      typeof b.version !== 'string' ||
      (b.scope !== undefined && typeof b.scope !== 'string')
    )
      throw new OutpostError(
        'invalid',
        'body must be {"name": "kubelet", "digest": "sha256:...", "version": "v1.33.13"} (the Kubernetes version of the set), with "scope": "*" for a global template\'s artifacts',
      );
    return c.json(await signArtifact(releases, project, b.name, b.digest, b.version, b.scope ?? project), 201);
  });
  return app;
}
