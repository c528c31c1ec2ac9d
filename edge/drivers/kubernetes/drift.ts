/**
 * @module Drift: where a live object the driver manages no longer matches what it applied, found
 * with server-side apply's managed fields (as Fleet and Flux do).
 *
 * A field of the applied object whose live value differs (or is gone) counts as drift when the
 * field manager `outpost` no longer owns it: an Update by anyone else (`kubectl edit`, `kubectl
 * scale`, a merge patch) moves the ownership of the fields it changes to its own manager, and a
 * forced apply by another manager takes them too. A differing value that `outpost` still owns is
 * the API server's own doing (a default, a normalized quantity), not drift. A deleted object is
 * drift too. The driver applies again (with force, taking the fields back) on its next pass.
 *
 * Paths read like `spec.template.spec.containers[app].env[GREETING].value`: list items with a
 * `name` are named, other list items numbered.
 */
import { FIELD_MANAGER, type KObj } from './objects.js';

export interface Drift {
  /** Dotted field path, or '' for a deleted object. */
  path: string;
  /** What changed, for the workload's message: `spec.replicas is 3, want 1 (changed by kubectl)`. */
  message: string;
}

type Fields = Record<string, any>;
type Owners = Map<string, Fields | undefined>;

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Empty lists and maps, and null, are dropped by the API server: the same as no value. */
const blank = (v: unknown): boolean =>
  v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (isObj(v) && Object.keys(v).length === 0);

function same(a: unknown, b: unknown): boolean {
  if (blank(a) && blank(b)) return true;
  if (isObj(a) || Array.isArray(a)) return JSON.stringify(a) === JSON.stringify(b);
  return a === b || (a !== undefined && b !== undefined && String(a) === String(b));
}

/** A child of a fieldset node: `{}` is a leaf that owns everything under it (an atomic value). */
function child(node: Fields | undefined, key: string): Fields | undefined {
  if (node === undefined) return undefined;
  if (Object.keys(node).length === 0) return node;
  return node[key];
}

/** The `k:{...}` key of a list item whose key fields all equal the item's (or `i:N`). */
function itemKey(node: Fields | undefined, item: Record<string, any>, index: number): Fields | undefined {
  if (node === undefined) return undefined;
  if (Object.keys(node).length === 0) return node;
  for (const [k, v] of Object.entries(node)) {
    if (!k.startsWith('k:')) continue;
    try {
      const keys = JSON.parse(k.slice(2)) as Record<string, unknown>;
      if (Object.entries(keys).every(([kk, kv]) => item[kk] === undefined || same(item[kk], kv))) return v as Fields;
    } catch {
      // not a key we can read
    }
  }
  return node[`i:${index}`];
}

function mapOwners(owners: Owners, f: (n: Fields | undefined) => Fields | undefined): Owners {
  return new Map([...owners].map(([m, n]) => [m, f(n)]));
}

const show = (v: unknown): string => (v === undefined ? 'unset' : JSON.stringify(v));

function walk(want: unknown, have: unknown, path: string, owners: Owners, out: Drift[]): void {
  if (isObj(want)) {
    for (const [k, w] of Object.entries(want))
      walk(
        w,
        isObj(have) ? have[k] : undefined,
        path ? `${path}.${k}` : k,
        mapOwners(owners, (n) => child(n, `f:${k}`)),
        out,
      );
    return;
  }
  if (Array.isArray(want) && want.every(isObj) && want.length > 0) {
    const live = Array.isArray(have) ? (have as Record<string, any>[]) : [];
    want.forEach((w, i) => {
      const named = typeof w.name === 'string';
      const h = named ? live.find((x) => isObj(x) && x.name === w.name) : live[i];
      const p = `${path}[${named ? w.name : i}]`;
      if (h === undefined && !owners.get(FIELD_MANAGER)) {
        out.push({ path: p, message: `${p} was removed` });
        return;
      }
      walk(
        w,
        h,
        p,
        mapOwners(owners, (n) => itemKey(n, h ?? w, i)),
        out,
      );
    });
    return;
  }
  if (same(want, have) || owners.get(FIELD_MANAGER) !== undefined) return;
  const by = [...owners].filter(([m, n]) => m !== FIELD_MANAGER && n !== undefined).map(([m]) => m);
  out.push({
    path,
    message:
      have === undefined
        ? `${path} was removed, want ${show(want)}`
        : `${path} is ${show(have)}, want ${show(want)}${by.length ? ` (changed by ${by.join(', ')})` : ''}`,
  });
}

/**
 * How `live` drifted from `desired` (the object as the driver applies it); empty when it did not.
 * `live` undefined: the object was deleted.
 */
export function driftOf(desired: KObj, live: KObj | undefined): Drift[] {
  if (!live) return [{ path: '', message: 'deleted' }];
  const owners: Owners = new Map();
  for (const e of (live.metadata.managedFields ?? []) as Record<string, any>[]) {
    if (e.subresource === 'status') continue; // status writers own status, never what the driver applies
    const key = e.manager === FIELD_MANAGER && e.operation !== 'Apply' ? `${e.manager} (${e.operation})` : e.manager;
    owners.set(key, e.fieldsV1 ?? {});
  }
  // Without managed fields (a server that does not track them) nothing can be told apart: no drift.
  if (!owners.has(FIELD_MANAGER)) return [];
  const out: Drift[] = [];
  const { metadata, status: _status, apiVersion: _a, kind: _k, ...rest } = desired;
  const meta = { labels: metadata.labels, annotations: metadata.annotations };
  walk(
    JSON.parse(JSON.stringify(meta)),
    live.metadata,
    'metadata',
    mapOwners(owners, (n) => child(n, 'f:metadata')),
    out,
  );
  walk(rest, live, '', owners, out);
  return out;
}
