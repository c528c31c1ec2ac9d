/**
 * @module `GET /api/v1/replicas` (issue #42; docs/api.md): the hub processes serving this hub's
 * database, each with its URL, whether it is alive, its last renewal, the edges it serves and
 * whether it plans. Any token may read it: the edges are counted in the token's project. HTTP only:
 * the list is hub/replicas/directory.ts's.
 */
import { Hono } from 'hono';
import type { ListResponse } from '../../core/api/types.js';
import type { ReplicaView } from '../../core/api/views.js';
import type { ReplicaNames } from './context.js';
import { principal, type Env } from '../auth/middleware.js';

export function replicaRoutes(replicas: Pick<ReplicaNames, 'list'>): Hono<Env> {
  const app = new Hono<Env>();
  app.get('/replicas', (c) => {
    const items = replicas.list(principal(c).project);
    return c.json({ items, total: items.length } satisfies ListResponse<ReplicaView>);
  });
  return app;
}
