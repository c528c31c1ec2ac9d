/**
 * @module The workloads kind of order (core/orders/kind.ts): an edge's labels and exactly the
 * workloads its assignments say, each with its customized manifests (Secret values sealed to the
 * edge) or the error that keeps it from running. Its part is written whole through the spec
 * document's backend (core/mailbox/spec.ts `writeSpecTo`, the one way a spec's labels and workloads
 * are written); the hub's source writes it incrementally (hub/orders/incremental.ts), the edge's
 * reconciler follows it (edge/reconciler.ts).
 */
import { writeSpecTo, type SpecWorkload } from '../mailbox.js';
import type { OrderKind } from './kind.js';

export interface WorkloadsPart {
  /** The edge's labels, as its spec shows them to the workloads (customization, `outpost edge`). */
  labels: Record<string, string>;
  workloads: SpecWorkload[];
}

/** Every workload an edge runs, with its labels (hub/scheduler/spec-writer.ts, edge/reconciler.ts). */
export const WORKLOAD_ORDERS: OrderKind<WorkloadsPart> = {
  name: 'workloads',
  put: (b, part) => writeSpecTo(b, part?.labels ?? {}, part?.workloads ?? []),
};
