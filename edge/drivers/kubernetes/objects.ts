/**
 * @module Pure functions that turn a workload unit into the Kubernetes objects the driver applies:
 * ownership labels, namespace defaulting, apply order, the identity of an object, and no
 * outpost.dev annotations (the edge's own, ../outpost-annotations.ts).
 *
 * Namespaces: a namespaced object without `metadata.namespace` goes into `outpost-<workload>`,
 * a namespace the workload owns (labelled like its objects, deleted by `remove`). A namespace a
 * manifest names explicitly is shared: the driver creates it if it is missing but never deletes it,
 * because another workload or a person may use it too. A `Namespace` object in the manifests is an
 * ordinary owned object.
 */
import type { Manifest } from '../../../core/resources.js';
import type { WorkloadUnit } from '../driver.js';
import { withoutOutpostAnnotations } from '../outpost-annotations.js';

export const LABEL_WORKLOAD = 'outpost.dev/workload';
export const LABEL_HASH = 'outpost.dev/hash';
export const LABEL_GENERATION = 'outpost.dev/generation';
/** Marks a namespace the driver created for a manifest that named it; such namespaces are never deleted. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const FIELD_MANAGER = 'outpost';
/** A second field manager for restarts, so the next apply by `outpost` does not remove the annotation (and roll again). */
export const RESTART_FIELD_MANAGER = 'outpost-restart';
export const RESTARTED_AT = 'outpost.dev/restartedAt';

export type KObj = Record<string, any> & {
  apiVersion: string;
  kind: string;
  metadata: Record<string, any> & { name: string; namespace?: string; labels?: Record<string, string> };
};

/** Kinds the driver lists to find and prune owned objects, in apply order. Other kinds applied by a unit are remembered in the data dir. */
export const BASE_KINDS: { apiVersion: string; kind: string }[] = [
  { apiVersion: 'v1', kind: 'Namespace' },
  { apiVersion: 'v1', kind: 'Secret' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'v1', kind: 'Pod' },
];

/**
 * Cluster-scoped kinds. The driver decides namespacing without a discovery round trip per object;
 * an unlisted cluster-scoped kind would be sent with a namespace and rejected by the API server,
 * which shows up as a Failed workload naming the object.
 */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'Node',
  'PersistentVolume',
  'StorageClass',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PriorityClass',
  'IngressClass',
  'RuntimeClass',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'APIService',
  'CSIDriver',
]);

const APPLY_ORDER = [
  'Namespace',
  'CustomResourceDefinition',
  'ServiceAccount',
  'Secret',
  'ConfigMap',
  'PersistentVolumeClaim',
  'Service',
];
const POD_TEMPLATE_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job']);

export const isNamespaced = (kind: string): boolean => !CLUSTER_SCOPED.has(kind);
export const defaultNamespace = (workload: string): string => `outpost-${workload}`;
export const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.split('/')[0] : '');

/** Identity across API versions of one kind: `apps/Deployment/ns/name`. */
export function identity(o: {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}): string {
  return `${groupOf(o.apiVersion)}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** The key users see in observations (driver.ts): `Kind/name`, with the namespace when it is not the default one. */
export function objectKey(
  o: { kind: string; metadata: { name: string; namespace?: string } },
  workload: string,
): string {
  const ns = o.metadata.namespace;
  return ns && ns !== defaultNamespace(workload)
    ? `${o.kind}/${ns}/${o.metadata.name}`
    : `${o.kind}/${o.metadata.name}`;
}

export interface PreparedUnit {
  /** Objects in apply order, labelled and namespaced. */
  objects: KObj[];
  /** The workload's own namespace, when some object lands in it. */
  ownNamespace?: KObj;
  /** Namespaces named by manifests that must exist (created if missing, never deleted). */
  sharedNamespaces: string[];
}

export function ownershipLabels(unit: Pick<WorkloadUnit, 'name' | 'hash' | 'generation'>): Record<string, string> {
  return { [LABEL_WORKLOAD]: unit.name, [LABEL_HASH]: unit.hash, [LABEL_GENERATION]: String(unit.generation) };
}

export function prepare(unit: WorkloadUnit): PreparedUnit {
  const labels = ownershipLabels(unit);
  const own = defaultNamespace(unit.name);
  const declared = new Set(unit.manifests.filter((m) => m.kind === 'Namespace').map((m) => m.metadata.name));
  const shared = new Set<string>();
  let usesOwn = false;
  const objects = unit.manifests.map((m: Manifest) => {
    // The edge consumed its outpost.dev annotations (../outpost-annotations.ts); the cluster gets the
    // rest, and drift compares against this, so their absence on the live objects is no drift.
    const o = structuredClone(withoutOutpostAnnotations(m)) as KObj;
    o.metadata.labels = { ...(o.metadata.labels ?? {}), ...labels };
    if (isNamespaced(o.kind)) {
      if (!o.metadata.namespace) {
        o.metadata.namespace = own;
        usesOwn = true;
      } else if (!declared.has(o.metadata.namespace)) shared.add(o.metadata.namespace);
    } else delete o.metadata.namespace;
    // Only the workload label goes on pod templates: with the hash or generation there, any change
    // to the unit (a ConfigMap, a replica count) would roll every Deployment's pods.
    if (POD_TEMPLATE_KINDS.has(o.kind) && o.spec?.template) {
      o.spec.template.metadata ??= {};
      o.spec.template.metadata.labels = { ...(o.spec.template.metadata.labels ?? {}), [LABEL_WORKLOAD]: unit.name };
    }
    return o;
  });
  const rank = (k: string): number => (APPLY_ORDER.includes(k) ? APPLY_ORDER.indexOf(k) : APPLY_ORDER.length);
  objects.sort((a, b) => rank(a.kind) - rank(b.kind));
  shared.delete(own);
  const ownNamespace =
    usesOwn && !declared.has(own)
      ? { apiVersion: 'v1', kind: 'Namespace', metadata: { name: own, labels } }
      : undefined;
  return { objects, ownNamespace, sharedNamespaces: [...shared].sort() };
}
