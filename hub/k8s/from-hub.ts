/**
 * @module The Kubernetes API's dependencies (deps.ts) built from the hub's: the one place in
 * hub/k8s that knows the REST API's dependency bag. Writes go the REST API's way (hub/api/objects.ts
 * `write`): the object store's apply with the placement and data-path checks, in one transaction.
 */
import { OutpostError } from '../../core/errors.js';
import type { Resource } from '../../core/resources.js';
import type { HubDeps } from '../api/context.js';
import { withStatus } from '../api/objects.js';
import { checkPlacements } from '../controllers/placements.js';
import { checkDataPaths } from '../data/paths.js';
import { validateResource } from '../objects.js';
import { transaction } from '../state/sql.js';
import { sqlKubeApiState, type KubeApiState } from '../state/kube-api.js';
import type { ManagedFieldsEntry } from './convert.js';
import type { KubeApiDeps } from './deps.js';

/**
 * How many object changes watches can be resumed over (kube_watch_events keeps these, newest
 * first): a watch resuming from older is told 410 Gone and lists again. Kubernetes keeps about
 * five minutes of changes; at 10,000 this covers a busy hub's hours.
 */
export const KEPT_WATCH_EVENTS = 10_000;
/** Pruned every this many changes, in the change's transaction (a bounded delete, not one per write). */
const PRUNE_EVERY = 500;

/**
 * Records each object change for watches, in its transaction: a deletion gets a resourceVersion
 * of its own (Kubernetes clients resume from the last event's), and takes its managed fields along.
 */
function recordChanges(deps: HubDeps, kube: KubeApiState, commits: (() => void)[]): void {
  let n = 0;
  deps.objects.onChange((c) => {
    const rv = c.after ? Number(c.after.metadata.resourceVersion) : deps.state.objects.nextResourceVersion();
    const object = c.after ?? { ...c.before!, metadata: { ...c.before!.metadata, resourceVersion: String(rv) } };
    kube.record({
      rv,
      type: !c.before ? 'ADDED' : c.after ? 'MODIFIED' : 'DELETED',
      kind: c.kind,
      project: c.project,
      name: c.name,
      object: JSON.stringify(object),
    });
    if (!c.after) kube.setManagedFields(c.kind, c.project, c.name, undefined);
    if (++n % PRUNE_EVERY === 0) kube.prune(KEPT_WATCH_EVENTS);
    for (const fn of commits) fn();
  });
}

/**
 * A dry run stores nothing and fires no hook (hooks act after commit: a rolled-back write must
 * not reach them): it validates the object, its name and its resourceVersion, and answers with
 * the object as the write would store it. Checks made at commit (a release blob present, a
 * package's admission) are not run; docs/kubernetes-api.md says so.
 */
function dryRun(deps: HubDeps, obj: Resource, opts: { create?: boolean; update?: boolean }) {
  const v = validateResource(obj);
  const { project, name } = v.metadata;
  const cur = deps.objects.get(v.kind, project, name);
  if (!cur && opts.create === false) throw new OutpostError('not_found', `${v.kind} ${project}/${name} does not exist`);
  if (cur && opts.update === false) throw new OutpostError('conflict', `${v.kind} ${project}/${name} already exists`);
  if (!cur && v.metadata.resourceVersion)
    throw new OutpostError(
      'conflict',
      `${v.kind} ${project}/${name} does not exist but the request carries a resourceVersion`,
    );
  if (cur && v.metadata.resourceVersion && v.metadata.resourceVersion !== cur.metadata.resourceVersion)
    throw new OutpostError(
      'conflict',
      `${v.kind} ${project}/${name} was changed by someone else (resourceVersion ${v.metadata.resourceVersion} is stale)`,
    );
  const specChanged = !cur || JSON.stringify(cur.spec) !== JSON.stringify(v.spec);
  const object = {
    ...v,
    metadata: {
      ...v.metadata,
      uid: cur?.metadata.uid ?? '',
      resourceVersion: cur?.metadata.resourceVersion ?? '',
      generation: (cur?.metadata.generation ?? 0) + (specChanged ? 1 : 0),
      creationTimestamp: cur?.metadata.creationTimestamp ?? new Date().toISOString(),
    },
    ...(cur?.status !== undefined ? { status: cur.status } : {}),
  } as Resource;
  return { object, action: cur ? ('configured' as const) : ('created' as const), warnings: [] };
}

export function kubeApiDeps(deps: HubDeps): KubeApiDeps {
  const { objects, db } = deps;
  const kube = sqlKubeApiState(db);
  const commits: (() => void)[] = [];
  recordChanges(deps, kube, commits);
  return {
    version: deps.version,
    verifyToken: (t) => deps.auth.verifyApiToken(t),
    hold: (p, close) => deps.auth.hold(p, close),
    watch: { events: kube, onCommit: (fn) => commits.push(fn) },
    objects: {
      get: (kind, project, name) => objects.get(kind, project, name),
      list: (kind, project, opts) => objects.list(kind, project, opts),
      projects: () => deps.state.objects.projects(),
      resourceVersion: () => String(deps.state.objects.lastResourceVersion()),
      write(obj, { managedFields, dryRun: dry, ...opts }) {
        if (dry) {
          const r = dryRun(deps, obj, opts);
          return { ...r, managedFields: managedFields?.(r.object) };
        }
        return transaction(db, () => {
          const r = objects.apply(obj, opts);
          if (r.object.kind === 'DataObject') checkDataPaths(db, objects, [r.object]);
          const warnings = r.object.kind === 'Placement' ? checkPlacements(db, objects, [r.object]) : [];
          const mf = managedFields?.(r.object);
          const { kind, metadata } = r.object;
          if (mf) kube.setManagedFields(kind, metadata.project, metadata.name, mf);
          return { ...r, warnings, managedFields: mf };
        });
      },
      validate: (input) => validateResource(input),
      managedFields: (kind, project, name) =>
        kube.managedFields(kind, project, name) as ManagedFieldsEntry[] | undefined,
      delete(kind, project, name, opts) {
        if (!opts.dryRun) return objects.delete(kind, project, name, opts.actor);
        const cur = objects.get(kind, project, name);
        if (!cur) throw new OutpostError('not_found', `${kind} ${project}/${name} not found`);
        return cur;
      },
      present: (o) => withStatus(deps, o),
    },
  };
}
