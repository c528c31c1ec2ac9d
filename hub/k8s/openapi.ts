/**
 * @module OpenAPI v3 for the `outpost.dev/v1alpha1` group version (`/openapi/v3` and
 * `/openapi/v3/apis/outpost.dev/v1alpha1`), generated from the zod schemas the hub validates
 * Outpost's kinds with (core/resources.ts): `kubectl explain` reads it, and kubectl's
 * `fieldValidation` check finds the parameter on each PATCH (so it lets the hub validate,
 * strictly, instead of downloading schemas to validate on the client).
 *
 * Kubernetes' extensions say what zod cannot: `x-kubernetes-group-version-kind` on each kind and
 * operation, `x-kubernetes-preserve-unknown-fields` on the objects that take any field (a
 * workload's manifests, status), and every list is atomic (`x-kubernetes-list-type`), as server-side
 * apply treats it (apply.ts).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { KIND_SCHEMAS, type Kind } from '../../core/resources.js';
import { GROUP, RESOURCES, VERSION } from './kinds.js';

const SCHEMAS: Record<Kind, z.ZodType> = KIND_SCHEMAS;

const DESCRIPTIONS: Record<Kind, string> = {
  Edge: 'An edge: a machine running the Outpost agent, enrolled with a join token (docs/edges.md).',
  Workload:
    'Kubernetes-style manifests to run on edges; every change of manifests is a new revision (docs/workloads.md).',
  Placement:
    'Which edges run which workloads (or a package), with rollout and customization rules (docs/placements.md).',
  AgentUpgrade: 'A rollout of a signed agent release to selected edges (docs/upgrades.md).',
  Registry: 'An OCI registry and its credentials, for the images of workloads (docs/images.md).',
  DataObject: 'A file delivered to selected edges at a path (docs/data.md).',
  GitRepo: 'A Git repository whose manifests the hub applies to the project, pruned by ownership (docs/gitops.md).',
  ServiceExport: "A workload's declared port, reachable from other sites through the hub (docs/interconnect.md).",
  ServiceImport: 'An export made reachable on 127.0.0.1:PORT of the selected edges (docs/interconnect.md).',
  ClusterTemplate: 'A Kubernetes distribution from signed artifacts, immutable per version (docs/clusters.md).',
  Cluster: 'A Kubernetes cluster the hub builds on edges from a template (docs/clusters.md).',
};

export const META_REF = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
const schemaName = (kind: string) => `dev.outpost.${VERSION}.${kind}`;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

type Schema = Record<string, unknown>;

/** Adds Kubernetes' extensions to a converted zod schema, in place (see the module comment). */
function kubernetesize(s: unknown): void {
  if (Array.isArray(s)) return s.forEach(kubernetesize);
  if (typeof s !== 'object' || s === null) return;
  const o = s as Schema;
  if (o.type === 'array') o['x-kubernetes-list-type'] = 'atomic';
  const ap = o.additionalProperties;
  if (o.type === 'object' && (ap === true || (typeof ap === 'object' && ap !== null && Object.keys(ap).length === 0))) {
    o['x-kubernetes-preserve-unknown-fields'] = true;
    delete o.additionalProperties;
  }
  for (const v of Object.values(o)) kubernetesize(v);
}

const OBJECT_META: Schema = {
  description: 'Standard object metadata; the namespace is the Outpost project.',
  type: 'object',
  properties: {
    name: { type: 'string', description: 'Unique within the namespace: 1-63 lower-case letters, digits or "-".' },
    namespace: { type: 'string', description: 'The Outpost project the object belongs to.' },
    labels: { type: 'object', additionalProperties: { type: 'string' }, description: 'Labels, for selectors.' },
    annotations: { type: 'object', additionalProperties: { type: 'string' } },
    resourceVersion: { type: 'string', description: 'Opaque; an update carrying a stale one gets 409 Conflict.' },
    generation: { type: 'integer', format: 'int64', description: 'Counts changes of the spec.' },
    uid: { type: 'string' },
    creationTimestamp: { type: 'string', format: 'date-time' },
    managedFields: {
      type: 'array',
      'x-kubernetes-list-type': 'atomic',
      description: 'Which field manager owns which fields (server-side apply).',
      items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
    },
  },
};

export function kindSchema(kind: Kind): Schema {
  const s = z.toJSONSchema(SCHEMAS[kind], { io: 'input', unrepresentable: 'any', target: 'openapi-3.0' }) as Schema;
  delete s.$schema;
  const props = { ...(s.properties as Record<string, Schema>) };
  props.apiVersion = { type: 'string', description: `${GROUP}/${VERSION}` };
  props.kind = { type: 'string', description: kind };
  props.metadata = ref(META_REF);
  props.spec = {
    ...props.spec,
    description: `What the ${kind} asks for; the fields are those of outpost apply (docs/api.md).`,
  };
  props.status = {
    type: 'object',
    description: 'Written by the hub (read-only: the status subresource).',
    'x-kubernetes-preserve-unknown-fields': true,
  };
  const out: Schema = {
    ...s,
    description: DESCRIPTIONS[kind],
    properties: props,
    required: ((s.required as string[]) ?? []).filter((r) => r !== 'apiVersion'),
    'x-kubernetes-group-version-kind': [{ group: GROUP, version: VERSION, kind }],
  };
  delete out.additionalProperties;
  kubernetesize(props.spec);
  return out;
}

const param = (name: string, description: string, inPath = false) => ({
  name,
  in: inPath ? 'path' : 'query',
  ...(inPath ? { required: true } : {}),
  description,
  schema: { type: 'string' },
});

const WRITE_PARAMS = [
  param('dryRun', 'All: validate without storing'),
  param('fieldManager', 'who makes the change (managed fields)'),
  param('fieldValidation', 'Strict, the only behaviour: unknown fields are refused'),
];

function operations(kind: Kind, plural: string) {
  const gvk = { group: GROUP, version: VERSION, kind };
  const body = (type = 'application/json') => ({ content: { [type]: { schema: ref(schemaName(kind)) } } });
  const answer = { 200: { description: 'OK', content: { 'application/json': { schema: ref(schemaName(kind)) } } } };
  const op = (action: string, extra: Schema = {}) => ({
    operationId: `${action}${kind}`,
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': gvk,
    responses: answer,
    ...extra,
  });
  const collection = `/apis/${GROUP}/${VERSION}/namespaces/{namespace}/${plural}`;
  const item = `${collection}/{name}`;
  return {
    [`/apis/${GROUP}/${VERSION}/${plural}`]: { get: op('list') },
    [collection]: {
      parameters: [param('namespace', 'the project', true)],
      get: op('list', {
        parameters: [
          'labelSelector',
          'fieldSelector',
          'limit',
          'continue',
          'watch',
          'resourceVersion',
          'allowWatchBookmarks',
          'timeoutSeconds',
        ].map((n) => param(n, n)),
      }),
      post: op('post', { requestBody: body(), parameters: WRITE_PARAMS }),
    },
    [item]: {
      parameters: [param('namespace', 'the project', true), param('name', 'the name', true)],
      get: op('get'),
      put: op('put', { requestBody: body(), parameters: WRITE_PARAMS }),
      patch: op('patch', {
        requestBody: {
          content: Object.fromEntries(
            ['application/merge-patch+json', 'application/json-patch+json', 'application/apply-patch+yaml'].map((t) => [
              t,
              { schema: { type: 'object' } },
            ]),
          ),
        },
        parameters: [...WRITE_PARAMS, param('force', 'server-side apply: take the fields other managers own')],
      }),
      delete: op('delete', { parameters: [param('dryRun', 'All: check without deleting')] }),
    },
    [`${item}/status`]: {
      parameters: [param('namespace', 'the project', true), param('name', 'the name', true)],
      get: op('get'),
    },
  };
}

let cached: { doc: string; hash: string } | undefined;

/** The group version's document, and its hash (the index's URLs carry it, so clients cache by it). */
export function groupVersionDocument(version: string): { doc: string; hash: string } {
  if (cached) return cached;
  const schemas: Record<string, Schema> = { [META_REF]: OBJECT_META };
  let paths: Record<string, unknown> = {};
  for (const r of RESOURCES) {
    schemas[schemaName(r.kind)] = kindSchema(r.kind);
    paths = { ...paths, ...operations(r.kind, r.plural) };
  }
  const doc = JSON.stringify({
    openapi: '3.0.0',
    info: { title: 'Outpost', version },
    paths,
    components: { schemas },
  });
  cached = { doc, hash: createHash('sha512').update(doc).digest('hex').slice(0, 64).toUpperCase() };
  return cached;
}

/** `/openapi/v3`: the group versions served, each with its document's URL. */
export function openApiIndex(version: string): unknown {
  const { hash } = groupVersionDocument(version);
  // Starting with /openapi/v3, client-go puts its own path prefix (/k8s) in front.
  return {
    paths: { [`apis/${GROUP}/${VERSION}`]: { serverRelativeURL: `/openapi/v3/apis/${GROUP}/${VERSION}?hash=${hash}` } },
  };
}
