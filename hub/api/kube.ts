/**
 * @module The Kubernetes API's dependencies (hub/k8s/deps.ts) built from the REST API's: the one
 * place that hands hub/k8s the objects as the REST API shows them (`withStatus`). Writes go the
 * REST API's way (hub/api/objects.ts `write`): the object store's apply with the placement and
 * data-path checks, in one transaction. The watches read the record of object changes
 * hub/k8s/watch-record.ts keeps (a module of the hub: hub/hub.ts).
 */
import { OutpostError } from '../../core/errors.js';
import { GLOBAL_SCOPE, type Resource } from '../../core/resources.js';
import type { HubAuth } from '../auth/contract.js';
import { checkPlacements } from '../controllers/placements.js';
import { checkDataPaths } from '../data/paths.js';
import type { ManagedFieldsEntry } from '../k8s/convert.js';
import type { KubeApiDeps } from '../k8s/deps.js';
import type { KubeWatchRecord } from '../k8s/watch-record.js';
import { validateResource } from '../objects.js';
import type { ObjectApi } from './context.js';
import { withStatus } from './objects.js';

/**
 * A dry run stores nothing and fires no hook (hooks act after commit: a rolled-back write must
 * not reach them): it validates the object, its name and its resourceVersion, and answers with
 * the object as the write would store it. Checks made at commit (a release blob present, a
 * package's admission) are not run; docs/kubernetes-api.md says so.
 */
function dryRun(deps: ObjectApi, obj: Resource, opts: { create?: boolean; update?: boolean }) {
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

export function kubeApiDeps(m: {
  version: string;
  auth: HubAuth;
  objects: ObjectApi;
  watch: KubeWatchRecord;
}): KubeApiDeps {
  const deps = m.objects;
  const { objects, state } = deps;
  const kube = state.kubeApi;
  return {
    version: m.version,
    verifyToken: (t) => m.auth.verifyApiToken(t),
    hold: (p, close) => m.auth.hold(p, close),
    watch: { events: kube, onCommit: (fn) => m.watch.onCommit(fn) },
    objects: {
      get: (kind, project, name) => objects.get(kind, project, name),
      // Namespaces are projects: the hub-wide scope (global ClusterTemplates) is not one of them.
      list: (kind, project, opts) =>
        objects.list(kind, project, opts).filter((o) => o.metadata.project !== GLOBAL_SCOPE),
      projects: () => state.objects.projects().filter((p) => p !== GLOBAL_SCOPE),
      resourceVersion: () => String(state.objects.lastResourceVersion()),
      write(obj, { managedFields, dryRun: dry, ...opts }) {
        if (dry) {
          const r = dryRun(deps, obj, opts);
          return { ...r, managedFields: managedFields?.(r.object) };
        }
        return state.transaction(() => {
          const r = objects.apply(obj, opts);
          if (r.object.kind === 'DataObject') checkDataPaths(state.edges, objects, [r.object]);
          const warnings =
            r.object.kind === 'Placement' ? checkPlacements(state.edges, objects, [r.object], state.clusters) : [];
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
