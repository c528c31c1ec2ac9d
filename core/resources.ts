/**
 * @module The resource model: Kubernetes-style objects with zod schemas, shared by hub, edge, CLI and
 * the OpenAPI document. `apiVersion: outpost.dev/v1alpha1`.
 */
import { z } from 'zod';
import { DIGEST_PATTERN, parseByteSize } from './blobs.js';
import { NAME_PATTERN } from './ids.js';
import { strict } from './strict-object.js';
import { ClusterPorts, ClusterTemplateSpec, clusterTemplateVersion, WorkerPorts } from './cluster.js';

export const API_VERSION = 'outpost.dev/v1alpha1';
export const KINDS = [
  'Edge',
  'Workload',
  'Placement',
  'Registry',
  'AgentUpgrade',
  'DataObject',
  'GitRepo',
  'ServiceExport',
  'ServiceImport',
  'ClusterTemplate',
  'Cluster',
] as const;
export type Kind = (typeof KINDS)[number];

const name = z
  .string()
  .regex(NAME_PATTERN, 'must be 1-63 lower-case letters, digits or "-", starting and ending with a letter or digit');
/** Labels the hub derives from an edge's inventory (core/inventory.ts); nobody else may set them. */
export const INVENTORY_LABEL_PREFIX = 'inventory.outpost.dev/';

/** A label key as selectors may name it (inventory labels included). */
const selectorKey = z
  .string()
  .min(1)
  .max(317)
  .regex(
    /^([a-z0-9.-]+\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/,
    'must be a label key like "region" or "example.com/tier"',
  );
/** A label key an object may carry: not under the inventory prefix. */
const labelKey = selectorKey.refine(
  (k) => !k.startsWith(INVENTORY_LABEL_PREFIX),
  `is reserved: labels under ${INVENTORY_LABEL_PREFIX} are derived by the hub from the edge's inventory (docs/inventory.md); select on them in a placement, do not set them`,
);
const labelValue = z
  .string()
  .max(63)
  .regex(
    /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/,
    'must be 63 characters or less: letters, digits, "-", "_", "."',
  );

export const Labels = z.record(labelKey, labelValue);
export type Labels = z.infer<typeof Labels>;

export const Metadata = strict({
  name,
  project: name.default('default'),
  labels: Labels.default({}),
  annotations: z.record(z.string(), z.string()).default({}),
  /** Opaque; an update that carries a stale one gets 409 Conflict. */
  resourceVersion: z.string().optional(),
  generation: z.number().int().nonnegative().optional(),
  creationTimestamp: z.string().optional(),
  /** Set by the hub; accepted back so `get -o yaml` output can be applied again. */
  uid: z.string().optional(),
});

/** An object of one kind: the envelope every kind shares (apiVersion, kind, metadata, status) around its spec. */
function objectKind<K extends string, S extends z.ZodType>(kind: K, spec: S) {
  return strict({
    apiVersion: z.literal(API_VERSION).default(API_VERSION),
    kind: z.literal(kind),
    metadata: Metadata,
    spec,
    status: z.looseObject({}).optional(),
  });
}
export type Metadata = z.infer<typeof Metadata>;

export const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

export const SelectorRequirement = strict({
  key: selectorKey,
  operator: z.enum(SELECTOR_OPERATORS, { error: () => `must be one of ${SELECTOR_OPERATORS.join(', ')}` }),
  values: z.array(labelValue).optional(),
});

export const LabelSelector = strict({
  matchLabels: z.record(selectorKey, labelValue).optional(),
  matchExpressions: z.array(SelectorRequirement).optional(),
}).superRefine((sel, ctx) => {
  sel.matchExpressions?.forEach((req, i) => {
    const needsValues = req.operator === 'In' || req.operator === 'NotIn';
    if (needsValues && (!req.values || req.values.length === 0)) {
      ctx.addIssue({
        code: 'custom',
        path: ['matchExpressions', i, 'values'],
        message: `operator ${req.operator} needs a non-empty values list`,
      });
    }
    if (!needsValues && req.values && req.values.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['matchExpressions', i, 'values'],
        message: `operator ${req.operator} takes no values; remove them`,
      });
    }
  });
});
export type LabelSelector = z.infer<typeof LabelSelector>;

/** Every object that picks edges (Placement, AgentUpgrade, DataObject, ServiceImport) needs a selector, names, or both. */
const selectsEdges = (s: { edgeSelector?: unknown; edges?: string[] | undefined }) =>
  s.edgeSelector !== undefined || (s.edges?.length ?? 0) > 0;
const SELECTS_EDGES = {
  message: 'select edges with edgeSelector ({} selects every edge), edges, or both',
  path: ['edgeSelector'],
};

/** A Kubernetes object as the edge runtime receives it. Only the envelope is checked here. */
export const Manifest = z.looseObject({
  apiVersion: z.string().min(1, 'is required, e.g. "v1" or "apps/v1"'),
  kind: z.string().min(1, 'is required, e.g. "Pod", "Deployment", "ConfigMap"'),
  metadata: z.looseObject({ name: z.string().min(1, 'is required'), namespace: z.string().optional() }),
});
export type Manifest = z.infer<typeof Manifest>;

// ---------------------------------------------------------------------------------------------
// Edge

export const EDGE_PHASES = ['Pending', 'Online', 'Offline', 'Decommissioned'] as const;
export type EdgePhase = (typeof EDGE_PHASES)[number];

/** How many ended release switches an edge keeps and reports (edge/upgrade/switch.ts). */
export const RELEASE_HISTORY_MAX = 10;

/**
 * One switch to an agent release that ended (edge/upgrade/launcher.ts): committed, or rolled back
 * with the reason (which ends with the last lines the new binary wrote on stderr, when it wrote
 * any). Times are ISO 8601 on the edge's clock.
 */
export const AgentReleaseSwitch = z.object({
  version: z.string().max(128),
  previousVersion: z.string().max(128),
  state: z.enum(['committed', 'rolled-back']),
  /** When the switch was asked for. */
  startedAt: z.string().max(64),
  /** When it committed or rolled back. */
  at: z.string().max(64),
  /** The AgentUpgrade that ordered it; absent for `outpost edge local upgrade`. */
  upgrade: z.string().max(63).optional(),
  reason: z.string().max(1024).optional(),
});
export type AgentReleaseSwitch = z.infer<typeof AgentReleaseSwitch>;

/**
 * The last switch to an agent release on an edge (edge/upgrade/switch.ts), as the edge reports it:
 * `trial` while the new binary is on trial, `committed`, or `rolled-back` with the reason; and the
 * switches that ended, newest first (at most RELEASE_HISTORY_MAX, about 12 KB at most).
 */
export const AgentReleaseState = z.object({
  version: z.string().max(128),
  state: z.enum(['trial', 'committed', 'rolled-back']),
  previousVersion: z.string().max(128),
  at: z.string().max(64),
  reason: z.string().max(1024).optional(),
  history: z.array(AgentReleaseSwitch).max(RELEASE_HISTORY_MAX).optional(),
});
export type AgentReleaseState = z.infer<typeof AgentReleaseState>;

export const Inventory = z.object({
  hostname: z.string(),
  os: z.string(),
  arch: z.string(),
  cpus: z.number().int().nonnegative(),
  memoryBytes: z.number().nonnegative(),
  runtimes: z.array(z.string()),
  driver: z.string(),
  agentVersion: z.string(),
  /** The last release switch (absent when the agent never switched). */
  agentRelease: AgentReleaseState.optional(),
  /** Hardware facts from /proc and /sys (edge/hardware.ts); absent from agents before they existed. */
  cpuModel: z.string().max(256).optional(),
  vendor: z.string().max(256).optional(),
  product: z.string().max(256).optional(),
  serial: z.string().max(256).optional(),
  disks: z
    .array(
      z.object({
        name: z.string().max(64),
        sizeBytes: z.number().nonnegative(),
        model: z.string().max(256).optional(),
        rotational: z.boolean().optional(),
        removable: z.boolean().optional(),
      }),
    )
    .max(256)
    .optional(),
  nics: z
    .array(
      z.object({
        name: z.string().max(64),
        mac: z.string().max(64).optional(),
        speedMbps: z.number().nonnegative().optional(),
        virtual: z.boolean(),
      }),
    )
    .max(256)
    .optional(),
});
export type Inventory = z.infer<typeof Inventory>;

export const EdgeSpec = strict({
  /** A drained edge keeps its connection but gets no workloads. */
  unschedulable: z.boolean().default(false),
  heartbeatSeconds: z.number().int().min(1).max(3600).optional(),
});

export const Edge = objectKind('Edge', EdgeSpec.default({ unschedulable: false }));
export type Edge = z.infer<typeof Edge>;

// ---------------------------------------------------------------------------------------------
// Workload

export const WorkloadSpec = strict({
  manifests: z.array(Manifest).min(1, 'a workload needs at least one manifest'),
});

export const Workload = objectKind('Workload', WorkloadSpec);
export type Workload = z.infer<typeof Workload>;

// ---------------------------------------------------------------------------------------------
// Placement

/** Set one field of matching manifests: `path` is dotted with numeric indexes, e.g. `spec.replicas`. */
export const SetOperation = strict({
  path: z
    .string()
    .min(1)
    .regex(
      /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/,
      'must be a dotted path such as spec.replicas or spec.containers.0.image',
    ),
  value: z.unknown(),
});

export const CustomizationRule = strict({
  /** Which edges the rule applies to; absent means all selected edges. */
  edgeSelector: LabelSelector.optional(),
  /** Which workloads; absent means all workloads of the placement. */
  workloads: z.array(name).optional(),
  /** Which manifests inside the workload; absent means all. */
  target: strict({ kind: z.string().optional(), name: z.string().optional() }).optional(),
  /** A JSON merge patch (RFC 7386) applied to each targeted manifest. */
  patch: z.record(z.string(), z.unknown()).optional(),
  set: z.array(SetOperation).optional(),
});
export type CustomizationRule = z.infer<typeof CustomizationRule>;

/**
 * A Placement's `rollout.maxUnavailable` when it names none: a quarter of its edges at a time, as a
 * Kubernetes Deployment's default, so the failure threshold can stop a bad version before it
 * reaches every site (100% would order them all at once). At least one edge (core/rollout.ts resolveMaxUnavailable).
 */
export const DEFAULT_MAX_UNAVAILABLE = '25%';

const intOrPercent = z.union([
  z.number().int().min(0),
  z.string().regex(/^\d{1,3}%$/, 'must be a number or a percentage like "25%"'),
]);

export const Rollout = strict({
  /**
   * How many selected edges may be not-ready-on-the-new-generation at once (at least 1). When not
   * given, the hub stores its project's default (a Project's spec.rollout), else 25%.
   */
  maxUnavailable: intOrPercent.optional(),
  /** Pause the rollout when this many edges fail on the new generation. */
  failureThreshold: z.number().int().min(1).default(1),
  paused: z.boolean().default(false),
  /**
   * Edges offline (or never connected since enrollment) for longer than this are left out of the
   * rollout (shown as skipped) instead of holding it Progressing: `90s`, `15m`, `1h`, `7d`.
   */
  skipOfflineAfter: z
    .string()
    .regex(/^\d+(\.\d+)?(ms|s|m|h|d)$/, 'must be a duration like 90s, 15m, 1h or 7d')
    .optional(),
  /**
   * Pre-staging (docs/drivers.md): the images of the new version move to each edge over its own
   * connection and are loaded there before the edge is switched; an edge switches only once its
   * report says every image is present.
   */
  prestage: z.boolean().optional(),
  /** Bytes the staging of this placement's images may move over one edge's link: `500MB`, `2GiB`. */
  prestageBudget: z
    .string()
    .refine((v) => {
      try {
        parseByteSize(v);
        return true;
      } catch {
        return false;
      }
    }, 'must be a size like 500MB, 2GiB or a number of bytes')
    .optional(),
});
export type Rollout = z.infer<typeof Rollout>;

/**
 * A package of the catalog to deploy (docs/catalog.md): the hub resolves `version` (a semver range)
 * once per rollout and generates the placement's workloads from it; `outpost rollout restart`
 * resolves again.
 */
export const PackageRef = strict({
  name,
  version: z.string().min(1, 'is required: a version or a semver range such as ^1.2').max(256),
  profile: name.optional(),
  /** Parameter values; secret ones are sealed by the hub at once and never shown. */
  values: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
});
export type PackageRef = z.infer<typeof PackageRef>;

export const PlacementSpec = strict({
  edgeSelector: LabelSelector.optional(),
  edges: z.array(name).optional(),
  /**
   * Clusters of the project (docs/clusters.md): each selects its control-plane edge, whose
   * kubernetes driver runs the workloads on the cluster. Besides edgeSelector and edges.
   */
  clusters: z.array(name).optional(),
  /** With `package`, the hub sets this list to the workloads it generates from the package. */
  workloads: z.array(name).default([]),
  package: PackageRef.optional(),
  customization: z.array(CustomizationRule).default([]),
  rollout: Rollout.default({ failureThreshold: 1, paused: false }),
  statusSummary: strict({ maxBroken: z.number().int().min(0).max(1000).default(10) }).default({ maxBroken: 10 }),
})
  .refine((s) => selectsEdges(s) || (s.clusters?.length ?? 0) > 0, {
    message: 'select edges with edgeSelector ({} selects every edge), edges, clusters, or several',
    path: ['edgeSelector'],
  })
  .refine((s) => s.workloads.length > 0 || s.package !== undefined, {
    message: 'name at least one workload, or deploy a package with spec.package',
    path: ['workloads'],
  });
export type PlacementSpec = z.infer<typeof PlacementSpec>;

export const Placement = objectKind('Placement', PlacementSpec);
export type Placement = z.infer<typeof Placement>;

// ---------------------------------------------------------------------------------------------
// Registry

/**
 * A container registry the edges of a project pull from (docs/drivers.md, "Registries"). The hub
 * gives an edge the credentials of a registry only when a workload it runs names an image there.
 * `credentials.password` is sealed at rest with the hub's key and shown as `<redacted>`.
 */
export const RegistrySpec = strict({
  /** `https://HOST[:PORT]` (or `http://` for a registry without TLS); images name it as `HOST[:PORT]/repo:tag`. */
  url: z
    .string()
    .regex(
      /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?\/?$/,
      'must be https://HOST[:PORT] (no path), e.g. https://registry.example.com or https://10.0.0.5:5000',
    ),
  /** The API the registry speaks: the OCI distribution API (CNCF distribution, Harbor, Docker Hub, ...). */
  kind: z
    .enum(['distribution'], { error: () => 'must be "distribution" (the OCI distribution API)' })
    .default('distribution'),
  credentials: strict({
    username: z.string().min(1, 'is required').max(256),
    password: z.string().min(1, 'is required').max(4096),
  }).optional(),
  /** PEM certificates the registry's TLS certificate is checked against (podman edges). */
  caBundle: z
    .string()
    .max(65_536)
    .regex(/-----BEGIN CERTIFICATE-----/, 'must be PEM certificates (-----BEGIN CERTIFICATE-----)')
    .optional(),
  /** Skip TLS verification (and allow http://): for a lab registry only. */
  insecure: z.boolean().default(false),
});
export type RegistrySpec = z.infer<typeof RegistrySpec>;

export const Registry = objectKind('Registry', RegistrySpec);
export type Registry = z.infer<typeof Registry>;

// ---------------------------------------------------------------------------------------------
// AgentUpgrade (docs/operations.md, "Upgrading edges from the hub")

const duration = z.string().regex(/^\d+(\.\d+)?(ms|s|m|h)$/, 'must be a duration like 90s, 2m or 1h');
const SCOPE_PATTERN = new RegExp(`^\\*$|${NAME_PATTERN.source}`);

/** The signed release as `outpost agent push` prints it (core/release.ts checks the signature). */
export const AgentUpgradeRelease = strict({
  /** The project whose edges may run it, or `*` (signed: docs/security.md, "Agent releases"). */
  scope: z
    .string({
      error:
        'is required: the project the release was signed for, or "*"; a release without one was signed by a hub from before releases were bound to a project: push the binary again with `outpost agent push`',
    })
    .regex(SCOPE_PATTERN, 'must be a project name or "*" (every project), as `outpost agent push` prints it'),
  version: z.string().regex(/^[0-9A-Za-z][0-9A-Za-z.+_-]{0,99}$/, 'must be the version the binary reports, e.g. 0.2.0'),
  digest: z.string().regex(DIGEST_PATTERN, 'must be sha256: and 64 hex digits, as `outpost agent push` prints it'),
  size: z.number().int().min(1),
  signature: z.string().regex(/^[A-Za-z0-9+/=]{40,200}$/, 'must be the base64 signature `outpost agent push` prints'),
});

export const AgentUpgradeRollout = strict({
  /** How many selected edges may be switching (or failed, unacknowledged) at once. */
  maxUnavailable: intOrPercent.default(1),
  /** Stop starting new edges once this many rolled back or could not take the release. */
  failureThreshold: z.number().int().min(1).default(1),
  /** How long the new binary has to connect and reconcile before the edge rolls back. */
  deadline: duration.default('2m'),
  paused: z.boolean().default(false),
});
export type AgentUpgradeRollout = z.infer<typeof AgentUpgradeRollout>;

export const AgentUpgradeSpec = strict({
  release: AgentUpgradeRelease,
  edgeSelector: LabelSelector.optional(),
  edges: z.array(name).optional(),
  /**
   * Edges refuse a release older (semver) than the version they run or committed unless this says
   * so: going back is a decision, never the effect of an old release applied again.
   */
  allowDowngrade: z.boolean().optional(),
  rollout: AgentUpgradeRollout.default({ maxUnavailable: 1, failureThreshold: 1, deadline: '2m', paused: false }),
}).refine(selectsEdges, SELECTS_EDGES);
export type AgentUpgradeSpec = z.infer<typeof AgentUpgradeSpec>;

export const AgentUpgrade = objectKind('AgentUpgrade', AgentUpgradeSpec);
export type AgentUpgrade = z.infer<typeof AgentUpgrade>;

// ---------------------------------------------------------------------------------------------
// DataObject (docs/data.md, "Data to the sites")

/** A relative file path under the edge's objects directory: segments without `.`/`..`, bounded. */
export function isObjectPath(p: unknown): p is string {
  if (typeof p !== 'string' || p.length === 0 || p.length > 512 || p.includes('\0') || p.startsWith('/')) return false;
  return p.split('/').every((seg) => seg.length > 0 && seg !== '.' && seg !== '..' && !seg.startsWith('.'));
}

const instant = z.iso.datetime({ offset: true, error: 'must be a time like 2026-12-01T06:00:00Z' });

/**
 * A file the hub delivers to the edges it selects: one blob of the project, written on each edge
 * at `DATA/data/objects/PATH` atomically (the previous version stays until the new one is
 * complete). A new `version` (another digest) supersedes the old on every edge.
 */
export const DataObjectSpec = strict({
  /** The version edges report (`delivered v2`); `outpost data publish` counts v1, v2, ... */
  version: z.string().regex(/^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/, 'must be a version like v2 or 2026.11.25'),
  digest: z.string().regex(DIGEST_PATTERN, 'must be sha256: and 64 hex digits, as `outpost blob push` prints it'),
  size: z.number().int().min(0),
  /** Where the file lands under the edge's objects directory (default: the object's name). */
  path: z
    .string()
    .refine(isObjectPath, 'must be a relative path without ".", ".." or hidden segments, e.g. models/detector.onnx')
    .optional(),
  edgeSelector: LabelSelector.optional(),
  edges: z.array(name).optional(),
  /** Edges may download before; the file replaces the previous version at this time (edge's clock). */
  activateAt: instant.optional(),
  /** The file is removed from every edge at this time, even from edges offline then. */
  expiresAt: instant.optional(),
})
  .refine(selectsEdges, SELECTS_EDGES)
  .refine((s) => !s.activateAt || !s.expiresAt || Date.parse(s.expiresAt) > Date.parse(s.activateAt), {
    message: 'must be after activateAt',
    path: ['expiresAt'],
  });
export type DataObjectSpec = z.infer<typeof DataObjectSpec>;

export const DataObject = objectKind('DataObject', DataObjectSpec);
export type DataObject = z.infer<typeof DataObject>;

// ---------------------------------------------------------------------------------------------
// GitRepo (docs/gitops.md, "Git as a source")

/** The annotation naming the GitRepo an object was applied from (its project is the object's). */
export const GIT_REPO_ANNOTATION = 'outpost.dev/git-repo';
/** The annotation naming the file (and line) of the GitRepo's commit an object came from. */
export const GIT_SOURCE_ANNOTATION = 'outpost.dev/git-source';

/** A branch or tag name: no leading "-" (it would read as an option), no "..", no spaces. */
const gitRefName = z
  .string()
  .max(255)
  .regex(/^[A-Za-z0-9_][A-Za-z0-9._\/-]*$/, 'must be a branch or tag name such as main or v1.2.0')
  .refine((r) => !r.includes('..') && !r.endsWith('.lock') && !r.endsWith('/'), 'is not a valid Git ref name');
/** A path glob inside the repository: relative, `*`, `**`, `?`; no "..". */
const gitPathGlob = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[A-Za-z0-9_*?.{},\/-]+$/, 'must be a relative path or glob such as edges/**/*.yaml')
  .refine((p) => !p.startsWith('/') && !p.split('/').includes('..'), 'must be relative, without ".."');
const HTTP_URL = /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?(\/[^\s?#]*)?$/;
const SSH_URL =
  /^(ssh:\/\/[A-Za-z0-9._-]+@[A-Za-z0-9.-]+(:\d{1,5})?\/[^\s]*|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[A-Za-z0-9._~][^\s]*)$/;

/**
 * A GitRepo interval in ms (the regex above allows only these units). Not core/durations.ts
 * parseDuration: that module's imports would pull Node types into the UI's build of this file.
 */
function intervalMs(d: string): number {
  const m = /^(\d+)(ms|s|m|h)$/.exec(d);
  return m ? Number(m[1]) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'] : 0;
}

/**
 * A Git repository the hub fetches and applies objects from (in the spirit of Fleet's GitRepo).
 * `credentials.password`, `credentials.sshPrivateKey` and `webhookSecret` are sealed at rest with
 * the hub's key and shown as `<redacted>`, as a Registry's password is.
 */
export const GitRepoSpec = strict({
  /** https://HOST/PATH (http:// only with `insecure`), ssh://USER@HOST/PATH or USER@HOST:PATH. */
  repo: z
    .string()
    .max(2048)
    .refine(
      (u) => !/^[a-z+]+:\/\/[^/]*@/.test(u) || u.startsWith('ssh://'),
      'must not carry credentials: put them in spec.credentials (a URL is shown everywhere)',
    )
    .refine(
      (u) => HTTP_URL.test(u) || SSH_URL.test(u),
      'must be https://HOST/PATH, ssh://USER@HOST/PATH or USER@HOST:PATH, e.g. https://git.example.com/ops/fleet.git',
    ),
  branch: gitRefName.optional(),
  tag: gitRefName.optional(),
  commit: z
    .string()
    .regex(/^[0-9a-f]{40}$/, 'must be a full commit id (40 lower-case hex digits)')
    .optional(),
  /** Globs of the files to apply; a directory stands for its .yaml, .yml and .json files below it. */
  paths: z.array(gitPathGlob).min(1).max(64).default(['.']),
  /** How often the hub fetches (at least 10s). */
  interval: z
    .string()
    .regex(/^\d+(ms|s|m|h)$/, 'must be a duration like 30s, 5m or 1h')
    .refine((d) => intervalMs(d) >= 10_000, 'must be at least 10s')
    .default('1m'),
  /** Stop fetching and applying (a webhook or `outpost gitrepo sync` is refused while paused). */
  paused: z.boolean().default(false),
  credentials: strict({
    /** For HTTPS: the user name the token goes with (`git`, `x-access-token`, `oauth2`...). */
    username: z.string().min(1).max(256).optional(),
    /** For HTTPS: a token or password. */
    password: z.string().min(1).max(4096).optional(),
    /** For SSH: a private key (OpenSSH PEM), without a passphrase. */
    sshPrivateKey: z.string().min(1).max(16_384).optional(),
    /** For SSH: the server's host keys as a known_hosts file holds them (required with a key: no trust on first use). */
    knownHosts: z.string().min(1).max(65_536).optional(),
  })
    .refine((c) => (c.password === undefined) !== (c.sshPrivateKey === undefined), {
      message: 'give password (HTTPS) or sshPrivateKey (SSH), exactly one',
    })
    .refine((c) => c.sshPrivateKey === undefined || c.knownHosts !== undefined, {
      message: 'an SSH key needs knownHosts (the server host keys, as `ssh-keyscan HOST` prints them)',
      path: ['knownHosts'],
    })
    .optional(),
  /** The secret GitHub/Gitea sign their push webhooks with (X-Hub-Signature-256: HMAC-SHA256). */
  webhookSecret: z.string().min(16, 'must be at least 16 characters').max(256).optional(),
  /** Allow credentials over http:// (sent in clear): for a lab server only. */
  insecure: z.boolean().default(false),
})
  .refine((s) => [s.branch, s.tag, s.commit].filter((x) => x !== undefined).length === 1, {
    message: 'give exactly one of branch, tag or commit',
    path: ['branch'],
  })
  .refine((s) => !s.credentials?.sshPrivateKey || SSH_URL.test(s.repo), {
    message: 'an SSH key needs an SSH URL (ssh://USER@HOST/PATH or USER@HOST:PATH)',
    path: ['repo'],
  })
  .refine((s) => !s.credentials?.password || HTTP_URL.test(s.repo), {
    message: 'a password or token needs an https:// URL; for SSH give credentials.sshPrivateKey',
    path: ['repo'],
  })
  .refine((s) => !s.credentials?.password || !s.repo.startsWith('http://') || s.insecure, {
    message: 'sends the credentials in clear over http://: use https://, or set insecure: true for a lab server',
    path: ['repo'],
  });
export type GitRepoSpec = z.infer<typeof GitRepoSpec>;

export const GitRepo = objectKind('GitRepo', GitRepoSpec);
export type GitRepo = z.infer<typeof GitRepo>;

// ---------------------------------------------------------------------------------------------
// ServiceExport and ServiceImport (docs/interconnect.md): a workload's port reachable from other sites

/** How long an interconnect connection may sit idle when its export does not say (docs/interconnect.md). */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 900;

const port = z.number().int().min(1, 'must be a TCP port 1-65535').max(65535, 'must be a TCP port 1-65535');

/**
 * A declared port of a workload, offered to the edges that import it, through the hub. Only that
 * port of the edges that run the workload is reachable; another project's import needs its name in
 * `allowedProjects`.
 */
export const ServiceExportSpec = strict({
  /** The workload whose port is served, on the edges of this project that run it. */
  workload: name,
  /** A containerPort the workload declares (the process driver: the host port it listens on). */
  port,
  protocol: z.literal('tcp', { error: 'must be tcp (the only protocol carried yet)' }).default('tcp'),
  /** Projects whose ServiceImports may reach it (its own project always may). */
  allowedProjects: z.array(name).max(256).default([]),
  /**
   * A connection that moves no byte either way for this long is reset at both ends (the hub's
   * relay). Default 900 s: longer than the keepalive of the protocols usually carried.
   */
  idleTimeoutSeconds: z
    .number()
    .int()
    .min(1, 'must be 1-86400 seconds')
    .max(86_400, 'must be 1-86400 seconds')
    .default(DEFAULT_IDLE_TIMEOUT_SECONDS),
});
export type ServiceExportSpec = z.infer<typeof ServiceExportSpec>;

export const ServiceExport = objectKind('ServiceExport', ServiceExportSpec);
export type ServiceExport = z.infer<typeof ServiceExport>;

/**
 * An export made reachable on the edges it selects: each listens on 127.0.0.1:`port` and carries
 * every connection through the hub to an edge that serves the export.
 */
export const ServiceImportSpec = strict({
  /** The ServiceExport's name. */
  export: name,
  /** The export's project (default: this object's); another project must grant it in `allowedProjects`. */
  project: name.optional(),
  /** The local port the consuming edges listen on (127.0.0.1). */
  port,
  edgeSelector: LabelSelector.optional(),
  edges: z.array(name).optional(),
}).refine(selectsEdges, SELECTS_EDGES);
export type ServiceImportSpec = z.infer<typeof ServiceImportSpec>;

export const ServiceImport = objectKind('ServiceImport', ServiceImportSpec);
export type ServiceImport = z.infer<typeof ServiceImport>;
// ClusterTemplate and Cluster (docs/clusters.md): what a cluster at the sites is made of; the
// artifacts and settings are core/cluster.ts's.

/**
 * The hub-wide scope, as `metadata.project` of a global ClusterTemplate (the only kind with one):
 * `*` means every project, as in token grants and release scopes. Such a template serves the
 * Clusters of every project (`spec.template.scope: Global`); only an admin for every project
 * applies or deletes one.
 */
export const GLOBAL_SCOPE = '*';

export const ClusterTemplate = strict({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal('ClusterTemplate'),
  metadata: Metadata.extend({
    project: z
      .union([name, z.literal(GLOBAL_SCOPE)], {
        error: 'must be a project name, or "*" for a global template (every project may use it)',
      })
      .default('default'),
  }),
  spec: ClusterTemplateSpec,
  status: z.looseObject({}).optional(),
});
export type ClusterTemplate = z.infer<typeof ClusterTemplate>;

export const ClusterSpec = strict({
  /**
   * The template and its version (a version's content never changes): the Cluster's project's, or
   * with `scope: Global` a global one (GLOBAL_SCOPE).
   */
  template: strict({
    name,
    version: clusterTemplateVersion,
    scope: z.enum(['Project', 'Global'], { error: 'must be Project (the default) or Global' }).optional(),
  }),
  /** The control-plane host: one edge by name (several: not supported yet). */
  controlPlane: strict({
    edges: z.array(name).length(1, 'must name exactly one edge: HA control planes are not supported yet'),
  }),
  /** The workers: edges by name, by selector, or both (none: a single-node cluster). */
  workers: strict({
    edges: z.array(name).optional(),
    edgeSelector: LabelSelector.optional(),
    /** Their kubelets' ports, when not the cluster's (`ports`): several nodes on one host. */
    ports: WorkerPorts.optional(),
  }).optional(),
  /** The ports the cluster's components listen on, on every node (defaults: the usual ones). */
  ports: ClusterPorts.optional(),
  /**
   * How a new template version reaches the workers once the control plane runs it: at most
   * `maxUnavailable` at a time; paused once `failureThreshold` of them rolled back.
   */
  upgrade: strict({
    maxUnavailable: z.number().int().min(1).max(1000).default(1),
    failureThreshold: z.number().int().min(1).max(1000).default(1),
  }).optional(),
});
export type ClusterSpec = z.infer<typeof ClusterSpec>;

export const Cluster = objectKind('Cluster', ClusterSpec);
export type Cluster = z.infer<typeof Cluster>;

/**
 * Each kind's schema, by kind: what validates an object of it (hub/objects.ts) and what the
 * Kubernetes API's OpenAPI is generated from (hub/k8s/openapi.ts). `Resource` below lists them as
 * a tuple, as its type needs.
 */
export const KIND_SCHEMAS = {
  Edge,
  Workload,
  Placement,
  Registry,
  AgentUpgrade,
  DataObject,
  GitRepo,
  ServiceExport,
  ServiceImport,
  ClusterTemplate,
  Cluster,
} as const satisfies Record<Kind, z.ZodType>;

export const Resource = z.discriminatedUnion('kind', [
  Edge,
  Workload,
  Placement,
  Registry,
  AgentUpgrade,
  DataObject,
  GitRepo,
  ServiceExport,
  ServiceImport,
  ClusterTemplate,
  Cluster,
]);
export type Resource = z.infer<typeof Resource>;

// ---------------------------------------------------------------------------------------------
// Project (docs/projects.md): not in `Resource`, as a project holds the other kinds

/** A size in bytes: a number, or a string with a unit (`500MB`, `5GiB`). */
const byteSize = z.union([
  z.number().int().min(0),
  z.string().refine((v) => {
    try {
      parseByteSize(v);
      return true;
    } catch {
      return false;
    }
  }, 'must be a size like 500MB, 5GiB or a number of bytes'),
]);

/** What a project may hold; a quota not given is unbounded (the hub-wide --blob-quota still bounds blobs). */
export const ProjectQuotas = strict({
  edges: z.number().int().min(0).optional(),
  placements: z.number().int().min(0).optional(),
  workloads: z.number().int().min(0).optional(),
  /** Bytes of the project's blobs (packages, DataObject files, agent binaries) with uploads in progress. */
  blobBytes: byteSize.optional(),
  /** The sum of the project's DataObjects' spec.size. */
  dataObjectBytes: byteSize.optional(),
  /** Tunnel sessions (exec, logs, port-forward, proxy) open at once to the project's edges. */
  tunnelSessions: z.number().int().min(0).optional(),
});
export type ProjectQuotas = z.infer<typeof ProjectQuotas>;
export const QUOTA_NAMES = [
  'edges',
  'placements',
  'workloads',
  'blobBytes',
  'dataObjectBytes',
  'tunnelSessions',
] as const;
export type QuotaName = (typeof QUOTA_NAMES)[number];

export const PROJECT_ROLES = ['viewer', 'operator', 'admin'] as const;

/** A person or a group of the identity provider, with a role in the project (taken into effect with sign-in, issue #47). */
export const ProjectMember = strict({
  user: z.string().min(1).max(256).optional(),
  group: z.string().min(1).max(256).optional(),
  role: z.enum(PROJECT_ROLES, { error: () => `must be one of ${PROJECT_ROLES.join(', ')}` }),
}).refine((m) => (m.user === undefined) !== (m.group === undefined), {
  message: 'give user or group, exactly one',
  path: ['user'],
});
export type ProjectMember = z.infer<typeof ProjectMember>;

export const ProjectSpec = strict({
  description: z.string().max(1024).optional(),
  quotas: ProjectQuotas.default({}),
  /** The rollout a Placement of the project gets when it names none (maxUnavailable, skipOfflineAfter). */
  rollout: strict({
    maxUnavailable: intOrPercent.optional(),
    skipOfflineAfter: Rollout.shape.skipOfflineAfter,
  }).optional(),
  members: z.array(ProjectMember).max(1000).default([]),
});
export type ProjectSpec = z.infer<typeof ProjectSpec>;

export const PROJECT_PHASES = ['Active', 'Terminating'] as const;
export type ProjectPhase = (typeof PROJECT_PHASES)[number];

export const Project = strict({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal('Project'),
  metadata: strict({
    name,
    labels: Labels.default({}),
    annotations: z.record(z.string(), z.string()).default({}),
    resourceVersion: z.string().optional(),
    generation: z.number().int().nonnegative().optional(),
    creationTimestamp: z.string().optional(),
    uid: z.string().optional(),
  }),
  spec: ProjectSpec.default({ quotas: {}, members: [] }),
  status: z.looseObject({}).optional(),
});
export type Project = z.infer<typeof Project>;

/** Formats zod issues as `path: message` lines, the form users see in API and CLI errors. */
export function formatIssues(error: z.ZodError, prefix = ''): { path: string; message: string }[] {
  return error.issues.map((i) => ({
    path: [
      prefix,
      ...i.path.map((p, idx) => (typeof p === 'number' ? `[${p}]` : `${idx === 0 && !prefix ? '' : '.'}${String(p)}`)),
    ]
      .join('')
      .replace(/^\./, ''),
    // zod 4 says only "Invalid key in record" and keeps the reason (a reserved label key) inside.
    message:
      i.code === 'invalid_key' && i.issues.length ? `key ${i.issues.map((x) => x.message).join('; ')}` : i.message,
  }));
}
