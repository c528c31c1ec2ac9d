/**
 * @module Edge lifecycle routes: enroll (join token), approve, label, drain/uncordon, decommission,
 * clear local intents. HTTP only: what each does is hub/edges/lifecycle.ts.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { OutpostError } from '../../core/errors.js';
import { isValidName } from '../../core/ids.js';
import { formatIssues, Inventory, Labels } from '../../core/resources.js';
import { isSealKey } from '../../core/secrets.js';
import type { EdgeLifecycle } from '../edges/lifecycle.js';
import type { ObjectApi } from './context.js';
import { actor, authorize, type Env } from '../auth/middleware.js';
import { jsonBody } from '../json-body.js';
import { withStatus } from './objects.js';

const EnrollRequest = z.object({
  joinToken: z.string().min(1, 'is required: create one with `outpost token create`'),
  name: z
    .string()
    .refine(isValidName, 'must be 1-63 lower-case letters, digits or "-", starting and ending with a letter or digit'),
  labels: Labels.optional(),
  inventory: Inventory.optional(),
  /** The public half of the key pair the agent just made; Secrets for this edge are sealed to it. */
  sealKey: z.string().refine(isSealKey, 'must be an X25519 public key: 43 base64url characters').optional(),
});

/** What the edges' lifecycle does, answered as the objects' routes show an Edge (`deps`). */
export function edgeRoutes(edges: EdgeLifecycle, deps: ObjectApi): Hono<Env> {
  const app = new Hono<Env>();

  app.post('/projects/:project/edges/:name/approve', (c) => {
    const project = c.req.param('project');
    authorize(c, 'admin', project);
    return c.json(withStatus(deps, edges.approve(project, c.req.param('name'), actor(c))));
  });

  app.post('/projects/:project/edges/:name/labels', async (c) => {
    const project = c.req.param('project');
    authorize(c, 'write', project);
    const name = c.req.param('name');
    edges.get(project, name);
    const body = await jsonBody<{ labels?: Record<string, string | null> }>(c);
    if (!body.labels || typeof body.labels !== 'object')
      throw new OutpostError('invalid', 'labels: must be an object of key: value (null removes a label)');
    return c.json(withStatus(deps, edges.label(project, name, body.labels, actor(c))));
  });

  for (const [verb, unschedulable] of [
    ['drain', true],
    ['uncordon', false],
  ] as const) {
    app.post(`/projects/:project/edges/:name/${verb}`, (c) => {
      const project = c.req.param('project');
      authorize(c, 'write', project);
      return c.json(withStatus(deps, edges.setUnschedulable(project, c.req.param('name'), unschedulable, actor(c))));
    });
  }

  app.post('/projects/:project/edges/:name/decommission', (c) => {
    const project = c.req.param('project');
    authorize(c, 'admin', project);
    const name = c.req.param('name');
    edges.decommission(project, name, actor(c));
    return c.json({ decommissioned: name });
  });

  app.post('/projects/:project/edges/:name/clear-intents', async (c) => {
    const project = c.req.param('project');
    authorize(c, 'write', project);
    const name = c.req.param('name');
    edges.get(project, name);
    const body = await jsonBody<{ workload?: string }>(c);
    if (!body.workload) throw new OutpostError('invalid', 'workload: is required');
    return c.json(edges.clearIntents(project, name, body.workload, actor(c)));
  });

  return app;
}

/** POST /api/v1/enroll: the only unauthenticated write; the join token is the authorization. */
export function enrollRoute(edges: Pick<EdgeLifecycle, 'enroll'>, releaseKey: string | undefined): Hono {
  const app = new Hono();
  app.post('/enroll', async (c) => {
    const parsed = EnrollRequest.safeParse(await jsonBody(c));
    if (!parsed.success) {
      const issues = formatIssues(parsed.error);
      throw new OutpostError('invalid', issues.map((i) => `${i.path}: ${i.message}`).join('; '), { details: issues });
    }
    const r = edges.enroll(parsed.data);
    return c.json(
      {
        edge: r.edge,
        project: r.project,
        credential: r.credential,
        approved: r.approved,
        ...(releaseKey ? { releaseKey } : {}),
      },
      201,
    );
  });
  return app;
}
