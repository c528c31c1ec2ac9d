/** @module Object routes: CRUD with status, revisions, rollout verbs, events (`apply` is in apply.ts). */
import { refuseClusterDelete } from '../clusters/delete-guard.js';
import { clusterDeletionOf } from '../clusters/deletion.js';
import { authorizeObject, GLOBAL_SCOPE } from '../clusters/global-templates.js';
import type { EventView, PlacementStagingView, RevisionView } from '../../core/api/views.js';
import { Hono, type Context } from 'hono';
import { mergePatch } from '../../core/customize.js';
import { OutpostError } from '../../core/errors.js';
import {
  KINDS,
  type AgentUpgrade,
  type Edge,
  type Kind,
  type LabelSelector,
  type Placement,
  type Resource,
  type Workload,
} from '../../core/resources.js';
import { matchesSelector, parseSelectorString } from '../../core/selector.js';
import { checkPlacements } from '../controllers/placements.js';
import { checkDataPaths } from '../data/paths.js';
import { edgeDetail, edgeStatus, hasLocalIntents, placementStatus, workloadSummary } from '../controllers/status.js';
import type { ReplicaStore } from '../../sync/store.js';
import { edgePhase } from '../edges/phase.js';
import type { EdgeState } from '../state/edges.js';
import type { ObjectState } from '../state/objects.js';
import { validateResource } from '../objects.js';
import { registryForOutput } from '../images/registries.js';
import { gitRepoForOutput } from '../gitops/credentials.js';
import { REDACTED } from '../../core/secrets.js';
import { kindFromPath, type ObjectApi } from './context.js';
import { actor, authorize, principal, type Env } from '../auth/middleware.js';
import { jsonBody } from '../json-body.js';
import { can } from '../auth/roles.js';

const MAX_LIST = 1000;

/**
 * `?secrets=reveal` asks for Secret values in clear: operators and admins of the project may,
 * viewers never (403). Without it every Secret value is REDACTED.
 */
export function revealSecrets(deps: ObjectApi, c: Context<Env>, project: string): boolean {
  const q = c.req.query('secrets');
  if (q === undefined) return false;
  if (q !== 'reveal') throw new OutpostError('bad_request', `secrets: use secrets=reveal (got "${q}")`);
  const p = principal(c);
  if (!can(p, 'write', project))
    throw new OutpostError(
      'forbidden',
      `a ${p.role} token may not reveal Secret values in project ${project}: they show as ${REDACTED}; an operator or admin token may ask with secrets=reveal`,
    );
  return true;
}

/** A placement's pre-staging progress, while its rollout stages images (docs/drivers.md, "Pre-staging"). */
function stagingOf(deps: ObjectApi, project: string, name: string): { imageStaging?: PlacementStagingView } {
  const p = deps.imageStaging?.progress(project, name);
  return p ? { imageStaging: p } : {};
}

/**
 * An object as the API shows it: with its status, and its Secret values redacted unless revealed;
 * `detail` for one object's own GET (an edge's then says more than a list's items do).
 */
export function withStatus(deps: ObjectApi, o: Resource, reveal = false, detail = false): Resource {
  const { state, store, scheduler } = deps;
  if (o.kind === 'Placement') {
    return {
      ...o,
      status: {
        ...placementStatus(state, o, scheduler.rollout(o.metadata.project, o.metadata.name)),
        ...stagingOf(deps, o.metadata.project, o.metadata.name),
        ...(o.spec.package ? { package: deps.catalog?.deployment(o.metadata.project, o.metadata.name) } : {}),
      },
    } as Resource;
  }
  if (o.kind === 'Edge') {
    const cluster = deps.clusters?.ofEdge(o.metadata.name);
    return {
      ...o,
      status: {
        ...edgeStatus(state, store, o.metadata.name, (r) => deps.replicas.servedBy(r)),
        ...(detail ? edgeDetail(state, o.metadata.name) : {}),
        ...(cluster ? { cluster } : {}),
      },
    } as Resource;
  }
  if (o.kind === 'Cluster') return deps.clusters ? ({ ...o, status: { ...deps.clusters.status(o) } } as Resource) : o;
  if (o.kind === 'ClusterTemplate') return o;
  if (o.kind === 'AgentUpgrade')
    return deps.upgrades ? ({ ...o, status: { ...deps.upgrades.status(o) } } as Resource) : o;
  if (o.kind === 'DataObject')
    return deps.deliveries ? ({ ...o, status: { ...deps.deliveries.status(o) } } as Resource) : o;
  if (o.kind === 'ServiceExport')
    return deps.interconnect ? ({ ...o, status: { ...deps.interconnect.exportStatus(o) } } as Resource) : o;
  if (o.kind === 'ServiceImport')
    return deps.interconnect ? ({ ...o, status: { ...deps.interconnect.importStatus(o) } } as Resource) : o;
  if (o.kind === 'Registry') return registryForOutput(deps.secrets.box, o, reveal);
  if (o.kind === 'GitRepo') {
    const shown = gitRepoForOutput(deps.secrets.box, o, reveal);
    return deps.gitRepos ? ({ ...shown, status: { ...deps.gitRepos.status(o) } } as Resource) : shown;
  }
  return {
    ...o,
    spec: {
      ...o.spec,
      manifests: reveal ? deps.secrets.reveal(o.spec.manifests) : deps.secrets.redact(o.spec.manifests),
    },
    status: { ...(o.status ?? {}), summary: workloadSummary(state, o.metadata.project, o.metadata.name) },
  } as Resource;
}

/**
 * How many objects match a list's filters over all its pages, so a filtered page of a 10,000-edge
 * fleet can say "834 match" without the client fetching them all. One pass over names and labels
 * (and the connection facts for `state`), no specs, no statuses: 15-35 ms at 10,000 edges here.
 */
export function countMatching(
  objects: ObjectState,
  edges: EdgeState,
  kind: Kind,
  project: string,
  f: { selector?: LabelSelector; q?: string; state?: string; local?: ReplicaStore },
): number {
  const rows = objects.labels(kind, project);
  let phases: Map<string, string> | undefined;
  if (f.state && kind === 'Edge') {
    // Only the columns the phase needs (not every edge's inventory).
    const now = Date.now();
    phases = new Map([...edges.liveness(project)].map(([name, l]) => [name, edgePhase(l, now)]));
  }
  let n = 0;
  for (const r of rows) {
    if (f.q && !r.name.includes(f.q)) continue;
    if (f.selector && !matchesSelector(r.labels(), f.selector)) continue;
    if (phases && (phases.get(r.name) ?? 'Pending') !== f.state) continue;
    if (f.local && kind === 'Edge' && !hasLocalIntents(f.local, r.name)) continue;
    n++;
  }
  return n;
}

export function objectRoutes(deps: ObjectApi): Hono<Env> {
  const app = new Hono<Env>();
  const { objects, scheduler, state } = deps;

  app.get('/projects/:project/events', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    const kind = c.req.query('kind');
    const name = c.req.query('name');
    // `edge=NAME`: the edge's events and those of other objects about it (an AgentUpgrade's).
    const edge = c.req.query('edge');
    if (edge && (kind || name))
      throw new OutpostError('bad_request', 'edge lists the events of an edge: give edge, or kind and name, not both');
    const reason = c.req.query('reason');
    const since = c.req.query('since') === undefined ? undefined : Number(c.req.query('since'));
    if (since !== undefined && !Number.isFinite(since))
      throw new OutpostError('bad_request', 'since: give a time in milliseconds since the epoch');
    const limit = Math.min(Number(c.req.query('limit') ?? 50) || 50, 500);
    const rows = deps.state.events.list(project, { kind, name, edge, reason, since, limit });
    // Events outlive their objects: say which are gone, so the UI does not link to a 404.
    const exists = new Map<string, boolean>();
    const gone = (r: { kind: string; name: string }) => {
      if (!(KINDS as readonly string[]).includes(r.kind)) return false;
      const key = `${r.kind}/${r.name}`;
      if (!exists.has(key)) exists.set(key, !!objects.get(r.kind as Kind, project, r.name));
      return !exists.get(key);
    };
    const items: EventView[] = rows.map((r) => ({
      ...r,
      time: new Date(r.at).toISOString(),
      ...(gone(r) ? { gone: true } : {}),
    }));
    return c.json({ items });
  });

  app.get('/projects/:project/:kind', (c) => {
    const project = c.req.param('project');
    const kind = kindFromPath(c.req.param('kind'));
    authorize(c, 'read', project);
    const limit = Math.min(Number(c.req.query('limit') ?? MAX_LIST) || MAX_LIST, MAX_LIST);
    const after = c.req.query('continue') ?? '';
    const sel = c.req.query('labelSelector');
    const q = c.req.query('q');
    const state = c.req.query('state');
    // `local=true`: only edges holding intents made on site (a pause or overrides the hub has not cleared).
    const local = c.req.query('local') === 'true';
    let selector;
    try {
      selector = sel ? parseSelectorString(sel) : undefined;
    } catch (err) {
      throw new OutpostError('bad_request', `labelSelector: ${(err as Error).message}`);
    }
    // Filter on the server so a 10,000-edge fleet pages through matches, not through everything.
    const out: Resource[] = [];
    let cursor = after;
    let more = false;
    for (;;) {
      const batch = objects.list(kind, project, { after: cursor, limit: 500 });
      if (batch.length === 0) break;
      for (const o of batch) {
        cursor = project === '*' ? `${o.metadata.project}/${o.metadata.name}` : o.metadata.name;
        if (selector && !matchesSelector(o.metadata.labels, selector)) continue;
        if (q && !o.metadata.name.includes(q)) continue;
        if (state && kind === 'Edge' && edgePhase(deps.state.edges.get(o.metadata.name)) !== state) continue;
        if (local && kind === 'Edge' && !hasLocalIntents(deps.store, o.metadata.name)) continue;
        if (out.length === limit) {
          more = true;
          break;
        }
        out.push(o);
      }
      if (more || batch.length < 500) break;
    }
    // A project's templates are followed by the global ones, which every project may use (on the last page).
    const hubWide =
      kind === 'ClusterTemplate' && project !== '*' && !more
        ? objects.list(kind, '*').filter((o) => o.metadata.project === GLOBAL_SCOPE)
        : [];
    out.push(
      ...hubWide.filter(
        (o) => (!selector || matchesSelector(o.metadata.labels, selector)) && (!q || o.metadata.name.includes(q)),
      ),
    );
    const reveal = revealSecrets(deps, c, project);
    const items = out.map((o) => withStatus(deps, o, reveal));
    const matched =
      selector || q || state || local
        ? {
            matched: countMatching(deps.state.objects, deps.state.edges, kind, project, {
              selector,
              q,
              state,
              local: local ? deps.store : undefined,
            }),
          }
        : {};
    return c.json({
      items,
      total: objects.count(kind, project) + hubWide.length,
      ...matched,
      ...(more
        ? {
            continue:
              project === '*'
                ? `${items[items.length - 1].metadata.project}/${items[items.length - 1].metadata.name}`
                : items[items.length - 1].metadata.name,
          }
        : {}),
    });
  });

  app.get('/projects/:project/:kind/:name', (c) => {
    const project = c.req.param('project');
    const kind = kindFromPath(c.req.param('kind'));
    authorizeObject(principal(c), 'read', kind, project);
    const reveal = revealSecrets(deps, c, project);
    const o = objects.get(kind, project, c.req.param('name'));
    if (!o) throw new OutpostError('not_found', `${kind} ${c.req.param('name')} not found in project ${project}`);
    return c.json(withStatus(deps, o, reveal, true));
  });

  const write = async (c: Context<Env>, mode: 'create' | 'put', patched?: Record<string, unknown>) => {
    const project = c.req.param('project') ?? '';
    const kind = kindFromPath(c.req.param('kind') ?? '');
    authorizeObject(principal(c), 'write', kind, project);
    if (kind === 'Edge' && mode === 'create')
      throw new OutpostError(
        'bad_request',
        'edges are created by enrollment: create a join token (outpost token create) and start the edge agent with it',
      );
    const body = patched ?? (await jsonBody<Record<string, unknown>>(c));
    const meta = (body.metadata ?? {}) as Record<string, unknown>;
    const input = {
      ...body,
      kind: body.kind ?? kind,
      metadata: {
        ...meta,
        project: meta.project ?? project,
        ...(mode === 'put' ? { name: meta.name ?? c.req.param('name') } : {}),
      },
    };
    const obj = validateResource(input);
    if (obj.kind !== kind)
      throw new OutpostError('bad_request', `body kind ${obj.kind} does not match the URL (${c.req.param('kind')})`);
    if (obj.metadata.project !== project)
      throw new OutpostError(
        'bad_request',
        `metadata.project ${obj.metadata.project} does not match the URL project ${project}`,
      );
    if (mode === 'put' && obj.metadata.name !== c.req.param('name'))
      throw new OutpostError(
        'bad_request',
        `metadata.name ${obj.metadata.name} does not match the URL name ${c.req.param('name')}`,
      );
    if (kind === 'Edge' && !objects.get('Edge', project, obj.metadata.name))
      throw new OutpostError('not_found', `edge ${obj.metadata.name} is not enrolled`);
    const { r, warnings } = state.transaction(() => {
      const r = objects.apply(obj, { update: mode === 'put', actor: actor(c) });
      if (r.object.kind === 'DataObject') checkDataPaths(state.edges, objects, [r.object]);
      return {
        r,
        warnings:
          r.object.kind === 'Placement' ? checkPlacements(state.edges, objects, [r.object], state.clusters) : [],
      };
    });
    for (const w of warnings) c.header('Warning', `299 - ${JSON.stringify(w)}`, { append: true });
    return c.json(withStatus(deps, r.object), r.action === 'created' ? 201 : 200);
  };
  app.post('/projects/:project/:kind', (c) => write(c, 'create'));
  app.put('/projects/:project/:kind/:name', (c) => write(c, 'put'));
  // JSON merge patch (RFC 7386), as `kubectl patch --type merge`: the patch merged into the stored
  // object is validated and applied like a PUT (a metadata.resourceVersion in the patch is checked).
  app.patch('/projects/:project/:kind/:name', async (c) => {
    const project = c.req.param('project');
    const kind = kindFromPath(c.req.param('kind'));
    const name = c.req.param('name');
    authorizeObject(principal(c), 'write', kind, project);
    const type = (c.req.header('content-type') ?? '').split(';')[0].trim();
    if (type !== 'application/merge-patch+json' && type !== 'application/json')
      throw new OutpostError(
        'unsupported_media',
        `PATCH takes a JSON merge patch (RFC 7386) with Content-Type: application/merge-patch+json (got ${type || 'none'}); JSON Patch and strategic merge patch are not supported: send the fields to change, null to remove one`,
      );
    const patch = await jsonBody<unknown>(c);
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch))
      throw new OutpostError(
        'bad_request',
        'a merge patch is a JSON object of the fields to change, e.g. {"spec": {"rollout": {"paused": true}}}',
      );
    const cur = objects.get(kind, project, name);
    if (!cur) throw new OutpostError('not_found', `${kind} ${name} not found in project ${project}`);
    const { metadata, spec, apiVersion } = cur;
    const base = {
      apiVersion,
      kind,
      metadata: { name, project, labels: metadata.labels, annotations: metadata.annotations },
      spec,
    };
    return write(c, 'put', mergePatch(base, patch) as Record<string, unknown>);
  });

  app.delete('/projects/:project/:kind/:name', (c) => {
    const project = c.req.param('project');
    const kind = kindFromPath(c.req.param('kind'));
    authorizeObject(principal(c), 'write', kind, project);
    if (kind === 'Edge')
      throw new OutpostError(
        'bad_request',
        `edges leave by decommission: outpost edge decommission ${c.req.param('name')}`,
      );
    // Said before it happens, from the same state: which edges keep their version, which another
    // AgentUpgrade takes (hub/upgrades/delete-effects.ts). Nothing awaits between the two.
    const upgrade = kind === 'AgentUpgrade' ? objects.get<AgentUpgrade>(kind, project, c.req.param('name')) : undefined;
    const changes = upgrade && deps.upgrades ? deps.upgrades.deleteChanges(upgrade) : undefined;
    const force = c.req.query('force') === 'true';
    const name = c.req.param('name');
    if (kind === 'Cluster') {
      // A cluster already being deleted: deleting it again changes nothing (or, forced, ends it).
      const cur = objects.get(kind, project, name);
      if (cur && !clusterDeletionOf(state, cur)) refuseClusterDelete(objects, project, name, force);
    }
    const o = objects.delete(kind, project, name, actor(c), { force });
    // A kind deleted in two steps (a Cluster's nodes tear it down first) is still there.
    if (objects.get(kind, project, name))
      return c.json({ deleting: { kind, project, name: o.metadata.name }, object: withStatus(deps, o) });
    return c.json({ deleted: { kind, project, name: o.metadata.name }, ...(changes ? { changes } : {}) });
  });

  app.get('/projects/:project/workloads/:name/revisions', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    if (!objects.get('Workload', project, c.req.param('name')))
      throw new OutpostError('not_found', `Workload ${c.req.param('name')} not found`);
    const reveal = revealSecrets(deps, c, project);
    const show = (m: Workload['spec']['manifests']) => (reveal ? deps.secrets.reveal(m) : deps.secrets.redact(m));
    const items: RevisionView[] = objects
      .revisions(project, c.req.param('name'))
      .map((r) => ({ ...r, manifests: show(r.manifests as Workload['spec']['manifests']) }));
    return c.json({ items });
  });

  app.post('/projects/:project/workloads/:name/rollback', async (c) => {
    const project = c.req.param('project');
    authorize(c, 'write', project);
    const body = (await c.req.json().catch(() => ({}))) as { revision?: number };
    if (body.revision !== undefined && (!Number.isInteger(body.revision) || body.revision < 1))
      throw new OutpostError('invalid', 'revision: must be a positive integer');
    const r = objects.rollback(project, c.req.param('name'), body.revision, actor(c));
    return c.json({ revision: r.revision, object: withStatus(deps, r.object) });
  });

  for (const verb of ['pause', 'resume'] as const) {
    app.post(`/projects/:project/placements/:name/${verb}`, (c) => {
      const project = c.req.param('project');
      authorize(c, 'write', project);
      const p = objects.get<Placement>('Placement', project, c.req.param('name'));
      if (!p) throw new OutpostError('not_found', `Placement ${c.req.param('name')} not found`);
      const next = {
        ...p,
        metadata: { ...p.metadata, resourceVersion: undefined },
        spec: { ...p.spec, rollout: { ...p.spec.rollout, paused: verb === 'pause' } },
      };
      const r = objects.apply(next, { create: false, actor: actor(c) });
      if (verb === 'resume') scheduler.resume(project, p.metadata.name);
      return c.json(withStatus(deps, r.object));
    });
  }

  return app;
}

export type { Edge, Kind, Workload };
