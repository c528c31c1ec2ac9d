/**
 * @module Server-side apply (`kubectl apply --server-side`, PATCH with
 * `application/apply-patch+yaml`): the applied configuration is merged into the object, the
 * fields it sets become its field manager's, fields the manager applied before and no longer
 * does are removed (unless another manager owns them too), and a field another manager owns with
 * a different value is a conflict: 409 naming the managers and fields, unless `force=true`, which
 * takes them over. Lists are atomic (managed-fields.ts).
 */
import { OutpostError } from '../../core/errors.js';
import type { KubeObject } from './convert.js';
import { GROUP_VERSION } from './kinds.js';
import {
  fieldsOf,
  formatPath,
  getAt,
  mergeApplied,
  overlaps,
  withoutField,
  type FieldSet,
  type Manager,
} from './managed-fields.js';
import { KubeError } from './status.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isEmptyObject = (v: unknown) => isObject(v) && Object.keys(v).length === 0;

/** What an apply may set besides spec: metadata name, namespace, labels, annotations, resourceVersion. */
function appliedPart(applied: Record<string, unknown>): Record<string, unknown> {
  const meta = isObject(applied.metadata) ? applied.metadata : {};
  const { status: _status, apiVersion: _a, kind: _k, metadata: _m, ...rest } = applied;
  const keep = ['name', 'namespace', 'labels', 'annotations', 'resourceVersion'];
  return { ...rest, metadata: Object.fromEntries(Object.entries(meta).filter(([k]) => keep.includes(k))) };
}

export interface ApplyResult {
  /** The object to store, in its Kubernetes form. */
  object: Record<string, unknown>;
  managers: Manager[];
}

export function serverSideApply(o: {
  current: KubeObject | undefined;
  managers: Manager[];
  applied: unknown;
  manager: string;
  force: boolean;
  now: string;
  /** The object as it would be stored (validated, defaults filled), in its Kubernetes form. */
  normalize(obj: Record<string, unknown>): unknown;
}): ApplyResult {
  if (!isObject(o.applied))
    throw new OutpostError(
      'bad_request',
      'an apply patch is a whole object (YAML or JSON) with apiVersion, kind and metadata.name',
    );
  if (o.applied.apiVersion !== GROUP_VERSION || typeof o.applied.kind !== 'string')
    throw new OutpostError('bad_request', `an apply patch names its apiVersion (${GROUP_VERSION}) and kind`);
  const applied = appliedPart(o.applied);
  const fields = fieldsOf(applied);
  const isMine = (m: Manager) => m.manager === o.manager && m.operation === 'Apply';
  const current = o.current ? { ...o.current, metadata: { ...o.current.metadata } } : undefined;

  // Fields this manager applied before and now leaves out go, unless another manager owns them.
  const before = o.managers.find(isMine)?.fields ?? new Map();
  const removable = (others: Manager[]) => {
    let base: unknown = current
      ? { ...current, metadata: { ...current.metadata, resourceVersion: undefined }, status: undefined }
      : {};
    for (const [k, p] of before) {
      if (fields.has(k)) continue;
      if (others.some((m) => [...m.fields.values()].some((q) => overlaps(p, q)))) continue;
      base = withoutField(base, p);
    }
    return base;
  };
  const merged = mergeApplied(removable(o.managers.filter((m) => !isMine(m))), applied) as Record<string, unknown>;

  // A field another manager owns that this apply changes: compared as stored (defaults filled),
  // so a default the hub filled in is no change.
  const result = o.normalize(merged);
  const conflicts: { manager: Manager; path: string[] }[] = [];
  if (current)
    for (const m of o.managers) {
      if (isMine(m)) continue;
      for (const owned of m.fields.values())
        for (const f of fields.values()) {
          if (!overlaps(owned, f)) continue;
          // An empty object applied sets nothing under it: no conflict with the fields others own there.
          if (owned.length > f.length && isEmptyObject(getAt(applied, f))) continue;
          const at = owned.length <= f.length ? owned : f;
          if (JSON.stringify(getAt(result, at)) !== JSON.stringify(getAt(current, at)))
            conflicts.push({ manager: m, path: at });
        }
    }
  if (conflicts.length && !o.force) {
    const lines = conflicts.map(
      (c) =>
        `conflict with "${c.manager.manager}"${c.manager.operation === 'Update' ? ' using ' + GROUP_VERSION : ''}: ${formatPath(c.path)}`,
    );
    throw new KubeError(
      409,
      'Conflict',
      `Apply failed with ${conflicts.length} conflict${conflicts.length === 1 ? '' : 's'}: ${lines.join('\n')}`,
      {
        causes: conflicts.map((c, i) => ({
          reason: 'FieldManagerConflict',
          message: lines[i].split(': .')[0],
          field: formatPath(c.path),
        })),
      },
    );
  }
  // Forced: the others lose the fields taken over.
  const taken = new Set(conflicts.map((c) => JSON.stringify(c.path)));
  const others = o.managers
    .filter((m) => !isMine(m))
    .map((m) => ({
      ...m,
      fields: new Map(
        [...m.fields].filter(([, p]) => ![...taken].some((t) => overlaps(p, JSON.parse(t) as string[]))),
      ) as FieldSet,
    }));
  const object = mergeApplied(removable(others), applied) as Record<string, unknown>;
  // An apply that owns the same fields as before keeps its time (an unchanged apply changes nothing).
  const mine = o.managers.find(isMine);
  const same = mine && mine.fields.size === fields.size && [...fields.keys()].every((k) => mine.fields.has(k));
  return {
    object,
    managers: [...others, { manager: o.manager, operation: 'Apply', time: same ? mine.time : o.now, fields }],
  };
}
