/**
 * @module The patch types a PATCH may carry and what each does to an object: JSON merge patch
 * (RFC 7386, what `kubectl apply` sends for kinds it has no Go type of, and `kubectl patch --type
 * merge`), JSON patch (RFC 6902, `--type json`). Strategic merge patch is refused with 415, as the
 * Kubernetes API does for custom resources: it needs patch strategies from Go types that
 * Outpost's kinds do not have. Server-side apply is apply.ts.
 */
import { mergePatch } from '../../core/customize.js';
import { OutpostError } from '../../core/errors.js';

export const MERGE_PATCH = 'application/merge-patch+json';
export const JSON_PATCH = 'application/json-patch+json';
export const STRATEGIC_PATCH = 'application/strategic-merge-patch+json';
export const APPLY_PATCH = 'application/apply-patch+yaml';

type Json = unknown;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function applyMergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch))
    throw new OutpostError('bad_request', 'a merge patch is a JSON object of the fields to change, null to remove one');
  return mergePatch(target, patch);
}

/** `/spec/rollout/paused` -> ['spec', 'rollout', 'paused'] (RFC 6901 escapes `~1` and `~0`). */
function pointer(p: string): string[] {
  if (p === '') return [];
  if (!p.startsWith('/')) throw new OutpostError('bad_request', `JSON patch path "${p}" must start with "/"`);
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: Json, path: string[], op: string): { parent: Record<string, Json> | Json[]; key: string } {
  let cur: Json = doc;
  for (const seg of path.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(seg)];
    else if (isObject(cur)) cur = cur[seg];
    else cur = undefined;
    if (cur === undefined)
      throw new OutpostError('invalid', `JSON patch ${op}: /${path.join('/')} has no parent in the object`);
  }
  if (!Array.isArray(cur) && !isObject(cur))
    throw new OutpostError('invalid', `JSON patch ${op}: the parent of /${path.join('/')} is not an object or list`);
  return { parent: cur, key: path[path.length - 1] };
}

function getAt(doc: Json, path: string[]): Json {
  let cur: Json = doc;
  for (const seg of path) {
    if (Array.isArray(cur)) cur = cur[Number(seg)];
    else if (isObject(cur)) cur = Object.hasOwn(cur, seg) ? cur[seg] : undefined;
    else return undefined;
  }
  return cur;
}

function index(list: Json[], key: string, forAdd: boolean, op: string): number {
  if (forAdd && key === '-') return list.length;
  const i = Number(key);
  if (!Number.isInteger(i) || i < 0 || i > list.length - (forAdd ? 0 : 1))
    throw new OutpostError('invalid', `JSON patch ${op}: index ${key} is out of range`);
  return i;
}

/** RFC 6902 on a copy of `doc`: add, remove, replace, move, copy, test. */
export function applyJsonPatch(doc: Json, ops: Json): Json {
  if (!Array.isArray(ops)) throw new OutpostError('bad_request', 'a JSON patch is a list of operations');
  let out = structuredClone(doc);
  for (const [i, raw] of ops.entries()) {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string')
      throw new OutpostError('bad_request', `JSON patch operation ${i}: needs "op" and "path"`);
    const { op } = raw;
    const path = pointer(raw.path);
    const add = (p: string[], value: Json) => {
      if (p.length === 0) {
        out = value;
        return;
      }
      const { parent, key } = parentOf(out, p, op);
      if (Array.isArray(parent)) parent.splice(index(parent, key, true, op), 0, value);
      else parent[key] = value;
    };
    const remove = (p: string[]): Json => {
      const { parent, key } = parentOf(out, p, op);
      if (Array.isArray(parent)) return parent.splice(index(parent, key, false, op), 1)[0];
      if (!Object.hasOwn(parent, key))
        throw new OutpostError('invalid', `JSON patch ${op}: ${raw.path} does not exist`);
      const v = parent[key];
      delete parent[key];
      return v;
    };
    if (op === 'add') add(path, structuredClone(raw.value));
    else if (op === 'remove') remove(path);
    else if (op === 'replace') {
      remove(path);
      add(path, structuredClone(raw.value));
    } else if (op === 'move' || op === 'copy') {
      if (typeof raw.from !== 'string') throw new OutpostError('bad_request', `JSON patch ${op}: needs "from"`);
      const from = pointer(raw.from);
      const v = op === 'move' ? remove(from) : structuredClone(getAt(out, from));
      if (v === undefined) throw new OutpostError('invalid', `JSON patch ${op}: ${raw.from} does not exist`);
      add(path, v);
    } else if (op === 'test') {
      if (JSON.stringify(getAt(out, path)) !== JSON.stringify(raw.value))
        throw new OutpostError('invalid', `JSON patch test failed: ${raw.path} is not ${JSON.stringify(raw.value)}`);
    } else throw new OutpostError('bad_request', `JSON patch operation ${i}: unknown op "${op}"`);
  }
  return out;
}
