/**
 * The JSON the hub's API answers with, as the UI reads it (docs/api.md). The views are
 * core/api/types.ts and core/api/views.ts, shared with the hub and the CLI, under the UI's names;
 * only the resource shapes are written out here (see below).
 */
import type { ApplyResponse, ListResponse, Role, WhoAmI } from '../../core/api/types.js';
import type {
  ConnectionView,
  EdgeStatusView,
  EdgeWorkloadView,
  EventView,
  FleetView,
  IntentView,
  InventoryView,
  LocalStateView,
  OnlineHistoryView,
  PlacementStatusView,
  ReplicaView,
  RevisionView,
  RolloutView,
  WorkloadStatusView,
} from '../../core/api/views.js';
import type { LabelSelector, Metadata } from '../../core/resources.js';
import type { State, Summary } from '../../core/status.js';

export type { ApplyResponse, Role, State, Summary, WhoAmI };
export type { EdgeWorkloadView, IntentView, LocalStateView, RolloutView };
export type List<T> = ListResponse<T>;
export type Inventory = InventoryView;
export type EdgeStatus = EdgeStatusView;
export type PlacementStatus = PlacementStatusView;
export type WorkloadStatus = WorkloadStatusView;
export type Revision = RevisionView;
export type HubEvent = EventView;
export type Fleet = FleetView;
export type OnlineHistory = OnlineHistoryView;
export type Connection = ConnectionView;
export type Replica = ReplicaView;

// The resource shapes as the API sends them: core/resources.ts.
export type { LabelSelector, Metadata };
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
    /** A package of the catalog (docs/catalog.md); status.package says what it resolved. */
    package?: { name: string; version: string; profile?: string; values: Record<string, unknown> };
    customization: unknown[];
    rollout: {
      maxUnavailable: number | string;
      failureThreshold: number;
      paused: boolean;
      prestage?: boolean;
      prestageBudget?: string;
    };
    statusSummary?: { maxBroken: number };
  },
  PlacementStatus
>;
