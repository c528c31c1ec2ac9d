/**
 * @module Clusters at the sites (docs/clusters.md): what a ClusterTemplate holds (the Kubernetes
 * version, the signed artifacts of its distribution, the control-plane, network and kubelet
 * settings), the ports a Cluster's components listen on, the order the hub writes into each node's
 * spec (core/orders/cluster.ts) and what the node reports back. Pure schemas: the UI builds this
 * file too.
 */
import { z } from 'zod';
import { DIGEST_PATTERN } from './blobs.js';
import { NAME_PATTERN } from './ids.js';
import { strict } from './strict-object.js';

const name = z
  .string()
  .regex(NAME_PATTERN, 'must be 1-63 lower-case letters, digits or "-", starting and ending with a letter or digit');

/** The components of the distribution, each one signed blob (`outpost cluster artifacts push DIR`). */
export const ARTIFACT_NAMES = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
  'containerd',
  'runc',
  'cni-plugins',
  'pause',
] as const;
export type ArtifactName = (typeof ARTIFACT_NAMES)[number];

/**
 * Artifacts that are a tar of several files (unpacked into a directory on the edge); `pause` is an
 * OCI archive imported into containerd; the others are one executable.
 */
export const ARCHIVE_ARTIFACTS: readonly ArtifactName[] = ['containerd', 'cni-plugins'];
/** The files each archive artifact must hold. */
export const ARCHIVE_FILES: Partial<Record<ArtifactName, readonly string[]>> = {
  containerd: ['containerd', 'containerd-shim-runc-v2', 'ctr'],
  'cni-plugins': ['bridge', 'host-local', 'loopback'],
};

/** What a cluster artifact's signature covers (core/release.ts `releasePayload`): its use and name. */
export function artifactSignatureKind(artifact: ArtifactName): string {
  return `outpost-cluster-artifact/${artifact}`;
}

/** A signed artifact as `outpost cluster artifacts push` prints it (checked on the edge before use). */
export const ClusterArtifact = strict({
  scope: z.string().regex(new RegExp(`^\\*$|${NAME_PATTERN.source}`), 'must be a project name or "*"'),
  version: z.string().regex(/^v?[0-9A-Za-z][0-9A-Za-z.+_-]{0,99}$/, 'must be the Kubernetes version, e.g. v1.33.13'),
  digest: z.string().regex(DIGEST_PATTERN, 'must be sha256: and 64 hex digits'),
  size: z.number().int().min(1),
  signature: z.string().regex(/^[A-Za-z0-9+/=]{40,200}$/, 'must be the base64 signature the push printed'),
});
export type ClusterArtifact = z.infer<typeof ClusterArtifact>;

/**
 * API server flags a template may set: tuning and limits only. Whatever decides who may do what
 * (authorization, authentication, certificates, etcd, admission of privileged pods) is the
 * hub's, so a template cannot open the cluster.
 */
export const ALLOWED_API_SERVER_FLAGS = [
  'audit-log-maxage',
  'audit-log-maxbackup',
  'audit-log-maxsize',
  'default-not-ready-toleration-seconds',
  'default-unreachable-toleration-seconds',
  'event-ttl',
  'goaway-chance',
  'max-mutating-requests-inflight',
  'max-requests-inflight',
  'min-request-timeout',
  'request-timeout',
  'service-node-port-range',
  'shutdown-delay-duration',
  'watch-cache',
  'v',
] as const;

const cidr = z
  .string()
  .regex(/^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/, 'must be an IPv4 CIDR such as 10.96.0.0/16')
  .refine((c) => {
    const [ip, bits] = c.split('/');
    return ip!.split('.').every((o) => Number(o) <= 255) && Number(bits) >= 8 && Number(bits) <= 24;
  }, 'must have octets up to 255 and a prefix length from /8 to /24');

export const clusterTemplateVersion = z
  .string()
  .regex(/^[0-9A-Za-z][0-9A-Za-z.+_-]{0,62}$/, 'must be a version like v1, 1.2 or 2026-12');

const port = z.number().int().min(1024, 'must be 1024 or above').max(65535);

/** Where the components listen on every node (on loopback; the kubelet's on the node's address). */
export const ClusterPorts = strict({
  apiServer: port.default(6443),
  etcdClient: port.default(2379),
  etcdPeer: port.default(2380),
  controllerManager: port.default(10257),
  scheduler: port.default(10259),
  kubelet: port.default(10250),
  kubeletHealthz: port.default(10248),
}).refine((p) => new Set(Object.values(p)).size === Object.values(p).length, {
  message: 'must all differ: two components cannot listen on one port',
});
export type ClusterPorts = z.infer<typeof ClusterPorts>;
/**
 * The workers' kubelet ports, when they differ from the control plane's: several nodes on one host
 * (a test, a lab) need their own.
 */
export const WorkerPorts = strict({ kubelet: port.optional(), kubeletHealthz: port.optional() });
export type WorkerPorts = z.infer<typeof WorkerPorts>;

const ipv4 = z
  .string()
  .regex(/^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/, 'must be an IPv4 address');
export const DEFAULT_CLUSTER_PORTS: ClusterPorts = ClusterPorts.parse({});

const flagValue = z
  .string()
  .regex(/^[A-Za-z0-9.,:=_\/-]{0,256}$/, 'must be a plain flag value (letters, digits, .,:=_/-)');

export const ClusterTemplateSpec = strict({
  /** This template's version: its content never changes once applied (apply another version). */
  version: clusterTemplateVersion,
  kubernetesVersion: z
    .string()
    .regex(/^v\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$/, 'must be a Kubernetes version such as v1.33.13'),
  /** Every component of the distribution, as `outpost cluster artifacts push DIR` prints them. */
  artifacts: strict(
    Object.fromEntries(ARTIFACT_NAMES.map((n) => [n, ClusterArtifact])) as Record<ArtifactName, typeof ClusterArtifact>,
  ),
  /** The name the pause image has inside its OCI archive (containerd's sandbox image). */
  pauseImage: z
    .string()
    .regex(
      /^[a-z0-9.-]+(:\d+)?(\/[a-z0-9._-]+)+:[A-Za-z0-9._-]+$/,
      'must be an image reference such as localhost/outpost/pause:3.10',
    )
    .default('localhost/outpost/pause:3.10'),
  network: strict({
    serviceCIDR: cidr.default('10.96.0.0/16'),
    podCIDR: cidr.default('10.244.0.0/16'),
    /** The reference CNI plugins: a Linux bridge, addresses from host-local (the only one now). */
    cni: z.literal('bridge', { error: 'must be "bridge" (other CNIs are not supported yet)' }).default('bridge'),
  }).default({ serviceCIDR: '10.96.0.0/16', podCIDR: '10.244.0.0/16', cni: 'bridge' }),
  controlPlane: strict({
    admissionPlugins: z
      .array(z.string().regex(/^[A-Za-z]{1,64}$/, 'must be an admission plugin name'))
      .max(32)
      .default([]),
    featureGates: z
      .record(z.string().regex(/^[A-Za-z0-9]{1,64}$/, 'must be a feature gate name'), z.boolean())
      .default({}),
    /** Extra API server flags, from ALLOWED_API_SERVER_FLAGS only. */
    apiServerFlags: z
      .partialRecord(
        z.enum(ALLOWED_API_SERVER_FLAGS, {
          error: () => `must be one of the allowed flags: ${ALLOWED_API_SERVER_FLAGS.join(', ')}`,
        }),
        flagValue,
      )
      .default({}),
  }).default({ admissionPlugins: [], featureGates: {}, apiServerFlags: {} }),
  kubelet: strict({
    maxPods: z.number().int().min(1).max(250).default(110),
    featureGates: z.record(z.string().regex(/^[A-Za-z0-9]{1,64}$/), z.boolean()).default({}),
  }).default({ maxPods: 110, featureGates: {} }),
});
export type ClusterTemplateSpec = z.infer<typeof ClusterTemplateSpec>;

export const NODE_ROLES = ['control-plane', 'worker'] as const;
export type NodeRole = (typeof NODE_ROLES)[number];

/**
 * One node's order: which cluster (its uid tells a cluster deleted and made again under the same
 * name apart), what role, the template's content, the ports, and the node's PKI sealed to the
 * edge's key (core/secrets.ts `sealToEdge`: the CRDT history holds ciphertext only).
 */
export const ClusterNodeOrder = z.object({
  cluster: name,
  uid: z.string().min(1).max(64),
  role: z.enum(NODE_ROLES),
  template: z.object({ name, version: clusterTemplateVersion }),
  spec: ClusterTemplateSpec,
  ports: ClusterPorts,
  /**
   * A worker's way to the control plane: the API server on the control-plane node's address (what
   * that node reported), its certificate checked for the control-plane edge's name.
   */
  apiServer: z.object({ address: ipv4, serverName: name }).optional(),
  /** A control plane's: the workers being removed, each to drain and delete from the cluster. */
  drain: z.array(name).max(1000).optional(),
  /**
   * The Cluster is being deleted: tear the node down (stop everything, remove its data) and report
   * `Deleted` (docs/clusters.md, "Delete"). The rest of the order is as it was (the node's own
   * `state.json` says what runs).
   */
  delete: z.literal(true).optional(),
  /** The node's certificates and keys (PKI_FILES), sealed to this edge. */
  pki: z.string().min(1).max(200_000),
});
export type ClusterNodeOrder = z.infer<typeof ClusterNodeOrder>;

/** The files of a node's PKI bundle, as the edge writes them under DATA/clusters/NAME/pki/. */
export const PKI_FILES = [
  'ca.crt',
  'apiserver.crt',
  'apiserver.key',
  'apiserver-kubelet-client.crt',
  'apiserver-kubelet-client.key',
  'sa.key',
  'sa.pub',
  'admin.crt',
  'admin.key',
  'controller-manager.crt',
  'controller-manager.key',
  'scheduler.crt',
  'scheduler.key',
  'kubelet.crt',
  'kubelet.key',
  'kubelet-client.crt',
  'kubelet-client.key',
] as const;
export const PkiBundle = z.partialRecord(z.enum(PKI_FILES), z.string().max(16_384));
export type PkiBundle = z.infer<typeof PkiBundle>;

export const COMPONENTS = [
  'containerd',
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
] as const;
export type ComponentName = (typeof COMPONENTS)[number];
/** The components of each role, in start order (stopped in reverse). */
export const ROLE_COMPONENTS: Record<NodeRole, readonly ComponentName[]> = {
  'control-plane': COMPONENTS,
  worker: ['containerd', 'kubelet'],
};

/**
 * A node's phase: `Upgrading` while its components are swapped to a new template version,
 * `RolledBack` when that failed its health gate and the previous version runs again.
 */
export const NODE_PHASES = [
  'Staging',
  'Starting',
  'Ready',
  'NotReady',
  'Upgrading',
  'RolledBack',
  'Failed',
  'Deleting',
  /** Torn down on a teardown order (`delete`): nothing of the node is left on the edge. */
  'Deleted',
] as const;
export type NodePhase = (typeof NODE_PHASES)[number];

const text = (max: number) => z.string().max(max);

/** A component as the node saw it last: running (its pid), healthy (its health endpoint), restarts. */
export const ComponentReport = z.object({
  running: z.boolean(),
  healthy: z.boolean(),
  pid: z.number().int().positive().optional(),
  restarts: z.number().int().min(0).max(1_000_000).default(0),
  message: text(512).optional(),
});
export type ComponentReport = z.infer<typeof ComponentReport>;

/** A step the node took (the hub records each as an event of the Cluster). */
export const NodeEvent = z.object({ at: z.number(), step: text(64), message: text(512) });
export type NodeEvent = z.infer<typeof NodeEvent>;

/** What a node reports of its order (peer input: checked, bounded). */
export const ClusterNodeReport = z.object({
  cluster: name,
  uid: z.string().min(1).max(64),
  role: z.enum(NODE_ROLES),
  /** The template version the node is brought to (`NAME@VERSION`). */
  template: text(140),
  /** The template version its components last ran healthy (what an upgrade rolls back to). */
  runs: text(140).optional(),
  phase: z.enum(NODE_PHASES),
  step: text(64),
  message: text(1024).optional(),
  components: z.partialRecord(z.enum(COMPONENTS), ComponentReport).default({}),
  node: z.object({ ready: z.boolean(), kubeletVersion: text(64).optional(), reason: text(512).optional() }).optional(),
  /** The node's address (the host's: its kubelet's, and a control plane's API server's). */
  address: ipv4.optional(),
  /** A control plane's: the workers of its order's `drain` it drained and deleted from the cluster. */
  drained: z.array(name).max(1000).optional(),
  /** A control plane's: what the drain of a worker waits for (a PodDisruptionBudget, pods terminating). */
  draining: text(1024).optional(),
  /** The last steps, oldest first. */
  events: z.array(NodeEvent).max(50).default([]),
  at: z.number(),
});
export type ClusterNodeReport = z.infer<typeof ClusterNodeReport>;

export const CLUSTER_PHASES = ['Provisioning', 'Ready', 'Upgrading', 'Degraded', 'Deleting'] as const;
export type ClusterPhase = (typeof CLUSTER_PHASES)[number];
