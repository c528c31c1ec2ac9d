/**
 * @module Managed fields: which field manager owns which fields of an object, as Kubernetes
 * records them (`metadata.managedFields`, FieldsV1 trees such as
 * `{"f:spec":{"f:workloads":{}}}`), and the set algebra server-side apply needs. Pure functions.
 *
 * The fields of an object are its leaves under `metadata.labels`, `metadata.annotations` and
 * `spec`: a scalar, an empty object, or a list. Every list is atomic (owned whole, replaced whole),
 * as the OpenAPI document says (openapi.ts): Outpost's kinds declare no list keys.
 */
import type { ManagedFieldsEntry } from './convert.js';

export type Path = string[];
/** A set of paths, each keyed by its JSON text. */
export type FieldSet = Map<string, Path>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const MANAGED_ROOTS: Path[] = [['metadata', 'labels'], ['metadata', 'annotations'], ['spec']];

export function getAt(obj: unknown, path: Path): unknown {
  let cur = obj;
  for (const k of path) {
    if (!isObject(cur) || !Object.hasOwn(cur, k)) return undefined;
    cur = cur[k];
  }
  return cur;
}

/** The leaf fields an object (or an applied configuration) sets. */
export function fieldsOf(obj: unknown): FieldSet {
  const out: FieldSet = new Map();
  const walk = (v: unknown, path: Path) => {
    if (isObject(v) && Object.keys(v).length > 0) {
      for (const [k, x] of Object.entries(v)) walk(x, [...path, k]);
    } else out.set(JSON.stringify(path), path);
  };
  for (const root of MANAGED_ROOTS) {
    const v = getAt(obj, root);
    if (v === undefined) continue;
    if (root[0] === 'metadata' && isObject(v)) for (const [k, x] of Object.entries(v)) walk(x, [...root, k]);
    else walk(v, root);
  }
  return out;
}

/** The fields whose values differ between two versions of an object (present in one only, too). */
export function changedFields(before: unknown, after: unknown): FieldSet {
  const out: FieldSet = new Map();
  for (const [k, p] of [...fieldsOf(before), ...fieldsOf(after)])
    if (JSON.stringify(getAt(before, p)) !== JSON.stringify(getAt(after, p))) out.set(k, p);
  return out;
}

/** FieldsV1 (`{"f:spec":{"f:workloads":{}}}`) of a set. */
export function toFieldsV1(set: FieldSet): Record<string, unknown> {
  const root: Record<string, Record<string, unknown>> = {};
  for (const path of set.values()) {
    let cur: Record<string, unknown> = root;
    for (const k of path) cur = (cur[`f:${k}`] ??= {}) as Record<string, unknown>;
  }
  return root;
}

/** The set a FieldsV1 tree holds (its leaves). */
export function fromFieldsV1(tree: unknown): FieldSet {
  const out: FieldSet = new Map();
  const walk = (t: unknown, path: Path) => {
    const keys = isObject(t) ? Object.keys(t).filter((k) => k.startsWith('f:')) : [];
    if (keys.length === 0) {
      if (path.length) out.set(JSON.stringify(path), path);
      return;
    }
    for (const k of keys) walk((t as Record<string, unknown>)[k], [...path, k.slice(2)]);
  };
  walk(tree, []);
  return out;
}

/** Whether `p` lies at or under `q`, or `q` under `p` (a list owned whole overlaps its items' paths). */
export function overlaps(p: Path, q: Path): boolean {
  const n = Math.min(p.length, q.length);
  for (let i = 0; i < n; i++) if (p[i] !== q[i]) return false;
  return true;
}

export function formatPath(p: Path): string {
  return p.map((k) => (/^[A-Za-z0-9_-]+$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`)).join('');
}

/** A copy of `obj` without the field at `path` (an emptied map stays, empty). */
export function withoutField<T>(obj: T, path: Path): T {
  const out = structuredClone(obj);
  let cur: unknown = out;
  for (const k of path.slice(0, -1)) {
    if (!isObject(cur)) return out;
    cur = cur[k];
  }
  if (isObject(cur)) delete cur[path[path.length - 1]];
  return out;
}

/** `applied` merged into `base`: objects field by field, lists and scalars replaced. */
export function mergeApplied(base: unknown, applied: unknown): unknown {
  if (!isObject(base) || !isObject(applied)) return structuredClone(applied);
  const out: Record<string, unknown> = structuredClone(base);
  for (const [k, v] of Object.entries(applied))
    out[k] = Object.hasOwn(out, k) ? mergeApplied(out[k], v) : structuredClone(v);
  return out;
}

export interface Manager {
  manager: string;
  operation: 'Apply' | 'Update';
  time: string;
  fields: FieldSet;
}

export function parseManagers(entries: ManagedFieldsEntry[] | undefined): Manager[] {
  return (entries ?? []).map((e) => ({
    manager: e.manager,
    operation: e.operation,
    time: e.time,
    fields: fromFieldsV1(e.fieldsV1),
  }));
}

export function formatManagers(managers: Manager[], apiVersion: string): ManagedFieldsEntry[] {
  return managers
    .filter((m) => m.fields.size > 0)
    .map((m) => ({
      manager: m.manager,
      operation: m.operation,
      apiVersion,
      time: m.time,
      fieldsType: 'FieldsV1' as const,
      fieldsV1: toFieldsV1(m.fields),
    }));
}

/**
 * After a write that is not an apply (create, update, patch) by `manager`: it owns the fields it
 * changed, which no other manager owns any more (Kubernetes' Update operation).
 */
export function recordUpdate(
  managers: Manager[],
  manager: string,
  before: unknown,
  after: unknown,
  now: string,
): Manager[] {
  const changed = before === undefined ? fieldsOf(after) : changedFields(before, after);
  if (changed.size === 0) return managers;
  const out = managers.map((m) => ({
    ...m,
    fields: new Map([...m.fields].filter(([, p]) => ![...changed.values()].some((c) => overlaps(p, c)))),
  }));
  const mine = out.find((m) => m.manager === manager && m.operation === 'Update');
  const owned = new Map([...(mine?.fields ?? []), ...changed]);
  // Fields of the new object only: one removed by this write is owned by nobody.
  const present = fieldsOf(after);
  const kept = new Map([...owned].filter(([k]) => present.has(k)));
  const rest = out.filter((m) => m !== mine);
  return [...rest, { manager, operation: 'Update', time: now, fields: kept }];
}
