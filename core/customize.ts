/**
 * @module Per-edge customization of a workload's manifests, local overrides, and the content hash.
 *
 * `customize` runs on the hub for each (placement, workload, edge): the placement's rules are
 * applied in order (JSON merge patch, then `set` operations), then templates in string values are
 * rendered against the edge. Rendering comes last so patches and set values may hold templates.
 * A template that refers to something the edge lacks is an error for that edge only: the edge is
 * told (spec `error`) and applies nothing, rather than running a container with an empty value.
 *
 * Templates, in string values only (never keys):
 *   {{ edge.name }}   {{ edge.labels.region }}   {{ edge.labels.example.com/tier }}
 *   {{ edge.labels["example.com/tier"] }}   {{ edge.annotations.KEY }}   {{ "{{" }} (literal text)
 * The result is always a string: `"{{ edge.labels.replicas }}"` stays `"3"`, never the number 3.
 *
 * Local overrides (`outpost edge local override W --set PATH=VALUE`) use one of two key forms:
 *   - `Kind/name:dotted.path`, e.g. `Deployment/web:spec.replicas`: sets the path on that manifest
 *     (kind compared case-insensitively), creating missing parents.
 *   - `dotted.path`, e.g. `spec.replicas`: sets the path on every manifest in which the field
 *     already exists. If none has it and the workload has a single manifest, on that one. A plain
 *     path never adds a field to several manifests at once, because `spec.replicas` would then
 *     land on the Service beside the Deployment too.
 * An override that matches no manifest or cannot be set is skipped and reported in `problems`,
 * so a hub update that moves a field does not stop the rest of the workload from applying.
 */
import { createHash } from 'node:crypto';
import { MAX_RENDERED_WORKLOAD_BYTES } from './limits.js';
import { formatIssues, Manifest, type CustomizationRule } from './resources.js';
import { matchesSelector } from './selector.js';

export interface EdgeContext {
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export type CustomizeResult = { manifests: Manifest[] } | { error: string };

type Path = (string | number)[];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Assigns an own property even for keys like `__proto__`, which plain assignment would turn into a prototype change. */
function put(obj: Record<string, unknown> | unknown[], key: string | number, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function clone<T>(v: T): T {
  if (Array.isArray(v)) return v.map(clone) as T;
  if (isObject(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) put(out, k, clone(x));
    return out as T;
  }
  return v;
}

/** `manifests[0].spec.containers[0].env[1].value`; keys that are not identifiers in brackets. */
export function formatPath(path: Path): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(p)) out += out ? `.${p}` : p;
    else out += `[${JSON.stringify(p)}]`;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// JSON merge patch and set

/** RFC 7386 JSON merge patch: null deletes, objects merge, everything else (arrays too) replaces. Pure. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  const out: Record<string, unknown> = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else put(out, k, mergePatch(Object.hasOwn(out, k) ? out[k] : undefined, v));
  }
  return out;
}

function parseDotted(path: string): string[] {
  const segs = path.split('.');
  if (path === '' || segs.some((s) => s === ''))
    throw new Error(`invalid path "${path}": use a dotted path such as spec.replicas or spec.containers.0.image`);
  return segs;
}

const kindOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'a list' : `a ${typeof v}`);

/**
 * Returns a copy of `obj` with the dotted `path` set to `value`. Numeric segments index lists
 * (the index may be one past the end to append); missing parents are created, as a list when
 * the next segment is numeric. Throws an Error naming the path when it runs into a scalar.
 */
export function applySet<T>(obj: T, path: string, value: unknown): T {
  const segs = parseDotted(path);
  const root = clone(obj) as unknown;
  if (!isObject(root) && !Array.isArray(root))
    throw new Error(`cannot set "${path}": the target is ${kindOf(root)}, not an object`);
  let cur: Record<string, unknown> | unknown[] = root;
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i];
    const here = segs.slice(0, i).join('.') || 'the manifest';
    let key: string | number = seg;
    if (Array.isArray(cur)) {
      if (!/^\d+$/.test(seg))
        throw new Error(
          `cannot set "${path}": ${here} is a list; use a numeric index such as ${segs.slice(0, i).join('.')}.0`,
        );
      key = Number(seg);
      if (key > cur.length)
        throw new Error(`cannot set "${path}": index ${key} is past the end of ${here} (${cur.length} items)`);
    }
    if (i === segs.length - 1) {
      put(cur, key, clone(value));
      break;
    }
    const existing = Object.hasOwn(cur, key) ? (cur as Record<string | number, unknown>)[key] : undefined;
    let next: unknown = existing;
    if (existing === undefined || existing === null) {
      next = /^\d+$/.test(segs[i + 1]) ? [] : {};
      put(cur, key, next);
    } else if (!isObject(existing) && !Array.isArray(existing)) {
      throw new Error(`cannot set "${path}": ${segs.slice(0, i + 1).join('.')} is ${kindOf(existing)}, not an object`);
    }
    cur = next as Record<string, unknown> | unknown[];
  }
  return root as T;
}

function hasPath(obj: unknown, segs: string[]): boolean {
  let cur = obj;
  for (const seg of segs) {
    if (Array.isArray(cur) && /^\d+$/.test(seg)) cur = cur[Number(seg)];
    else if (isObject(cur) && Object.hasOwn(cur, seg)) cur = cur[seg];
    else return false;
  }
  return cur !== undefined;
}

// ---------------------------------------------------------------------------------------------
// Templates

// A `{{ ... }}` whose body may hold quoted strings containing braces.
const TEMPLATE = /\{\{((?:"[^"]*"|'[^']*'|[^"'}]|\}(?!\}))*)\}\}/g;
const PROPERTY = /^edge\.(labels|annotations)(?:\.([^\s"'[\]{}]+)|\[\s*(?:"([^"]*)"|'([^']*)')\s*\])$/;
const TEMPLATE_HINT =
  'use {{ edge.name }}, {{ edge.labels.KEY }}, {{ edge.labels["example.com/key"] }} or {{ edge.annotations.KEY }}; write {{ "{{" }} for literal braces';

function evalExpression(raw: string, edge: EdgeContext): { value: string } | { error: string } {
  const expr = raw.trim();
  if (expr === 'edge.name') return { value: edge.name };
  const lit = /^"([^"]*)"$|^'([^']*)'$/.exec(expr);
  if (lit) return { value: lit[1] ?? lit[2] };
  const m = PROPERTY.exec(expr);
  if (!m) return { error: `unknown template expression "{{${raw}}}": ${TEMPLATE_HINT}` };
  const map = m[1] === 'labels' ? edge.labels : edge.annotations;
  const noun = m[1] === 'labels' ? 'label' : 'annotation';
  const key = m[2] ?? m[3] ?? m[4];
  if (!Object.hasOwn(map, key))
    return {
      error: `edge "${edge.name}" has no ${noun} "${key}" (add the ${noun} to the edge or change the template)`,
    };
  return { value: map[key] };
}

function renderString(s: string, edge: EdgeContext, path: Path, errors: string[]): string {
  if (!s.includes('{{')) return s;
  const where = path.length ? `${formatPath(path)}: ` : '';
  let failed = false;
  const out = s.replace(TEMPLATE, (_whole, body: string) => {
    const r = evalExpression(body, edge);
    if ('error' in r) {
      errors.push(where + r.error);
      failed = true;
      return '';
    }
    return r.value;
  });
  if (!failed && s.replace(TEMPLATE, '').includes('{{')) {
    errors.push(`${where}unclosed template in "${s}": close it with }}, or write {{ "{{" }} for literal braces`);
  }
  return out;
}

function render(v: unknown, edge: EdgeContext, path: Path, errors: string[]): unknown {
  if (typeof v === 'string') return renderString(v, edge, path, errors);
  if (Array.isArray(v)) return v.map((x, i) => render(x, edge, [...path, i], errors));
  if (isObject(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) put(out, k, render(x, edge, [...path, k], errors));
    return out;
  }
  return v;
}

/** Renders every template in `value` (deep) for one edge; the first error, with a count of the others. */
export function renderTemplates(
  value: unknown,
  edge: EdgeContext,
  path: Path = [],
): { value: unknown } | { error: string } {
  const errors: string[] = [];
  const out = render(value, edge, path, errors);
  if (errors.length === 0) return { value: out };
  return {
    error:
      errors[0] +
      (errors.length > 1 ? ` (and ${errors.length - 1} more template error${errors.length > 2 ? 's' : ''})` : ''),
  };
}

// ---------------------------------------------------------------------------------------------
// Customization

function ruleApplies(rule: CustomizationRule, edge: EdgeContext, workload: string): boolean {
  if (rule.edgeSelector !== undefined && !matchesSelector(edge.labels, rule.edgeSelector)) return false;
  return rule.workloads === undefined || rule.workloads.includes(workload);
}

function targets(rule: CustomizationRule, m: Manifest): boolean {
  const t = rule.target;
  if (!t) return true;
  return (t.kind === undefined || t.kind === m.kind) && (t.name === undefined || t.name === m.metadata?.name);
}

/**
 * The manifests of `workloadName` as `edge` must run them. Never throws and never mutates its
 * input: a problem is returned as `{ error }` with the workload, the field path and the fix.
 *
 * @example
 * customize(w.spec.manifests, { name: 'e1', labels: { region: 'eu' }, annotations: {} }, placement.spec.customization, 'web');
 */
export function customize(
  manifests: Manifest[],
  edge: EdgeContext,
  rules: CustomizationRule[],
  workloadName: string,
  /** `templates: false`: `{{ ... }}` in the manifests is left as it is (a Helm chart's rendered text). */
  opts: { templates?: boolean } = {},
): CustomizeResult {
  const prefix = `workload ${workloadName}`;
  let out = manifests.map((m) => clone(m));
  for (const [ri, rule] of rules.entries()) {
    if (!ruleApplies(rule, edge, workloadName)) continue;
    for (let mi = 0; mi < out.length; mi++) {
      if (!targets(rule, out[mi])) continue;
      let m: unknown = out[mi];
      if (rule.patch) m = mergePatch(m, rule.patch);
      for (const op of rule.set ?? []) {
        try {
          m = applySet(m, op.path, op.value);
        } catch (err) {
          return {
            error: `${prefix}: customization[${ri}] on manifests[${mi}]: ${(err as Error).message} (fix the set path in the placement)`,
          };
        }
      }
      out[mi] = m as Manifest;
    }
  }
  if (opts.templates !== false) {
    const rendered = renderTemplates(out, edge, ['manifests']);
    if ('error' in rendered) return { error: `${prefix}: ${rendered.error}` };
    out = rendered.value as Manifest[];
  }
  // A patch can delete `kind` or `metadata`; catch that here rather than on every edge's runtime.
  for (const [mi, m] of out.entries()) {
    const parsed = Manifest.safeParse(m);
    if (!parsed.success) {
      const issue = formatIssues(parsed.error, `manifests[${mi}]`)[0];
      return {
        error: `${prefix}: ${issue.path}: ${issue.message} after customization (check the placement's patch rules)`,
      };
    }
  }
  // Patches and templates can grow a workload on every edge a placement selects; what one edge
  // gets is synced in its spec document, so an oversized result is that edge's error, not a write.
  const bytes = Buffer.byteLength(JSON.stringify(out));
  if (bytes > MAX_RENDERED_WORKLOAD_BYTES)
    return {
      error: `${prefix}: ${bytes} bytes after customization for edge ${edge.name}, more than the ${MAX_RENDERED_WORKLOAD_BYTES}-byte limit of one workload on one edge (make the placement's patches smaller, or split the workload)`,
    };
  return { manifests: out };
}

// ---------------------------------------------------------------------------------------------
// Local overrides

export interface OverrideResult {
  manifests: Manifest[];
  /** One line per override that was skipped, naming it and the fix. */
  problems: string[];
}

const TARGETED = /^([A-Za-z][A-Za-z0-9]*)\/([^:/]+):(.+)$/;

/** Applies local overrides (see the module header for the key forms) and reports those that could not apply. */
export function applyOverridesDetailed(manifests: Manifest[], overrides: Record<string, unknown>): OverrideResult {
  const out = manifests.map((m) => clone(m));
  const problems: string[] = [];
  const ids = () => out.map((m) => `${m.kind}/${m.metadata?.name}`).join(', ');
  for (const [key, value] of Object.entries(overrides)) {
    const t = TARGETED.exec(key);
    const path = t ? t[3] : key;
    let segs: string[];
    try {
      segs = parseDotted(path);
    } catch (err) {
      problems.push(`override "${key}": ${(err as Error).message}`);
      continue;
    }
    let hits: number[];
    if (t) {
      hits = out.flatMap((m, i) =>
        m.kind.toLowerCase() === t[1].toLowerCase() && m.metadata?.name === t[2] ? [i] : [],
      );
      if (hits.length === 0) {
        problems.push(
          `override "${key}": the workload has no ${t[1]} named "${t[2]}" (it has ${ids() || 'no manifests'})`,
        );
        continue;
      }
    } else {
      hits = out.flatMap((m, i) => (hasPath(m, segs) ? [i] : []));
      if (hits.length === 0 && out.length === 1) hits = [0];
      if (hits.length === 0) {
        const example = out[0] ? `${out[0].kind}/${out[0].metadata?.name}:${path}` : `Kind/name:${path}`;
        problems.push(
          `override "${key}": no manifest has this field; name the manifest, e.g. "${example}" (manifests: ${ids() || 'none'})`,
        );
        continue;
      }
    }
    for (const i of hits) {
      try {
        out[i] = applySet(out[i], path, value);
      } catch (err) {
        problems.push(`override "${key}" on ${out[i].kind}/${out[i].metadata?.name}: ${(err as Error).message}`);
      }
    }
  }
  return { manifests: out, problems };
}

/** `applyOverridesDetailed` without the problem list, for callers that report problems elsewhere. */
export function applyOverrides(manifests: Manifest[], overrides: Record<string, unknown>): Manifest[] {
  return applyOverridesDetailed(manifests, overrides).manifests;
}

// ---------------------------------------------------------------------------------------------
// Content hash

/** JSON with object keys sorted at every level, so equal content always gives equal text. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? 'null' : canonicalJson(x))).join(',')}]`;
  if (isObject(v)) {
    const keys = Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** sha256 of the canonical JSON, first 16 hex characters: the driver's "did anything change" key. */
export function manifestHash(manifests: Manifest[]): string {
  return createHash('sha256').update(canonicalJson(manifests)).digest('hex').slice(0, 16);
}
