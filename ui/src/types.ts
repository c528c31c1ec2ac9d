/**
 * The JSON the hub's API answers with, as the UI reads it (docs/api.md). The shapes shared with
 * the hub and the CLI come from core/api/types.ts; the views only the UI reads stay here.
 */
import type { ApplyResponse, ListResponse, Role, WhoAmI } from '../../core/api/types.js';
import type { State, Summary } from '../../core/status.js';

export type { ApplyResponse, Role, State, Summary, WhoAmI };
export type List<T> = ListResponse<T>;

export interface Inventory {
  hostname?: string;
  os?: string;
  arch?: string;
  cpus?: number;
  memoryBytes?: number;
  runtimes?: string[];
  driver?: string;
  agentVersion?: string;
  cpuModel?: string;
  vendor?: string;
  product?: string;
  serial?: string;
  disks?: { name: string; sizeBytes: number; model?: string; rotational?: boolean; removable?: boolean }[];
  nics?: { name: string; mac?: string; speedMbps?: number; virtual: boolean }[];
}

export interface EdgeWorkloadView {
  name: string;
  placement: string;
  generation: number;
  observedGeneration?: number;
  state: State;
  reason?: string;
  restarts: number;
  since?: string;
  objects: Record<string, { ready: boolean; message?: string }>;
}

export interface IntentView {
  seq: number;
  workload: string;
  action: string;
  set?: Record<string, unknown>;
  at: number;
  origin: string;
}

export interface LocalStateView {
  paused: boolean;
  overrides: Record<string, unknown>;
  intents: IntentView[];
}

export interface EdgeStatus {
  phase: 'Pending' | 'Online' | 'Offline';
  lastSeen?: string;
  lastSeenAgo?: number;
  connectedSince?: string;
  agentVersion?: string;
  inventory?: Inventory;
  /** Labels the hub derives from the inventory; placements select on them (docs/inventory.md). */
  inventoryLabels?: Record<string, string>;
  summary: Summary;
  workloads: EdgeWorkloadView[];
  localIntents: Record<string, LocalStateView>;
}

export interface RolloutView {
  phase: string;
  reason: string;
  counts?: {
    total: number;
    updated: number;
    ready: number;
    failed: number;
    pending: number;
    held?: number;
    skipped?: number;
    blocked?: number;
  };
  paused: boolean;
}

export interface PlacementStatus {
  selectedEdges: number;
  summary: Summary;
  rollout?: RolloutView;
}

export interface WorkloadStatus {
  revision: number;
  summary: Summary;
}

// The resource shapes (core/resources.ts) as the API sends them. Written out here because the
// browser build type-checks without Node's types, which core's id helpers need.
export interface Metadata {
  name: string;
  project: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  uid?: string;
}

export interface SelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: SelectorRequirement[];
}

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
}

interface Obj<K extends string, Spec, S> {
  apiVersion: string;
  kind: K;
  metadata: Metadata;
  spec: Spec;
  status: S;
}

export type EdgeObj = Obj<'Edge', { unschedulable: boolean; heartbeatSeconds?: number }, EdgeStatus>;
export type WorkloadObj = Obj<'Workload', { manifests: Manifest[] }, WorkloadStatus>;
export type PlacementObj = Obj<
  'Placement',
  {
    edgeSelector?: LabelSelector;
    edges?: string[];
    workloads: string[];
    customization: unknown[];
    rollout: { maxUnavailable: number | string; failureThreshold: number; paused: boolean };
    statusSummary?: { maxBroken: number };
  },
  PlacementStatus
>;

export interface Revision {
  revision: number;
  createdAt: string;
  manifests: unknown[];
}

export interface HubEvent {
  id: number;
  time: string;
  kind: string;
  name: string;
  reason: string;
  message: string;
  /** The object no longer exists (a decommissioned edge, a deleted workload): no link. */
  gone?: boolean;
}

export interface Fleet {
  edges: { total: number; Online: number; Offline: number; Pending: number };
  workloads: number;
  placements: number;
}

export interface OnlineHistory {
  from: string;
  to: string;
  stepSeconds: number;
  points: { t: string; online: number }[];
}

export interface Connection {
  connectedAt: string;
  disconnectedAt?: string;
  durationMs?: number;
  reason?: string;
  remoteAddress?: string;
}
