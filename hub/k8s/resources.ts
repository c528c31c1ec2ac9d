/**
 * @module The routes of the `outpost.dev` resources: get, list, create, update (PUT), patch,
 * delete, and the read-only `status` subresource. Writes go through the hub's one write path
 * (deps.ts `write`): validation, sealing Secrets, optimistic concurrency (a stale
 * metadata.resourceVersion is 409 Conflict), events and change hooks are the REST API's.
 */
import type { Context } from 'hono';
import { parse as parseYaml } from 'yaml';
import { OutpostError } from '../../core/errors.js';
import type { Resource } from '../../core/resources.js';
import { actorOf, type ApiPrincipal } from '../auth/principal.js';
import { authorizeKube } from './access.js';
import { serverSideApply } from './apply.js';
import { fromKube, toKube, type ManagedFieldsEntry } from './convert.js';
import { formatManagers, parseManagers, recordUpdate } from './managed-fields.js';
import type { KubeApiDeps } from './deps.js';
import { GROUP, GROUP_VERSION, resourceByPlural, type KubeResource } from './kinds.js';
import { listPage, type ListQuery } from './list.js';
import { APPLY_PATCH, applyJsonPatch, applyMergePatch, JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH } from './patch.js';
import { KubeError, methodNotAllowed, notFound, toKubeStatus } from './status.js';
import { tableOf, wantsTable } from './table.js';

export type KubeEnv = { Variables: { principal: ApiPrincipal } };
type C = Context<KubeEnv>;

function resourceOfParam(c: C): KubeResource {
  const plural = c.req.param('resource') ?? '';
  const r = resourceByPlural(plural);
  if (!r) throw new KubeError(404, 'NotFound', `the server could not find the requested resource (${plural}.${GROUP})`);
  return r;
}

export { actorOf };

function dryRunOf(c: C): boolean {
  const d = c.req.queries('dryRun') ?? [];
  for (const v of d)
    if (v !== 'All') throw new OutpostError('bad_request', `dryRun: the only value is All (got "${v}")`);
  return d.length > 0;
}

/** A JSON (or, for apply, YAML) body. */
export async function bodyOf(c: C): Promise<unknown> {
  const text = await c.req.text();
  const type = (c.req.header('content-type') ?? '').split(';')[0].trim();
  try {
    return type.endsWith('yaml') ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new OutpostError(
      'bad_request',
      `the request body is not valid ${type.endsWith('yaml') ? 'YAML' : 'JSON'}: ${(err as Error).message}`,
    );
  }
}

function warn(c: C, warnings: string[]): void {
  for (const w of warnings) c.header('Warning', `299 - ${JSON.stringify(w)}`, { append: true });
}

/** An object as answered: its status, and its managed fields (as given, else as stored). */
export function show(deps: KubeApiDeps, o: Resource, managed?: ManagedFieldsEntry[]) {
  const { kind, metadata } = o;
  return toKube(deps.objects.present(o), managed ?? deps.objects.managedFields(kind, metadata.project, metadata.name));
}

/** Who makes a change: `fieldManager`, else the client's name from its User-Agent, as Kubernetes does. */
function managerOf(c: C): string {
  const m = c.req.query('fieldManager') ?? (c.req.header('user-agent') ?? '').split('/')[0];
  if (m.length > 128) throw new OutpostError('bad_request', 'fieldManager: at most 128 characters');
  return m || 'unknown';
}

/** The managed fields after a create, update or patch by the request's manager (an Update operation). */
function updating(deps: KubeApiDeps, c: C, before: Resource | undefined) {
  const manager = managerOf(c);
  const prior = before
    ? parseManagers(deps.objects.managedFields(before.kind, before.metadata.project, before.metadata.name))
    : [];
  return (written: Resource) =>
    formatManagers(
      recordUpdate(prior, manager, before && toKube(before), toKube(written), new Date().toISOString()),
      GROUP_VERSION,
    );
}

/** Runs a write, its errors naming the object (kubectl prints `The Placement "eu" is invalid: ...` from these). */
function naming<T>(r: KubeResource, name: unknown, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof KubeError) throw err;
    const s = toKubeStatus(err, { kind: r.kind, group: GROUP, ...(typeof name === 'string' ? { name } : {}) });
    throw new KubeError(s.code, s.reason, s.message, s.details);
  }
}

function listKind(r: KubeResource): string {
  return `${r.kind}List`;
}

export interface ResourceRoutes {
  list(c: C): Response | Promise<Response>;
  get(c: C): Response;
  create(c: C): Promise<Response>;
  update(c: C): Promise<Response>;
  patch(c: C): Promise<Response>;
  remove(c: C): Promise<Response>;
  status(c: C): Response;
}

export function resourceRoutes(
  deps: KubeApiDeps,
  opts: {
    currentResourceVersion(): string;
    watch(c: C, r: KubeResource, namespace: string | undefined): Response | Promise<Response>;
  },
): ResourceRoutes {
  const { objects } = deps;
  const auth = (c: C, verb: string, r: KubeResource, namespace: string | undefined) => {
    authorizeKube(c.get('principal'), { verb, resource: r.plural, group: GROUP, namespace });
    if (!r.verbs.includes(verb))
      throw methodNotAllowed(
        r.kind === 'Edge'
          ? `edges are not ${verb === 'create' ? 'created' : 'deleted'} through the API: an edge enrolls with a join token (outpost token create) and leaves by outpost edge decommission`
          : `${r.plural} do not support ${verb}`,
      );
  };
  const apply = (c: C, r: KubeResource, namespace: string, name: string, body: unknown) => {
    const manager = c.req.query('fieldManager');
    if (!manager)
      throw new OutpostError(
        'bad_request',
        'fieldManager is required for apply patch: kubectl apply --server-side sends one',
      );
    if (manager.length > 128) throw new OutpostError('bad_request', 'fieldManager: at most 128 characters');
    const force = c.req.query('force') === 'true';
    const stored = objects.get(r.kind, namespace, name);
    const prior = parseManagers(stored && objects.managedFields(r.kind, namespace, name));
    const result = naming(r, name, () =>
      serverSideApply({
        current: stored && toKube(deps.objects.present(stored)),
        managers: prior,
        applied: body,
        manager,
        force,
        now: new Date().toISOString(),
        normalize: (o) => toKube(objects.validate(fromKube(o, { kind: r.kind, namespace, name }))),
      }),
    );
    const input = fromKube(result.object, { kind: r.kind, namespace, name });
    const res = naming(r, name, () =>
      objects.write(input, {
        actor: actorOf(c.get('principal')),
        dryRun: dryRunOf(c),
        managedFields: () => formatManagers(result.managers, GROUP_VERSION),
      }),
    );
    warn(c, res.warnings);
    return c.json(show(deps, res.object, res.managedFields), res.action === 'created' ? 201 : 200);
  };
  const current = (r: KubeResource, namespace: string, name: string) => {
    const o = objects.get(r.kind, namespace, name);
    if (!o) throw notFound(r.plural, name);
    return o;
  };

  return {
    list(c) {
      const r = resourceOfParam(c);
      const namespace = c.req.param('namespace');
      const watching = ['true', '1'].includes(c.req.query('watch') ?? '');
      auth(c, watching ? 'watch' : 'list', r, namespace);
      if (watching) return opts.watch(c, r, namespace);
      const rv = opts.currentResourceVersion();
      const q = c.req.query() as ListQuery;
      const page = listPage(objects, r.kind, namespace, q);
      const items = page.items.map((o) => show(deps, o));
      const metadata = { resourceVersion: rv, ...(page.continue ? { continue: page.continue } : {}) };
      if (wantsTable(c)) return tableOf(c, r, items, metadata);
      return c.json({ apiVersion: GROUP_VERSION, kind: listKind(r), metadata, items });
    },
    get(c) {
      const r = resourceOfParam(c);
      const namespace = c.req.param('namespace')!;
      auth(c, 'get', r, namespace);
      const o = show(deps, current(r, namespace, c.req.param('name')!));
      if (wantsTable(c)) return tableOf(c, r, [o], { resourceVersion: o.metadata.resourceVersion ?? '' });
      return c.json(o);
    },
    status(c) {
      const r = resourceOfParam(c);
      const namespace = c.req.param('namespace')!;
      if (c.req.method !== 'GET')
        throw methodNotAllowed(`the status of ${r.plural} is the hub's to write: the status subresource is read-only`);
      auth(c, 'get', r, namespace);
      return c.json(show(deps, current(r, namespace, c.req.param('name')!)));
    },
    async create(c) {
      const r = resourceOfParam(c);
      const namespace = c.req.param('namespace')!;
      auth(c, 'create', r, namespace);
      const input = fromKube(await bodyOf(c), { kind: r.kind, namespace });
      const name = input.metadata?.name;
      if (typeof name === 'string' && objects.get(r.kind, namespace, name))
        throw new KubeError(409, 'AlreadyExists', `${r.plural}.${GROUP} "${name}" already exists`, {
          name,
          group: GROUP,
          kind: r.plural,
        });
      const res = naming(r, name, () =>
        objects.write(input, {
          update: false,
          actor: actorOf(c.get('principal')),
          dryRun: dryRunOf(c),
          managedFields: updating(deps, c, undefined),
        }),
      );
      warn(c, res.warnings);
      return c.json(show(deps, res.object, res.managedFields), 201);
    },
    async update(c) {
      const r = resourceOfParam(c);
      const namespace = c.req.param('namespace')!;
      const name = c.req.param('name')!;
      auth(c, 'update', r, namespace);
      const input = fromKube(await bodyOf(c), { kind: r.kind, namespace, name });
      const cur = current(r, namespace, name);
      const res = naming(r, name, () =>
        objects.write(input, {
          create: false,
          actor: actorOf(c.get('principal')),
          dryRun: dryRunOf(c),
          managedFields: updating(deps, c, cur),
        }),
      );
      warn(c, res.warnings);
      return c.json(show(deps, res.object, res.managedFields));
    },
    async patch(c) {
      const r = resourceOfParam(c);
      const namespace = c.req.param('namespace')!;
      const name = c.req.param('name')!;
      auth(c, 'patch', r, namespace);
      const type = (c.req.header('content-type') ?? '').split(';')[0].trim();
      const body = await bodyOf(c);
      if (type === APPLY_PATCH) return apply(c, r, namespace, name, body);
      if (type === STRATEGIC_PATCH)
        throw new KubeError(
          415,
          'UnsupportedMediaType',
          `strategic merge patch is not supported for ${r.plural}.${GROUP} (custom kinds have no patch strategies): use a merge patch (kubectl patch --type merge) or server-side apply`,
        );
      if (type !== MERGE_PATCH && type !== JSON_PATCH)
        throw new KubeError(
          415,
          'UnsupportedMediaType',
          `the patch type ${type || '(none)'} is not supported: use ${MERGE_PATCH}, ${JSON_PATCH} or ${APPLY_PATCH}`,
        );
      // The base carries no resourceVersion: only one the patch itself names is checked.
      // The object as the client sees it (Secret values redacted: applied back, they keep the stored ones).
      const stored = current(r, namespace, name);
      const cur = toKube(deps.objects.present(stored));
      const base = {
        ...cur,
        metadata: { ...cur.metadata, resourceVersion: undefined, managedFields: undefined },
        status: undefined,
      };
      const patched = type === MERGE_PATCH ? applyMergePatch(base, body) : applyJsonPatch(base, body);
      const input = fromKube(patched, { kind: r.kind, namespace, name });
      const res = naming(r, name, () =>
        objects.write(input, {
          create: false,
          actor: actorOf(c.get('principal')),
          dryRun: dryRunOf(c),
          managedFields: updating(deps, c, stored),
        }),
      );
      warn(c, res.warnings);
      return c.json(show(deps, res.object, res.managedFields));
    },
    async remove(c) {
      const r = resourceOfParam(c);
      const namespace = c.req.param('namespace')!;
      const name = c.req.param('name')!;
      auth(c, 'delete', r, namespace);
      const text = await c.req.text();
      const options = text.trim()
        ? (JSON.parse(text) as { preconditions?: { resourceVersion?: string; uid?: string } })
        : {};
      const cur = current(r, namespace, name);
      const pre = options.preconditions ?? {};
      if (pre.resourceVersion && pre.resourceVersion !== cur.metadata.resourceVersion)
        throw new KubeError(
          409,
          'Conflict',
          `Precondition failed: resourceVersion ${pre.resourceVersion} is not the current ${cur.metadata.resourceVersion} of ${r.plural}.${GROUP} "${name}"`,
        );
      if (pre.uid && pre.uid !== cur.metadata.uid)
        throw new KubeError(
          409,
          'Conflict',
          `Precondition failed: UID ${pre.uid} is not the UID of ${r.plural}.${GROUP} "${name}"`,
        );
      const gone = objects.delete(r.kind, namespace, name, { actor: actorOf(c.get('principal')), dryRun: dryRunOf(c) });
      return c.json(toKube(gone));
    },
  };
}
