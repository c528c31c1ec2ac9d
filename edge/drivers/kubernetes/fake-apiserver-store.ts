/**
 * @module Object storage and write semantics of the Kubernetes API server stand-in (test support,
 * see `fake-apiserver.ts`): the resource table that discovery serves, `Status` error objects in
 * the real wire format, server-side apply with field ownership, validation of the fields the
 * Outpost driver depends on, and resourceVersion/uid/generation bookkeeping.
 *
 * Field ownership is simplified on purpose: maps are merged key by key, lists are atomic (a real
 * server merges `containers` by name). That is enough to reproduce what a driver can observe:
 * a force-apply takes ownership, an apply without force conflicts with another manager's value,
 * a field dropped from the next apply is removed unless another manager still owns it.
 */
import { createHash, randomUUID } from 'node:crypto';
import { isValidName } from '../../../core/ids.js';

export type Obj = Record<string, any>;

export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  /** Bumps metadata.generation on spec changes (controllers report observedGeneration). */
  generation: boolean;
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const RESOURCES: ResourceType[] = [
  {
    group: '',
    version: 'v1',
    kind: 'Namespace',
    plural: 'namespaces',
    singular: 'namespace',
    namespaced: false,
    shortNames: ['ns'],
    generation: false,
  },
  {
    group: '',
    version: 'v1',
    kind: 'Pod',
    plural: 'pods',
    singular: 'pod',
    namespaced: true,
    shortNames: ['po'],
    generation: false,
  },
  {
    group: '',
    version: 'v1',
    kind: 'ConfigMap',
    plural: 'configmaps',
    singular: 'configmap',
    namespaced: true,
    shortNames: ['cm'],
    generation: false,
  },
  {
    group: '',
    version: 'v1',
    kind: 'Secret',
    plural: 'secrets',
    singular: 'secret',
    namespaced: true,
    shortNames: [],
    generation: false,
  },
  {
    group: '',
    version: 'v1',
    kind: 'Service',
    plural: 'services',
    singular: 'service',
    namespaced: true,
    shortNames: ['svc'],
    generation: false,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    plural: 'deployments',
    singular: 'deployment',
    namespaced: true,
    shortNames: ['deploy'],
    generation: true,
  },
];

export const groupVersion = (r: ResourceType): string => (r.group ? `${r.group}/${r.version}` : r.version);
/** `deployments.apps`, `pods`: how the real server names a resource in messages. */
export const qualified = (r: ResourceType): string => (r.group ? `${r.plural}.${r.group}` : r.plural);

export function apiResourceList(group: string, version: string): Obj | undefined {
  const rs = RESOURCES.filter((r) => r.group === group && r.version === version);
  if (rs.length === 0) return undefined;
  const resources: Obj[] = [];
  for (const r of rs) {
    resources.push({
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: VERBS,
      shortNames: r.shortNames.length ? r.shortNames : undefined,
      storageVersionHash: createHash('sha256').update(r.kind).digest('base64').slice(0, 11),
    });
    if (r.kind === 'Pod') {
      resources.push({ name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] });
      resources.push({
        name: 'pods/exec',
        singularName: '',
        namespaced: true,
        kind: 'PodExecOptions',
        verbs: ['create', 'get'],
      });
    }
    if (r.kind !== 'ConfigMap' && r.kind !== 'Secret')
      resources.push({
        name: `${r.plural}/status`,
        singularName: '',
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: ['get', 'patch', 'update'],
      });
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources,
  };
}

// ---------------------------------------------------------------------------------------------
// Status objects (the body of every error the real API server returns)

export class ApiError extends Error {
  constructor(readonly status: Obj) {
    super(String(status.message));
  }
  get code(): number {
    return Number(this.status.code);
  }
}

export function statusError(code: number, reason: string, message: string, details?: Obj): ApiError {
  return new ApiError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  });
}

export const notFound = (r: ResourceType, name: string): ApiError =>
  statusError(404, 'NotFound', `${qualified(r)} "${name}" not found`, {
    name,
    ...(r.group ? { group: r.group } : {}),
    kind: r.plural,
  });

export function invalid(
  r: ResourceType,
  name: string,
  causes: { field: string; reason: string; message: string }[],
): ApiError {
  const text = causes.map((c) => `${c.field}: ${c.message}`).join(', ');
  const kind = r.group ? `${r.kind}.${r.group}` : r.kind;
  return statusError(422, 'Invalid', `${kind} "${name}" is invalid: ${text}`, {
    name,
    ...(r.group ? { group: r.group } : {}),
    kind: r.kind,
    causes,
  });
}

// ---------------------------------------------------------------------------------------------
// Field paths and ownership

type Path = string[];
const SERVER_METADATA = new Set([
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'deletionTimestamp',
  'selfLink',
  'ownerReferences',
]);

const isMap = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Leaf paths of an applied configuration: maps recurse, everything else is a leaf. */
export function leafPaths(o: Obj, prefix: Path = []): Path[] {
  const out: Path[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (prefix.length === 0 && (k === 'apiVersion' || k === 'kind' || k === 'status')) continue;
    if (
      prefix.length === 1 &&
      prefix[0] === 'metadata' &&
      (k === 'name' || k === 'namespace' || SERVER_METADATA.has(k))
    )
      continue;
    if (isMap(v) && Object.keys(v).length > 0) out.push(...leafPaths(v, [...prefix, k]));
    else out.push([...prefix, k]);
  }
  return out;
}

export function getPath(o: Obj, p: Path): unknown {
  let cur: unknown = o;
  for (const k of p) {
    if (!isMap(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

function setPath(o: Obj, p: Path, v: unknown): void {
  let cur = o;
  for (const k of p.slice(0, -1)) {
    if (!isMap(cur[k])) cur[k] = {};
    cur = cur[k];
  }
  cur[p[p.length - 1]] = structuredClone(v);
}

function deletePath(o: Obj, p: Path): void {
  const parents: Obj[] = [];
  let cur = o;
  for (const k of p.slice(0, -1)) {
    if (!isMap(cur[k])) return;
    parents.push(cur);
    cur = cur[k];
  }
  delete cur[p[p.length - 1]];
  // Drop maps the removal left empty, as the real server does for fields nobody sets any more.
  for (let i = p.length - 2; i >= 0; i--) {
    const parent = parents[i];
    if (isMap(parent[p[i]]) && Object.keys(parent[p[i]]).length === 0) delete parent[p[i]];
    else break;
  }
}

export const deepEqual = (a: unknown, b: unknown): boolean =>
  JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (isMap(v))
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys(v[k])]),
    );
  return v;
}

/** `["spec","replicas"]` -> `{"f:spec":{"f:replicas":{}}}`: the FieldsV1 shape kubectl shows. */
function fieldsV1(paths: Path[]): Obj {
  const root: Obj = {};
  for (const p of paths) {
    let cur = root;
    for (const k of p) cur = cur[`f:${k}`] ??= {};
  }
  return root;
}

export interface Owner {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  subresource?: string;
  paths: Path[];
}

export interface StoredObject {
  type: ResourceType;
  obj: Obj;
  owners: Owner[];
}

const key = (p: Path): string => p.join('\u0000');

export function renderManagedFields(s: StoredObject): Obj[] {
  return s.owners
    .filter((o) => o.paths.length > 0)
    .map((o) => ({
      manager: o.manager,
      operation: o.operation,
      apiVersion: o.apiVersion,
      time: o.time,
      fieldsType: 'FieldsV1',
      fieldsV1: fieldsV1(o.paths),
      ...(o.subresource ? { subresource: o.subresource } : {}),
    }));
}

export interface ApplyResult {
  obj: Obj;
  owners: Owner[];
}

/**
 * Server-side apply of `config` by `manager` over `live` (undefined when creating). Returns the
 * merged object and ownership, or throws a 409 Conflict Status naming each contested field.
 */
export function serverSideApply(
  live: StoredObject | undefined,
  config: Obj,
  manager: string,
  force: boolean,
  now: string,
): ApplyResult {
  const paths = leafPaths(config);
  const apiVersion = String(config.apiVersion);
  const owners: Owner[] = (live?.owners ?? []).map((o) => ({ ...o, paths: [...o.paths] }));
  const obj: Obj = live
    ? structuredClone(live.obj)
    : {
        apiVersion: config.apiVersion,
        kind: config.kind,
        metadata: {
          name: config.metadata.name,
          ...(config.metadata.namespace ? { namespace: config.metadata.namespace } : {}),
        },
      };
  const mine = owners.find((o) => o.manager === manager && o.operation === 'Apply' && !o.subresource);
  const others = owners.filter((o) => o !== mine);

  const conflicts: { manager: string; apiVersion: string; field: string }[] = [];
  for (const p of paths) {
    const want = getPath(config, p);
    for (const o of others) {
      const i = o.paths.findIndex((q) => key(q) === key(p));
      if (i < 0) continue;
      if (deepEqual(getPath(obj, p), want)) continue; // same value: shared ownership, no conflict
      if (force) o.paths.splice(i, 1);
      else conflicts.push({ manager: o.manager, apiVersion: o.apiVersion, field: '.' + p.join('.') });
    }
  }
  if (conflicts.length > 0) {
    const n = conflicts.length;
    const lines = conflicts.map((c) => `conflict with "${c.manager}" using ${c.apiVersion}: ${c.field}`);
    throw statusError(409, 'Conflict', `Apply failed with ${n} conflict${n > 1 ? 's' : ''}: ${lines.join('\n')}`, {
      causes: conflicts.map((c) => ({
        reason: 'FieldManagerConflict',
        message: `conflict with "${c.manager}" using ${c.apiVersion}`,
        field: c.field,
      })),
    });
  }

  const wanted = new Set(paths.map(key));
  for (const p of mine?.paths ?? []) {
    if (wanted.has(key(p))) continue;
    const ownedElsewhere = others.some((o) => o.paths.some((q) => key(q) === key(p)));
    if (!ownedElsewhere) deletePath(obj, p);
  }
  for (const p of paths) setPath(obj, p, getPath(config, p));

  const kept = others.filter((o) => o.paths.length > 0);
  const applied: Owner = { manager, operation: 'Apply', apiVersion, time: now, paths };
  return { obj, owners: mine || paths.length ? [...kept, applied] : kept };
}

/** RFC 7386 merge patch (also used for strategic merge patches: lists replace, a simplification). */
export function mergePatch(target: Obj, patch: Obj): Obj {
  const out: Obj = structuredClone(target);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (isMap(v) && isMap(out[k])) out[k] = mergePatch(out[k], v);
    else out[k] = structuredClone(v);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Validation: the rules a driver trips over in practice

const PROTECTED_LABEL_KEY = /^([a-z0-9.-]+\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

export function validate(r: ResourceType, obj: Obj, old: Obj | undefined): void {
  const name = String(obj.metadata?.name ?? '');
  const causes: { field: string; reason: string; message: string }[] = [];
  const bad = (field: string, reason: string, message: string): void => void causes.push({ field, reason, message });
  // Namespaces and Services need DNS-1123 labels; other kinds accept subdomains (dots allowed).
  const label = r.kind === 'Namespace' || r.kind === 'Service';
  if (label ? !isValidName(name) : !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(name)) {
    bad(
      'metadata.name',
      'FieldValueInvalid',
      `Invalid value: "${name}": a lowercase RFC 1123 ${label ? 'label' : 'subdomain'} must consist of lower case alphanumeric characters, '-'${label ? '' : " or '.'"}, and must start and end with an alphanumeric character`,
    );
  }
  for (const [k, v] of Object.entries((obj.metadata?.labels ?? {}) as Obj)) {
    if (!PROTECTED_LABEL_KEY.test(k))
      bad(
        `metadata.labels`,
        'FieldValueInvalid',
        `Invalid value: "${k}": name part must consist of alphanumeric characters, '-', '_' or '.'`,
      );
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v))
      bad(
        `metadata.labels`,
        'FieldValueInvalid',
        `Invalid value: "${String(v)}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.'`,
      );
  }
  const podSpec = (spec: Obj | undefined, at: string): void => {
    const cs = spec?.containers;
    if (!Array.isArray(cs) || cs.length === 0) return bad(`${at}.containers`, 'FieldValueRequired', 'Required value');
    cs.forEach((c: Obj, i: number) => {
      if (!c?.name) bad(`${at}.containers[${i}].name`, 'FieldValueRequired', 'Required value');
      if (!c?.image) bad(`${at}.containers[${i}].image`, 'FieldValueRequired', 'Required value');
    });
  };
  if (r.kind === 'Pod') {
    podSpec(obj.spec, 'spec');
    // Pod specs are immutable except container images (and a few fields a driver never sets).
    if (old && causes.length === 0) {
      const strip = (s: Obj): Obj => ({
        ...s,
        containers: (s.containers ?? []).map((c: Obj) => ({ ...c, image: undefined })),
      });
      if (!deepEqual(strip(old.spec ?? {}), strip(obj.spec ?? {})))
        bad(
          'spec',
          'FieldValueForbidden',
          'Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
        );
    }
  }
  if (r.kind === 'Deployment') {
    const sel = obj.spec?.selector?.matchLabels as Obj | undefined;
    if (!sel || Object.keys(sel).length === 0) bad('spec.selector', 'FieldValueRequired', 'Required value');
    podSpec(obj.spec?.template?.spec, 'spec.template.spec');
    const tl = (obj.spec?.template?.metadata?.labels ?? {}) as Obj;
    if (sel && Object.entries(sel).some(([k, v]) => tl[k] !== v))
      bad(
        'spec.template.metadata.labels',
        'FieldValueInvalid',
        `Invalid value: ${JSON.stringify(tl)}: \`selector\` does not match template \`labels\``,
      );
    if (old && !deepEqual(old.spec?.selector, obj.spec?.selector))
      bad(
        'spec.selector',
        'FieldValueInvalid',
        `Invalid value: ${JSON.stringify(obj.spec?.selector)}: field is immutable`,
      );
  }
  if (
    (r.kind === 'ConfigMap' || r.kind === 'Secret') &&
    old?.immutable === true &&
    (!deepEqual(old.data, obj.data) || !deepEqual(old.stringData, obj.stringData))
  ) {
    bad('data', 'FieldValueForbidden', 'Forbidden: field is immutable when `immutable` is set');
  }
  if (causes.length > 0) throw invalid(r, name, causes);
}

// ---------------------------------------------------------------------------------------------
// The store

export class ObjectStore {
  private readonly objects = new Map<string, StoredObject>();
  private rv = 1;

  static id(r: ResourceType, ns: string | undefined, name: string): string {
    return `${groupVersion(r)}/${r.plural}/${ns ?? ''}/${name}`;
  }

  nextResourceVersion(): string {
    return String(++this.rv);
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  get(r: ResourceType, ns: string | undefined, name: string): StoredObject | undefined {
    return this.objects.get(ObjectStore.id(r, ns, name));
  }

  list(r: ResourceType, ns?: string): StoredObject[] {
    return [...this.objects.values()]
      .filter((s) => s.type === r && (ns === undefined || s.obj.metadata.namespace === ns))
      .sort((a, b) =>
        `${a.obj.metadata.namespace ?? ''}/${a.obj.metadata.name}`.localeCompare(
          `${b.obj.metadata.namespace ?? ''}/${b.obj.metadata.name}`,
        ),
      );
  }

  all(): StoredObject[] {
    return [...this.objects.values()];
  }

  /**
   * Writes an object when it differs from what is stored (a no-op write keeps the resourceVersion,
   * as on a real server), filling in uid, creationTimestamp and generation. Returns the stored copy.
   */
  put(r: ResourceType, obj: Obj, owners: Owner[]): StoredObject {
    const ns = obj.metadata.namespace as string | undefined;
    const id = ObjectStore.id(r, ns, obj.metadata.name);
    const cur = this.objects.get(id);
    const next = structuredClone(obj);
    next.apiVersion = groupVersion(r);
    next.kind = r.kind;
    const md = next.metadata;
    md.uid = cur?.obj.metadata.uid ?? randomUUID();
    md.creationTimestamp = cur?.obj.metadata.creationTimestamp ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    md.resourceVersion = cur?.obj.metadata.resourceVersion;
    delete md.managedFields;
    if (r.generation) {
      const old = cur?.obj.metadata.generation ?? 0;
      const changed =
        !cur ||
        !deepEqual(
          { ...cur.obj, metadata: undefined, status: undefined },
          { ...next, metadata: undefined, status: undefined },
        );
      md.generation = changed ? old + 1 : old;
    }
    if (
      cur &&
      deepEqual(cur.obj, next) &&
      deepEqual(
        cur.owners.map((o) => o.paths),
        owners.map((o) => o.paths),
      )
    )
      return cur;
    md.resourceVersion = this.nextResourceVersion();
    const stored: StoredObject = { type: r, obj: next, owners };
    this.objects.set(id, stored);
    return stored;
  }

  delete(r: ResourceType, ns: string | undefined, name: string): StoredObject | undefined {
    const id = ObjectStore.id(r, ns, name);
    const cur = this.objects.get(id);
    if (cur) {
      this.objects.delete(id);
      this.nextResourceVersion();
    }
    return cur;
  }
}

/** The object as the API returns it: managedFields rendered from ownership. */
export function render(s: StoredObject): Obj {
  const o = structuredClone(s.obj);
  o.metadata.managedFields = renderManagedFields(s);
  return o;
}
