/**
 * @module Project routes (docs/projects.md): list and read (each token sees the projects it acts
 * in), create, change and delete (an admin of every project only: a project's admin may not make,
 * change or remove the project itself, its quotas are what bound it).
 */
import { Hono, type Context } from 'hono';
import { OutpostError } from '../../core/errors.js';
import type { Project } from '../../core/resources.js';
import { actor, authorize, principal, type Env } from '../auth/middleware.js';
import { authorizeAllProjects } from '../auth/roles.js';
import { jsonBody } from '../json-body.js';
import type { ProjectDeletions } from '../projects/deletion.js';
import type { Projects } from '../projects/store.js';
import { mergePatch } from '../../core/customize.js';

export interface ProjectApi {
  projects: Projects;
  deletions: ProjectDeletions;
}

const WHY = "a project's quotas and members bound what its own admins may do";

export function projectRoutes(deps: ProjectApi): Hono<Env> {
  const app = new Hono<Env>();
  const { projects, deletions } = deps;
  const shown = (p: Project): Project => {
    const left = deletions.remaining(p.metadata.name);
    return left && p.status ? { ...p, status: { ...p.status, remaining: left } } : p;
  };
  const adminOnly = (c: Context<Env>, name: string, doing: string) =>
    authorizeAllProjects(principal(c), name, doing, WHY);

  app.get('/projects', (c) => {
    const p = principal(c);
    const items = projects.list().filter((x) => p.project === '*' || x.metadata.name === p.project);
    return c.json({ items: items.map(shown) });
  });

  app.get('/projects/:name', (c) => {
    const name = c.req.param('name');
    authorize(c, 'read', name);
    const p = projects.get(name);
    if (!p) throw new OutpostError('not_found', `project ${name} not found`);
    return c.json(shown(p));
  });

  const write = async (c: Context<Env>, mode: 'create' | 'put', body?: Record<string, unknown>) => {
    body ??= await jsonBody<Record<string, unknown>>(c);
    const meta = (body.metadata ?? {}) as Record<string, unknown>;
    const name = mode === 'put' ? c.req.param('name')! : String(meta.name ?? '');
    adminOnly(c, name, mode === 'create' ? 'create projects' : 'change projects');
    if (mode === 'put' && meta.name !== undefined && meta.name !== name)
      throw new OutpostError('bad_request', `metadata.name ${String(meta.name)} does not match the URL name ${name}`);
    const r = projects.apply(
      { ...body, kind: body.kind ?? 'Project', metadata: { ...meta, name } },
      { update: mode === 'put', actor: actor(c) },
    );
    return c.json(shown(r.object), r.action === 'created' ? 201 : 200);
  };
  app.post('/projects', (c) => write(c, 'create'));
  app.put('/projects/:name', (c) => write(c, 'put'));
  app.patch('/projects/:name', async (c) => {
    const name = c.req.param('name');
    adminOnly(c, name, 'change projects');
    const cur = projects.get(name);
    if (!cur) throw new OutpostError('not_found', `project ${name} not found`);
    const patch = await jsonBody<Record<string, unknown>>(c);
    const { metadata, spec, apiVersion, kind } = cur;
    const base = {
      apiVersion,
      kind,
      metadata: { name, labels: metadata.labels, annotations: metadata.annotations },
      spec,
    };
    return write(c, 'put', mergePatch(base, patch) as Record<string, unknown>);
  });

  // Asks for the deletion and answers at once (202): the hub works through it (hub/projects/deletion.ts).
  app.delete('/projects/:name', (c) => {
    const name = c.req.param('name');
    adminOnly(c, name, 'delete projects');
    const moveEdgesTo = c.req.query('moveEdgesTo') || undefined;
    const decommissionEdges = c.req.query('decommissionEdges') === 'true';
    const p = projects.requestDeletion(name, { moveEdgesTo, decommissionEdges, actor: actor(c) });
    deletions.kick();
    return c.json(shown(p), 202);
  });

  return app;
}
