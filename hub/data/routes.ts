/**
 * @module `GET /api/v1/projects/P/edges/E/data-files[?workload=W][&path=TARGET/FILE]`: the files an
 * edge's workloads exported (docs/data.md). The bytes are a blob of the project: fetch them with
 * `GET /api/v1/projects/P/blobs/DIGEST` (resumable with Range), as `outpost data get` does.
 */
import { Hono } from 'hono';
import { isExportPath } from '../../core/data.js';
import { OutpostError } from '../../core/errors.js';
import { isValidName } from '../../core/ids.js';
import type { EgressQueue } from '../../core/data.js';
import { authorize, type Env } from '../auth/middleware.js';
import type { HubState } from '../state/index.js';

/** What the routes read: the files' table, the edges, and the upload queues edges last reported (hub/data/index.ts). */
export interface DataRouteDeps {
  state: Pick<HubState, 'edges' | 'dataFiles'>;
  uploads?: { queue(edge: string): EgressQueue | undefined };
}

export function dataRoutes(deps: DataRouteDeps): Hono<Env> {
  const app = new Hono<Env>();
  app.get('/projects/:project/edges/:name/data-files', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    const edge = c.req.param('name');
    const workload = c.req.query('workload');
    const path = c.req.query('path');
    if (!isValidName(edge)) throw new OutpostError('bad_request', `invalid edge name "${edge.slice(0, 80)}"`);
    if (workload !== undefined && !isValidName(workload))
      throw new OutpostError('bad_request', `invalid workload name "${workload.slice(0, 80)}"`);
    if (path !== undefined && !isExportPath(path))
      throw new OutpostError('bad_request', 'path must be TARGET/relative/path, without . or .. segments');
    // The queue is the edge's as a whole (all its workloads), as its last heartbeat said.
    const queue = deps.state.edges.get(edge)?.project === project ? deps.uploads?.queue(edge) : undefined;
    return c.json({
      items: deps.state.dataFiles.listDataFiles(project, edge, {
        ...(workload !== undefined ? { workload } : {}),
        ...(path !== undefined ? { path } : {}),
      }),
      ...(queue ? { queue } : {}),
    });
  });
  return app;
}
