/**
 * @module An Outpost object as Kubernetes clients see it, and back: `metadata.project` is
 * `metadata.namespace`; metadata the hub keeps no record of (finalizers, owner references,
 * generateName) is refused by name rather than dropped, so no client believes it was kept.
 */
import { OutpostError } from '../../core/errors.js';
import { hasSecretValues } from '../../core/secrets.js';
import type { Kind, Resource } from '../../core/resources.js';
import { GROUP_VERSION } from './kinds.js';

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: unknown;
  subresource?: string;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    managedFields?: ManagedFieldsEntry[];
  };
  spec?: unknown;
  status?: unknown;
}

/** A stored (and presented) Outpost object as a Kubernetes object. */
export function toKube(o: Resource, managedFields?: ManagedFieldsEntry[]): KubeObject {
  const m = o.metadata;
  return {
    apiVersion: GROUP_VERSION,
    kind: o.kind,
    metadata: {
      name: m.name,
      namespace: m.project,
      ...(m.uid ? { uid: m.uid } : {}),
      ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
      ...(m.generation !== undefined ? { generation: m.generation } : {}),
      ...(m.creationTimestamp ? { creationTimestamp: m.creationTimestamp } : {}),
      ...(Object.keys(m.labels).length ? { labels: m.labels } : {}),
      ...(Object.keys(m.annotations).length ? { annotations: m.annotations } : {}),
      ...(managedFields?.length ? { managedFields } : {}),
    },
    spec: o.spec,
    ...(o.status !== undefined ? { status: o.status } : {}),
  };
}

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

function secretValuesIn(lastApplied: string): boolean {
  try {
    const m = (JSON.parse(lastApplied) as { spec?: { manifests?: unknown } }).spec?.manifests;
    return Array.isArray(m) && hasSecretValues(m as Parameters<typeof hasSecretValues>[0]);
  } catch {
    return false;
  }
}

/** Metadata a Kubernetes client may send that the hub reads (or, for server-set fields, ignores). */
const KEPT = new Set(['name', 'labels', 'annotations', 'resourceVersion']);
const SERVER_SET = new Set(['uid', 'generation', 'creationTimestamp', 'managedFields', 'selfLink', 'namespace']);

function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || (Array.isArray(v) && v.length === 0);
}

/**
 * A Kubernetes request body as the Outpost object input hub/objects.ts validates: the URL's
 * namespace is its project (a body naming another is refused, as the Kubernetes API does), its
 * kind and apiVersion must be the URL's, status is dropped (the status subresource is the hub's).
 */
export function fromKube(body: unknown, at: { kind: Kind; namespace: string; name?: string }): Resource {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new OutpostError('bad_request', `the body is not a ${at.kind} object: send a JSON or YAML object`);
  const b = body as Record<string, unknown>;
  if (b.apiVersion !== undefined && b.apiVersion !== GROUP_VERSION)
    throw new OutpostError('bad_request', `apiVersion ${JSON.stringify(b.apiVersion)} is not ${GROUP_VERSION}`);
  if (b.kind !== undefined && b.kind !== at.kind)
    throw new OutpostError(
      'bad_request',
      `kind ${JSON.stringify(b.kind)} does not match the URL's resource (${at.kind})`,
    );
  const meta = (typeof b.metadata === 'object' && b.metadata !== null ? b.metadata : {}) as Record<string, unknown>;
  if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== at.namespace)
    throw new OutpostError(
      'bad_request',
      `the namespace of the object (${String(meta.namespace)}) does not match the namespace on the request (${at.namespace})`,
    );
  if (at.name !== undefined && meta.name !== undefined && meta.name !== at.name)
    throw new OutpostError(
      'bad_request',
      `the name of the object (${String(meta.name)}) does not match the name on the URL (${at.name})`,
    );
  const metadata: Record<string, unknown> = { project: at.namespace };
  const issues: { path: string; message: string }[] = [];
  for (const [k, v] of Object.entries(meta)) {
    if (KEPT.has(k)) metadata[k] = v;
    else if (SERVER_SET.has(k) || isEmpty(v)) continue;
    else if (k === 'project') {
      if (v !== at.namespace)
        issues.push({ path: 'metadata.project', message: `must be the namespace (${at.namespace}) or absent` });
    } else
      issues.push({
        path: `metadata.${k}`,
        message: `is not supported by the Outpost hub (docs/kubernetes-api.md, "Not served"): remove it`,
      });
  }
  const lastApplied = (metadata.annotations as Record<string, unknown> | undefined)?.[LAST_APPLIED];
  if (at.kind === 'Workload' && typeof lastApplied === 'string' && secretValuesIn(lastApplied))
    issues.push({
      path: `metadata.annotations[${LAST_APPLIED}]`,
      message:
        "holds the workload's Secret values in clear (client-side kubectl apply copies the file there), and the hub keeps Secret values sealed: use kubectl apply --server-side",
    });
  if (issues.length)
    throw new OutpostError('invalid', issues.map((i) => `${i.path}: ${i.message}`).join('; '), { details: issues });
  if (metadata.name === undefined && at.name !== undefined) metadata.name = at.name;
  const { status: _status, ...rest } = b;
  return { ...rest, apiVersion: GROUP_VERSION, kind: at.kind, metadata } as unknown as Resource;
}
