/**
 * @module The types of the scheduler's tables (`assignments`, `spec_written`, `rollouts`) and
 * `AssignmentStore`, the interface callers use. `SqlAssignmentStore` (hub/state/assignments.ts,
 * the only code that writes those tables) implements it on either database (hub/state/sql.ts
 * `SqlDb`); hub/state/assignments.ts says why an assignment keeps its full manifests.
 */
import type { Manifest } from '../../core/resources.js';
import type { Read } from './sql.js';

/** One workload on one edge, as the scheduler decided it. */
export interface Assignment {
  edge: string;
  workload: string;
  project: string;
  placement: string;
  revision: number;
  /** `manifestHash` of the manifests (or `error:...`): stands for them in every comparison. */
  contentKey: string;
  generation: number;
  manifests: Manifest[];
  error?: string;
}

/** An assignment without its manifests: what planning and digests need (parsing manifests is the dear part). */
export type AssignmentKey = Omit<Assignment, 'manifests'>;

/** What the edge last reported for an assigned workload (from the status projection). */
export interface AssignedStatus {
  edge: string;
  workload: string;
  observedGeneration: number;
  phase: string;
  /** For a Paused workload: the edge's reason it is held (a pause on site or a remote stop). */
  held?: string;
}

export interface SpecWritten {
  epoch: string;
  digest: string;
}

export interface RolloutRecord {
  phase: string;
  reason: string;
  /** The planner's counts and maxUnavailable (JSON), for hub replicas that do not plan. */
  progress?: string;
  /** Edge -> the content key whose failure the operator accepted (`outpost rollout resume`). */
  acknowledged: Record<string, string>;
}

/** What an edge's spec document is written from, of this table (AssignmentStore.specInputs). */
export interface SpecAssignments {
  keys: AssignmentKey[];
  withManifests(): Assignment[];
  /** The spec document's epoch and digest when it was last written. */
  written?: SpecWritten;
}

export interface AssignmentStore {
  /** Runs fn in one transaction (joins an open one). */
  transaction<T>(fn: () => T): T;

  forEdge(edge: string): Assignment[];
  /**
   * The assignments of `edges` and the digest each one's spec was last written with, in one read
   * for all of them (the spec writer's, once per slice of edges): every edge named has an entry,
   * its keys ordered by workload, its manifests parsed only when asked for (the writer compares keys
   * first and skips an unchanged edge unparsed).
   */
  specInputs(edges: readonly string[]): Map<string, SpecAssignments>;
  forPlacement(project: string, placement: string): Assignment[];
  forWorkload(project: string, workload: string): Assignment[];
  /** A placement's assignments without manifests, ordered by edge and workload. */
  keysForPlacement(project: string, placement: string): AssignmentKey[];
  /** Every assignment without manifests, grouped by edge (ordered by workload). */
  keysByEdge(): Map<string, AssignmentKey[]>;
  /** The placements holding something on each of these edges, in one read. */
  placementsOnEdges(edges: string[]): Map<string, { project: string; placement: string }[]>;
  /** `edge/workload` -> placement, for these workloads held by placements other than `placement`. */
  heldElsewhere(project: string, placement: string, workloads: string[]): Map<string, string>;
  /** `edge/workload` -> what the edge reported, for a placement's assignments. */
  statusForPlacement(project: string, placement: string): Map<string, AssignedStatus>;
  /** The generations these edges last reported, by `edge/workload` (absent: never), in one read. */
  observedGenerations(edges: string[]): Map<string, number>;

  put(a: Assignment): void;
  /** Removes one assignment (only if `placement` holds it, when given). */
  remove(edge: string, workload: string, placement?: string): void;
  removePlacement(project: string, placement: string): void;
  /** A decommissioned edge: its assignments and spec digest go. */
  forgetEdge(edge: string): void;

  allSpecWritten(): Map<string, SpecWritten>;
  recordSpecWritten(edge: string, written: SpecWritten): void;
  /** What `specInputs([edge])` reads, given ahead on PostgreSQL for a turn's handshakes (hub/state/index.ts `prefetchHandshakes`). */
  handshakeReads(edge: string): Read[];

  rolloutRecord(project: string, placement: string): RolloutRecord | undefined;
  /** Records the planner's phase and reason, keeping the acknowledged failures. */
  saveRollout(project: string, placement: string, phase: string, reason: string, progress?: string): void;
  /** `outpost rollout resume`: replaces the acknowledged failures. */
  acknowledge(project: string, placement: string, failures: Record<string, string>): void;
  removeRollout(project: string, placement: string): void;
}
