/**
 * @module Checking embedded Kubernetes manifests against the Kubernetes schemas, as `kubectl apply`
 * with strict field validation does: types, required fields and enums come from the OpenAPI
 * schemas compiled by `kubernetes-models` (Kubernetes 1.3x), unknown fields from the model type
 * map of `@kubernetes/client-node` (the OpenAPI schemas allow extra fields; the API server's
 * strict validation does not). Every problem names the field path inside the manifest.
 *
 * Kinds that are not built into Kubernetes (custom resources) are not checked: the cluster that
 * runs them owns their schema.
 */
import * as models from '@kubernetes/client-node/dist/gen/models/all.js';
import { standInSecretValues } from './secrets.js';
import { validate as configMap } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ConfigMap';
import { validate as namespace } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Namespace';
import { validate as pvc } from 'kubernetes-models/_schemas/IoK8sApiCoreV1PersistentVolumeClaim';
import { validate as pod } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Pod';
import { validate as secret } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Secret';
import { validate as service } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Service';
import { validate as serviceAccount } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ServiceAccount';
import { validate as daemonSet } from 'kubernetes-models/_schemas/IoK8sApiAppsV1DaemonSet';
import { validate as deployment } from 'kubernetes-models/_schemas/IoK8sApiAppsV1Deployment';
import { validate as replicaSet } from 'kubernetes-models/_schemas/IoK8sApiAppsV1ReplicaSet';
import { validate as statefulSet } from 'kubernetes-models/_schemas/IoK8sApiAppsV1StatefulSet';
import { validate as cronJob } from 'kubernetes-models/_schemas/IoK8sApiBatchV1CronJob';
import { validate as job } from 'kubernetes-models/_schemas/IoK8sApiBatchV1Job';
import { validate as ingress } from 'kubernetes-models/_schemas/IoK8sApiNetworkingV1Ingress';
import { validate as networkPolicy } from 'kubernetes-models/_schemas/IoK8sApiNetworkingV1NetworkPolicy';
import { validate as pdb } from 'kubernetes-models/_schemas/IoK8sApiPolicyV1PodDisruptionBudget';
import { validate as hpa } from 'kubernetes-models/_schemas/IoK8sApiAutoscalingV2HorizontalPodAutoscaler';
import { validate as role } from 'kubernetes-models/_schemas/IoK8sApiRbacV1Role';
import { validate as roleBinding } from 'kubernetes-models/_schemas/IoK8sApiRbacV1RoleBinding';
import { validate as clusterRole } from 'kubernetes-models/_schemas/IoK8sApiRbacV1ClusterRole';
import { validate as clusterRoleBinding } from 'kubernetes-models/_schemas/IoK8sApiRbacV1ClusterRoleBinding';
import { nearestName } from './suggest.js';

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
}
type Validate = ((data: unknown) => boolean) & { errors?: AjvError[] | null };

interface KindSchema {
  apiVersion: string;
  validate: Validate;
  /** The @kubernetes/client-node model whose type map lists the known fields. */
  model: string;
}

/** The built-in kinds checked here, by kind: the apiVersion they must have, their schema and model. */
const BUILT_IN: Record<string, KindSchema> = {
  Pod: { apiVersion: 'v1', validate: pod, model: 'V1Pod' },
  Service: { apiVersion: 'v1', validate: service, model: 'V1Service' },
  ConfigMap: { apiVersion: 'v1', validate: configMap, model: 'V1ConfigMap' },
  Secret: { apiVersion: 'v1', validate: secret, model: 'V1Secret' },
  PersistentVolumeClaim: { apiVersion: 'v1', validate: pvc, model: 'V1PersistentVolumeClaim' },
  ServiceAccount: { apiVersion: 'v1', validate: serviceAccount, model: 'V1ServiceAccount' },
  Namespace: { apiVersion: 'v1', validate: namespace, model: 'V1Namespace' },
  Deployment: { apiVersion: 'apps/v1', validate: deployment, model: 'V1Deployment' },
  StatefulSet: { apiVersion: 'apps/v1', validate: statefulSet, model: 'V1StatefulSet' },
  DaemonSet: { apiVersion: 'apps/v1', validate: daemonSet, model: 'V1DaemonSet' },
  ReplicaSet: { apiVersion: 'apps/v1', validate: replicaSet, model: 'V1ReplicaSet' },
  Job: { apiVersion: 'batch/v1', validate: job, model: 'V1Job' },
  CronJob: { apiVersion: 'batch/v1', validate: cronJob, model: 'V1CronJob' },
  Ingress: { apiVersion: 'networking.k8s.io/v1', validate: ingress, model: 'V1Ingress' },
  NetworkPolicy: { apiVersion: 'networking.k8s.io/v1', validate: networkPolicy, model: 'V1NetworkPolicy' },
  PodDisruptionBudget: { apiVersion: 'policy/v1', validate: pdb, model: 'V1PodDisruptionBudget' },
  HorizontalPodAutoscaler: { apiVersion: 'autoscaling/v2', validate: hpa, model: 'V2HorizontalPodAutoscaler' },
  Role: { apiVersion: 'rbac.authorization.k8s.io/v1', validate: role, model: 'V1Role' },
  RoleBinding: { apiVersion: 'rbac.authorization.k8s.io/v1', validate: roleBinding, model: 'V1RoleBinding' },
  ClusterRole: { apiVersion: 'rbac.authorization.k8s.io/v1', validate: clusterRole, model: 'V1ClusterRole' },
  ClusterRoleBinding: {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    validate: clusterRoleBinding,
    model: 'V1ClusterRoleBinding',
  },
};

/** Groups of the built-in API: a kind in one of them that is not listed above is refused, not passed as custom. */
const BUILT_IN_GROUPS = new Set(Object.values(BUILT_IN).map((k) => groupOf(k.apiVersion)));

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

export interface ManifestIssue {
  /** Inside the manifest, e.g. `spec.template.spec.containers[0].env[0].value`. */
  path: string;
  message: string;
}

const MAX_ISSUES = 20;

interface TypeMapEntry {
  baseName: string;
  type: string;
}
const MODELS = models as unknown as Record<string, { attributeTypeMap?: TypeMapEntry[] } | undefined>;

const join = (path: string, key: string | number) =>
  typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Walks `value` along the client-node type `type`, reporting fields the type does not have. */
function unknownFields(value: unknown, type: string, path: string, out: ManifestIssue[]): void {
  if (out.length >= MAX_ISSUES || value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (Array.isArray(value)) value.forEach((v, i) => unknownFields(v, array[1], join(path, i), out));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (isObject(value)) for (const [k, v] of Object.entries(value)) unknownFields(v, map[1], join(path, k), out);
    return;
  }
  const fields = MODELS[type]?.attributeTypeMap;
  if (!fields || !isObject(value)) return;
  const known = fields.map((f) => f.baseName);
  for (const [k, v] of Object.entries(value)) {
    const f = fields.find((x) => x.baseName === k);
    if (f) {
      unknownFields(v, f.type, join(path, k), out);
      continue;
    }
    const hint = nearestName(k, known);
    out.push({ path: join(path, k), message: `unknown field ${k}${hint ? `; did you mean ${hint}?` : ''}` });
  }
}

function ajvPath(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<string>((p, s) => join(p, /^\d+$/.test(s) ? Number(s) : s), '');
}

function ajvMessage(e: AjvError): ManifestIssue {
  const path = ajvPath(e.instancePath);
  const p = e.params;
  switch (e.keyword) {
    case 'required':
      return { path: join(path, String(p.missingProperty)), message: 'is required' };
    case 'type': {
      const t = Array.isArray(p.type) ? p.type.filter((x) => x !== 'null').join(' or ') : String(p.type);
      return { path, message: `must be ${/^[aeiou]/.test(t) ? 'an' : 'a'} ${t}` };
    }
    case 'enum':
      return {
        path,
        message: `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      };
    case 'oneOf':
    case 'anyOf':
      return { path, message: 'must be a number or a string (an int-or-string field)' };
    case 'format':
      return { path, message: `must be a valid ${String(p.format)}` };
    default:
      return { path, message: `fails the Kubernetes schema (${e.keyword} ${JSON.stringify(p)})` };
  }
}

/**
 * Checks one manifest against the schema of its kind. Returns the problems (empty when valid or
 * when the kind is a custom resource), each with the path inside the manifest.
 */
export function checkKubernetesManifest(m: Record<string, unknown>): ManifestIssue[] {
  const kind = typeof m.kind === 'string' ? m.kind : '';
  const apiVersion = typeof m.apiVersion === 'string' ? m.apiVersion : '';
  const schema = BUILT_IN[kind];
  if (!schema) {
    if (!BUILT_IN_GROUPS.has(groupOf(apiVersion))) return []; // a custom resource: its cluster checks it
    const hint = nearestName(kind, Object.keys(BUILT_IN));
    return [
      {
        path: 'kind',
        message: `${apiVersion} has no kind ${kind}${hint ? `; did you mean ${hint}?` : ''}`,
      },
    ];
  }
  if (apiVersion !== schema.apiVersion)
    return [{ path: 'apiVersion', message: `must be ${schema.apiVersion} for kind ${kind} (got ${apiVersion})` }];
  const out: ManifestIssue[] = [];
  unknownFields(m, schema.model, '', out);
  if (!schema.validate(m)) {
    const seen = new Set(out.map((i) => `${i.path}: ${i.message}`));
    for (const e of schema.validate.errors ?? []) {
      // anyOf/oneOf errors come with one error per alternative; the summary says it once.
      if (e.keyword === 'type' && /\/(anyOf|oneOf)\//.test((e as { schemaPath?: string }).schemaPath ?? '')) continue;
      const issue = ajvMessage(e);
      const key = `${issue.path}: ${issue.message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(issue);
    }
  }
  return out.slice(0, MAX_ISSUES);
}

/** Every manifest of a workload's `spec.manifests`, checked; paths start at `spec.manifests[i]`. */
export function checkWorkloadManifests(manifests: readonly Record<string, unknown>[]): ManifestIssue[] {
  const out: ManifestIssue[] = [];
  manifests.forEach((m, i) => {
    const name = `${String(m.kind)}/${String((m.metadata as { name?: unknown } | undefined)?.name)}`;
    for (const issue of checkKubernetesManifest(standInSecretValues(m)))
      out.push({ path: join(`spec.manifests[${i}]`, issue.path), message: `${issue.message} (in ${name})` });
  });
  return out.slice(0, MAX_ISSUES);
}
