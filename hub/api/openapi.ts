/** @module The OpenAPI document, generated from the same zod schemas the API validates with. */
import { z } from 'zod';
import {
  AgentUpgrade,
  Cluster,
  ClusterTemplate,
  DataObject,
  Edge,
  GitRepo,
  Placement,
  Project,
  Registry,
  ServiceExport,
  ServiceImport,
  Workload,
} from '../../core/resources.js';
import { KIND_PATHS } from './context.js';

function schema(s: z.ZodType): unknown {
  return z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' });
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (s: unknown) => ({ content: { 'application/json': { schema: s } } });
const errorResponse = { description: 'error', ...json(ref('Error')) };
const kinds = KIND_PATHS;

export function openApiDocument(version: string): unknown {
  const paths: Record<string, unknown> = {};
  for (const [plural, kind] of Object.entries(kinds)) {
    paths[`/api/v1/projects/{project}/${plural}`] = {
      get: {
        summary: `List ${plural}`,
        parameters: [
          { name: 'labelSelector', in: 'query', schema: { type: 'string' } },
          { name: 'limit', in: 'query', schema: { type: 'integer' } },
          { name: 'continue', in: 'query', schema: { type: 'string' } },
        ],
        responses: {
          200: {
            description: 'list',
            ...json({
              type: 'object',
              properties: { items: { type: 'array', items: ref(kind) }, continue: { type: 'string' } },
            }),
          },
          default: errorResponse,
        },
      },
      ...(kind === 'Edge'
        ? {}
        : {
            post: {
              summary: `Create a ${kind}`,
              requestBody: json(ref(kind)),
              responses: { 201: { description: 'created', ...json(ref(kind)) }, default: errorResponse },
            },
          }),
    };
    paths[`/api/v1/projects/{project}/${plural}/{name}`] = {
      get: {
        summary: `Get a ${kind} with its status`,
        responses: { 200: { description: kind, ...json(ref(kind)) }, default: errorResponse },
      },
      put: {
        summary: `Create or update a ${kind} (409 on a stale resourceVersion)`,
        requestBody: json(ref(kind)),
        responses: { 200: { description: 'updated', ...json(ref(kind)) }, default: errorResponse },
      },
      patch: {
        summary: `Change fields of a ${kind} with a JSON merge patch (RFC 7386); null removes a field`,
        requestBody: { content: { 'application/merge-patch+json': { schema: { type: 'object' } } } },
        responses: { 200: { description: 'updated', ...json(ref(kind)) }, default: errorResponse },
      },
      ...(kind === 'Edge'
        ? {}
        : {
            delete: {
              summary:
                kind === 'AgentUpgrade'
                  ? 'Delete an AgentUpgrade; the answer says what changes on its edges'
                  : `Delete a ${kind}`,
              responses: {
                200: {
                  description: 'deleted',
                  ...json({
                    type: 'object',
                    properties: {
                      deleted: {
                        type: 'object',
                        properties: { kind: { type: 'string' }, project: { type: 'string' }, name: { type: 'string' } },
                      },
                      ...(kind === 'Cluster'
                        ? {
                            deleting: {
                              type: 'object',
                              description:
                                'instead of deleted: the cluster is Deleting, its nodes tear it down, and it goes once every one has',
                              properties: {
                                kind: { type: 'string' },
                                project: { type: 'string' },
                                name: { type: 'string' },
                              },
                            },
                            object: { ...ref(kind), description: 'the Cluster as it stays meanwhile (phase Deleting)' },
                          }
                        : {}),
                      ...(kind === 'AgentUpgrade'
                        ? {
                            changes: {
                              type: 'array',
                              items: { type: 'string' },
                              description:
                                'what the delete changes on its edges, in words: which keep their version, which another AgentUpgrade takes',
                            },
                          }
                        : {}),
                    },
                  }),
                },
                default: errorResponse,
              },
            },
          }),
    };
  }
  const simple = (summary: string) => ({
    post: { summary, responses: { 200: { description: 'ok' }, default: errorResponse } },
  });
  Object.assign(paths, {
    '/api/v1/apply': {
      post: {
        summary: 'Create or update many objects; all are validated before any is changed',
        requestBody: json({
          type: 'object',
          properties: {
            objects: {
              type: 'array',
              items: {
                oneOf: [...Object.values(KIND_PATHS), 'Project'].map(ref),
              },
            },
          },
        }),
        responses: { 200: { description: 'results' }, default: errorResponse },
      },
    },
    '/api/v1/projects/{project}/workloads/{name}/revisions': {
      get: {
        summary: 'Kept revisions of a workload',
        responses: { 200: { description: 'revisions' }, default: errorResponse },
      },
    },
    '/api/v1/projects/{project}/workloads/{name}/rollback': simple('Roll a workload back to a kept revision'),
    '/api/v1/projects/{project}/placements/{name}/pause': simple('Pause a rollout'),
    '/api/v1/projects/{project}/placements/{name}/resume': simple('Resume a rollout, accepting current failures'),
    '/api/v1/projects/{project}/edges/{name}/approve': simple('Approve a pending edge'),
    '/api/v1/projects/{project}/edges/{name}/labels': simple('Set or remove labels (null removes)'),
    '/api/v1/projects/{project}/edges/{name}/drain': simple('Remove all workloads from an edge'),
    '/api/v1/projects/{project}/edges/{name}/uncordon': simple('Make a drained edge schedulable again'),
    '/api/v1/projects/{project}/edges/{name}/decommission': simple('Revoke the credential and forget the mailbox'),
    '/api/v1/projects/{project}/edges/{name}/clear-intents': simple(
      'Clear the local intents made on site for a workload',
    ),
    '/api/v1/projects/{project}/events': {
      get: { summary: 'Latest events', responses: { 200: { description: 'events' } } },
    },
    '/api/v1/enroll': simple('Enroll an edge with a join token (no bearer token)'),
    '/api/v1/tokens/join': simple('Create a join token'),
    '/api/v1/tokens/api': simple('Create an API token'),
    '/api/v1/tokens': {
      get: {
        summary: 'API and join tokens the caller administers, without their secrets (admin)',
        responses: { 200: { description: 'tokens' }, default: errorResponse },
      },
    },
    '/api/v1/tokens/{id}': {
      delete: {
        summary: 'Revoke an API or join token (admin)',
        responses: { 200: { description: 'revoked' }, default: errorResponse },
      },
    },
    '/api/v1/tokens/rotate-admin': simple(
      "Replace the hub's admin.token and revoke the old one (admin of all projects)",
    ),
    // Projects (docs/projects.md): every token reads its own, an admin of every project (*) writes them.
    '/api/v1/projects': {
      get: {
        summary: 'Projects the token can see (its own; all for a * token), each with its use against its quotas',
        responses: {
          200: {
            description: 'projects',
            ...json({ type: 'object', properties: { items: { type: 'array', items: ref('Project') } } }),
          },
          default: errorResponse,
        },
      },
      post: {
        summary: 'Create a Project (admin of every project)',
        requestBody: json(ref('Project')),
        responses: { 201: { description: 'created', ...json(ref('Project')) }, default: errorResponse },
      },
    },
    '/api/v1/projects/{project}': {
      get: {
        summary: 'Get a Project with its phase and its use against its quotas (404 for another project)',
        responses: { 200: { description: 'Project', ...json(ref('Project')) }, default: errorResponse },
      },
      put: {
        summary: 'Change a Project (admin of every project; 409 on a stale resourceVersion)',
        requestBody: json(ref('Project')),
        responses: { 200: { description: 'updated', ...json(ref('Project')) }, default: errorResponse },
      },
      patch: {
        summary: 'Change fields of a Project with a JSON merge patch (RFC 7386; admin of every project)',
        requestBody: { content: { 'application/merge-patch+json': { schema: { type: 'object' } } } },
        responses: { 200: { description: 'updated', ...json(ref('Project')) }, default: errorResponse },
      },
      delete: {
        summary:
          'Delete a Project and everything of it, in order (admin of every project); answered at once, the hub works through it (phase Terminating)',
        parameters: [
          {
            name: 'moveEdgesTo',
            in: 'query',
            description: 'the project its edges move to',
            schema: { type: 'string' },
          },
          {
            name: 'decommissionEdges',
            in: 'query',
            description: 'decommission its edges instead (one of the two is needed while it has edges)',
            schema: { type: 'boolean' },
          },
        ],
        responses: { 202: { description: 'deletion recorded', ...json(ref('Project')) }, default: errorResponse },
      },
    },
    '/api/v1/projects/{project}/fleet': {
      get: {
        summary: 'Edge counts by state, workload and placement counts',
        responses: { 200: { description: 'counts' } },
      },
    },
    '/api/v1/projects/{project}/edges-online': {
      get: {
        summary: 'Edges online over the last N hours',
        parameters: [{ name: 'hours', in: 'query', schema: { type: 'integer' } }],
        responses: { 200: { description: 'points' } },
      },
    },
    '/api/v1/projects/{project}/edges/{name}/connections': {
      get: { summary: 'Connection history of an edge', responses: { 200: { description: 'connections' } } },
    },
    '/api/v1/projects/{project}/stream': {
      get: {
        summary: 'Server-sent events on every change in the project',
        responses: { 200: { description: 'text/event-stream' } },
      },
    },
    '/api/v1/edges/{name}/proxy-session': simple(
      'A one-time link that opens a workload service in a browser through the tunnel',
    ),
    '/api/v1/edges/{name}/actions': simple('Restart, stop or start a workload on an edge'),
    '/api/v1/edges/{name}/logs/{workload}': {
      get: {
        summary: 'Workload logs from an edge, streamed',
        parameters: [
          { name: 'container', in: 'query', schema: { type: 'string' } },
          { name: 'follow', in: 'query', schema: { type: 'boolean' } },
          { name: 'tail', in: 'query', description: 'only the last N lines', schema: { type: 'integer', minimum: 0 } },
          {
            name: 'sinceSeconds',
            in: 'query',
            description: 'only lines of the last N seconds (on the edge clock); not with sinceTime',
            schema: { type: 'integer', minimum: 1, maximum: 315360000 },
          },
          {
            name: 'sinceTime',
            in: 'query',
            description: 'only lines written at or after this RFC 3339 time; not with sinceSeconds',
            schema: { type: 'string', format: 'date-time' },
          },
          {
            name: 'timestamps',
            in: 'query',
            description: 'prefix each line with its RFC 3339 time',
            schema: { type: 'boolean' },
          },
        ],
        responses: { 200: { description: 'text' }, 400: errorResponse, 503: errorResponse },
      },
    },
    '/api/v1/edges/{name}/exec/{workload}': simple('Run a command in a workload on an edge'),
    '/api/v1/edges/{name}/metrics': {
      get: {
        summary: "The edge agent's own Prometheus metrics, fetched through its tunnel (viewer or higher)",
        responses: { 200: { description: 'text/plain Prometheus exposition' }, 503: errorResponse },
      },
    },
    '/api/v1/projects/{project}/blobs': {
      get: { summary: 'List the blobs of a project', responses: { 200: { description: '{items}' } } },
      post: {
        summary: 'Upload a blob (the body is the bytes; streamed, bounded by the project quota)',
        responses: { 201: { description: 'the blob' }, 413: errorResponse },
      },
    },
    '/api/v1/projects/{project}/blobs/{digest}': {
      get: { summary: 'Download a blob (Range: bytes=N- resumes)', responses: { 200: { description: 'the bytes' } } },
      delete: { summary: 'Remove a blob (409 while referenced)', responses: { 204: { description: 'removed' } } },
    },
    '/api/v1/projects/{project}/packages': {
      get: {
        summary: 'The catalog: each package with its newest version and scan state',
        responses: { 200: { description: '{items}' } },
      },
      post: {
        summary:
          'Publish a package {digest} whose .tgz was uploaded as a blob (409 when the version exists; 413 past the archive limits)',
        responses: {
          201: { description: 'the version, Pending its scan' },
          409: errorResponse,
          413: errorResponse,
          422: errorResponse,
        },
      },
    },
    '/api/v1/projects/{project}/packages/{name}': {
      get: {
        summary: 'The versions of a package, newest first, with their scan verdicts',
        responses: { 200: { description: '{items}' }, 404: errorResponse },
      },
    },
    '/api/v1/projects/{project}/packages/{name}/{version}': {
      get: {
        summary: 'One version: package.yaml, readme, icon, scan verdict',
        responses: { 200: { description: 'the version' }, 404: errorResponse },
      },
    },
    '/api/v1/projects/{project}/placements/{name}/restart': {
      post: {
        summary: "Resolve a package placement's version range again (a new rollout when it moves)",
        responses: { 200: { description: '{deployment}' }, default: errorResponse },
      },
    },
    '/api/v1/projects/{project}/gitrepos/{name}/sync': {
      post: {
        summary: "Fetch a GitRepo's ref and apply its commit now; answers its status (docs/gitops.md)",
        responses: { 200: { description: 'the GitRepo status' }, default: errorResponse },
      },
    },
    '/api/v1/hooks/git/{project}/{name}': {
      post: {
        summary:
          'A Git push webhook (GitHub, Gitea): signed with the GitRepo webhookSecret (X-Hub-Signature-256), no bearer token; starts a sync',
        responses: { 202: { description: 'sync started' }, 401: errorResponse },
      },
    },
    '/api/v1/projects/{project}/edges/{name}/data-files': {
      get: {
        summary:
          "Files an edge's workloads exported (docs/data.md); ?workload=W, ?path=TARGET/FILE filter; the bytes are the blob of each digest",
        responses: { 200: { description: '{items: [{edge, workload, path, size, digest, modifiedAt, uploadedAt}]}' } },
      },
    },
    '/api/v1/projects/{project}/agent-releases': {
      post: {
        summary:
          'Scan the agent binary {digest} with the malware scanner, then sign its release {digest, version} with the hub release key (admin)',
        responses: {
          201: { description: 'the signed release, with the scan verdict {state: Clean, engine}' },
          default: errorResponse,
        },
      },
    },
    '/api/v1/projects/{project}/cluster-artifacts': {
      post: {
        summary:
          'Scan a cluster artifact {name, digest, version} and sign it with the hub release key for that component (admin for every project; docs/clusters.md)',
        responses: {
          201: { description: 'the signed artifact, with the scan verdict {state: Clean, engine}' },
          default: errorResponse,
        },
      },
    },
    '/api/v1/release-key': {
      get: { summary: 'The hub release public key (PEM)', responses: { 200: { description: 'PEM' } } },
    },
    '/api/v1/auth/oidc': {
      get: {
        summary: 'Whether the hub signs people in with an identity provider, and its issuer (no bearer token)',
        responses: { 200: { description: '{enabled, issuer}' } },
      },
    },
    '/api/v1/auth/oidc/device': simple(
      "Start a person's device sign-in (the CLI's): the provider's URL and code, and a handle to poll (no bearer token)",
    ),
    '/api/v1/auth/oidc/device/poll': simple(
      'Whether the person approved the device sign-in: pending, or their session token, once (no bearer token)',
    ),
    '/api/v1/auth/oidc/token': simple(
      "A person's session for an ID token of the identity provider for the hub's client (no bearer token)",
    ),
    '/api/v1/auth/logout': simple("End the calling person's session"),
    '/api/v1/whoami': {
      get: {
        summary: 'The calling token or person, and the hub replica that answered',
        responses: { 200: { description: 'principal' } },
      },
    },
    '/api/v1/replicas': {
      get: {
        summary:
          "The hub replicas: URL, alive, last heartbeat, edges served (in the token's projects), which one plans",
        responses: {
          200: {
            description: 'replicas',
            ...json({ type: 'object', properties: { items: { type: 'array', items: ref('Replica') } } }),
          },
        },
      },
    },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Outpost hub API',
      version,
      description: 'The REST API of an Outpost hub (docs/api.md).',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    // Relative: the document describes the hub it is fetched from (https://HOST:PORT).
    servers: [{ url: '/', description: 'the hub that serves this document' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Edge: schema(Edge),
        Workload: schema(Workload),
        Placement: schema(Placement),
        // Its status (per-edge progress of the rollout) is described in docs/api.md.
        AgentUpgrade: schema(AgentUpgrade),
        Registry: schema(Registry),
        // Its status (delivery per edge) is described in docs/api.md.
        DataObject: schema(DataObject),
        // Its status (core/api/views.ts GitRepoStatusView) is described in docs/gitops.md.
        GitRepo: schema(GitRepo),
        // Their status (core/api/interconnect-views.ts) is described in docs/interconnect.md.
        ServiceExport: schema(ServiceExport),
        ServiceImport: schema(ServiceImport),
        // Its status (phase, usage, deletion, remaining) is described in docs/projects.md.
        Project: schema(Project),
        ClusterTemplate: schema(ClusterTemplate),
        // Its status (core/api/views.ts ClusterStatusView) is described in docs/clusters.md.
        Cluster: schema(Cluster),
        // core/api/views.ts ReplicaView.
        Replica: {
          type: 'object',
          properties: {
            id: { type: 'string', description: 'HOST:PID:RANDOM, as in its log and connection history' },
            url: { type: 'string', description: 'its advertise URL' },
            alive: { type: 'boolean' },
            leader: { type: 'boolean', description: 'it plans the fleet' },
            self: { type: 'boolean', description: 'it answered this request' },
            startedAt: { type: 'string', format: 'date-time' },
            lastHeartbeat: { type: 'string', format: 'date-time' },
            edges: { type: 'integer', description: 'edges it serves now' },
          },
          required: ['id', 'url', 'alive', 'leader', 'self', 'startedAt', 'lastHeartbeat', 'edges'],
        },
        Error: {
          type: 'object',
          properties: {
            error: {
              type: 'object',
              properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
              required: ['code', 'message'],
            },
          },
        },
      },
    },
    security: [{ bearer: [] }],
    paths: finish(paths),
  };
}

const PARAM_DOCS: Record<string, string> = {
  project: 'the project (tenancy) of the objects',
  name: 'the name of the object (of the edge, for /edges/{name}/...)',
  workload: 'the name of a workload on the edge',
  digest: 'the blob digest, sha256:HEX',
  id: 'the token id',
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const NO_BEARER = new Set([
  '/api/v1/enroll',
  '/api/v1/hooks/git/{project}/{name}',
  '/api/v1/tls/ca.pem',
  '/healthz',
  '/readyz',
]);

/** `post /api/v1/projects/{project}/edges/{name}/drain` -> `postProjectsProjectEdgesNameDrain`. */
function operationId(method: string, path: string): string {
  const words = path
    .replace(/^\/api\/v1\//, '')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  return method + words.map((w) => w[0].toUpperCase() + w.slice(1)).join('');
}

/**
 * What every path gets so the document is lint-clean (`redocly lint`, test/openapi-lint.test.ts):
 * its `{parameters}` declared, an operationId per operation, and a 4XX error response.
 */
function finish(paths: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, item] of Object.entries(paths)) {
    const ops = { ...(item as Record<string, Record<string, unknown>>) };
    for (const m of METHODS) {
      const op = ops[m];
      if (!op) continue;
      const responses = (op.responses ?? {}) as Record<string, unknown>;
      ops[m] = {
        operationId: operationId(m, path),
        ...op,
        ...(NO_BEARER.has(path) ? { security: [] } : {}),
        responses: Object.keys(responses).some((k) => /^4/.test(k))
          ? responses
          : { ...responses, '4XX': errorResponse },
      };
    }
    const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      description: PARAM_DOCS[m[1]] ?? m[1],
      schema: { type: 'string' },
    }));
    out[path] = params.length > 0 ? { parameters: params, ...ops } : ops;
  }
  return out;
}
