/**
 * @module The workloads kind's source on the hub (core/orders/workloads.ts): an edge's part is its
 * labels and its assignments (hub/state/assignments.ts, the scheduler's plan), with each
 * workload's Secret values sealed to the edge. Written by the engine's incremental writer
 * (hub/orders/incremental.ts): only when a digest of those inputs differs from the one recorded in
 * `spec_written`, in slices that leave the event loop to sockets and the API.
 */
import { createHash } from 'node:crypto';
import { createLogger } from '../../core/logger.js';
import { WORKLOAD_ORDERS, type WorkloadsPart } from '../../core/orders/workloads.js';
import type { Manifest } from '../../core/resources.js';
import type { ReplicaStore } from '../../sync/store.js';
import { IncrementalWriter, type IncrementalInputs } from '../orders/incremental.js';
import type { AssignmentKey, AssignmentStore, EdgeReads, SpecAssignments } from '../state/assignments.js';

export { SPEC_SLICE_MS, type ServedEdges } from '../orders/incremental.js';

const log = createLogger('hub:scheduler');

/**
 * Digest of everything a spec document is written from: the edge's labels (their stored JSON) and
 * its assignments, where the content key stands for the manifests. Stored in `spec_written`: keep
 * its form, or a hub restarted on an older file rewrites every spec once.
 */
export function specDigest(labels: string | undefined, keys: readonly AssignmentKey[]): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        labels ?? '{}',
        keys.map((k) => [k.workload, k.revision, k.contentKey, k.generation, k.error ?? null]),
      ]),
    )
    .digest('base64url');
}

/** Seals an edge's Secret values to that edge's own key (hub/secrets.ts). */
export type SealForEdge = (edge: string, manifests: Manifest[]) => Manifest[];

/** What an edge's workloads part is written from: its labels (stored JSON) and assignments. */
export type WorkloadInputs = SpecAssignments & { labels: string | undefined };

/** The workloads kind's inputs: the edge's labels and its assignments, read in batches. */
export function workloadInputs(
  assignments: AssignmentStore,
  edges: EdgeReads,
  seal: SealForEdge,
): IncrementalInputs<WorkloadInputs, WorkloadsPart> {
  return {
    kind: WORKLOAD_ORDERS,
    // For the enrolled ones: their labels and assignments, in two reads.
    inputs: (list) => {
      const labels = edges.enrolled(list);
      const assigned = assignments.specInputs([...labels.keys()]);
      const out = new Map<string, WorkloadInputs>();
      for (const [e, a] of assigned) out.set(e, { ...a, labels: labels.get(e) });
      return out;
    },
    digest: (a) => specDigest(a.labels, a.keys),
    written: (a) => a.written,
    part: (edge, a) => ({
      labels: JSON.parse(a.labels ?? '{}') as Record<string, string>,
      // Secret values leave the hub's key here and are sealed to this edge's: the document and its
      // history hold only what this edge can open (hub/secrets.ts).
      workloads: a.withManifests().map((r) => {
        const w = {
          name: r.workload,
          generation: r.generation,
          revision: r.revision,
          manifests: r.manifests,
          error: r.error,
        };
        if (r.error !== undefined) return w;
        try {
          return { ...w, manifests: seal(edge, r.manifests) };
        } catch (err) {
          log.error({ err, edge, workload: r.workload }, 'cannot seal Secrets for an edge');
          return {
            ...w,
            manifests: [],
            error: `the hub cannot seal this workload's Secrets: ${(err as Error).message}`,
          };
        }
      }),
    }),
    record: (edge, mark) => assignments.recordSpecWritten(edge, mark),
    // Compared in four scans instead of edge by edge.
    staleAll: (epochOf) => {
      const labels = edges.allLabels();
      const keys = assignments.keysByEdge();
      const written = assignments.allSpecWritten();
      return edges.names().filter((name) => {
        const w = written.get(name);
        return !w || w.epoch !== epochOf(name) || w.digest !== specDigest(labels.get(name), keys.get(name) ?? []);
      });
    },
  };
}

/** The workloads' writer: the engine's incremental writer over `workloadInputs`. */
export class SpecWriter extends IncrementalWriter<WorkloadInputs, WorkloadsPart> {
  constructor(
    assignments: AssignmentStore,
    edges: EdgeReads,
    store: ReplicaStore,
    seal: SealForEdge,
    /** Called when the queue has been written out. */
    drained: () => void = () => {},
  ) {
    super(workloadInputs(assignments, edges, seal), store, drained);
  }
}
