/**
 * @module The status projection (table `workload_status`): what each edge last reported about each
 * workload, written inside the transaction that applied the report document, and the joined reads
 * the summaries are computed from (assignment + report + the edge's liveness, one scan). The only
 * SQL that writes `workload_status`. `StatusState` is the seam for a second implementation
 * (issue #22); `sqlStatusState` is today's.
 */
import { type SqlDb, all, alreadyWritten, forgetWritten, json, jsonListParam, one, run, write } from './sql.js';

export type ObjectReadiness = Record<string, { ready: boolean; message?: string }>;

/** One workload as an edge reported it. */
export interface WorkloadReportRow {
  workload: string;
  observedGeneration: number;
  phase: string;
  message?: string;
  since: number;
  restarts: number;
  objects: ObjectReadiness;
}

/** One (edge, workload) assignment with what the edge reported and the edge's liveness. */
export interface AssignedStatus {
  edge: string;
  workload: string;
  placement: string;
  generation: number;
  error?: string;
  reported?: {
    observedGeneration: number;
    phase: string;
    message?: string;
    /** Parsed on demand: a summary reads it only for the entries that are not Ready. */
    objects(): ObjectReadiness;
  };
  lastSeen?: number;
  connectedSince?: number;
}

export interface StatusState {
  /** Replaces what an edge reported: its workloads not in `workloads` are forgotten. */
  project(edge: string, workloads: WorkloadReportRow[]): void;
  /** Forgets everything an edge reported (decommission). */
  forgetEdge(edge: string): void;
  reported(edge: string, workload: string): WorkloadReportRow | undefined;
  byPlacement(project: string, placement: string): AssignedStatus[];
  byWorkload(project: string, workload: string): AssignedStatus[];
  /** An edge's assignments ordered by workload. */
  byEdge(edge: string): AssignedStatus[];
}

interface StatusRow {
  workload: string;
  observed_generation: number;
  phase: string;
  message: string | null;
  since: number;
  restarts: number;
  objects: string;
}

interface JoinedRow {
  edge: string;
  workload: string;
  placement: string;
  generation: number;
  error: string | null;
  observed_generation: number | null;
  phase: string | null;
  message: string | null;
  objects: string | null;
  last_seen: number | null;
  connected_since: number | null;
}

const JOINED = `SELECT a.edge, a.workload, a.placement, a.generation, a.error, s.observed_generation, s.phase, s.message, s.objects, r.last_seen, r.connected_since
  FROM assignments a
  LEFT JOIN workload_status s ON s.edge = a.edge AND s.workload = a.workload
  LEFT JOIN edge_runtime r ON r.name = a.edge`;

function toAssigned(r: JoinedRow): AssignedStatus {
  return {
    edge: r.edge,
    workload: r.workload,
    placement: r.placement,
    generation: r.generation,
    ...(r.error !== null ? { error: r.error } : {}),
    ...(r.phase !== null
      ? {
          reported: {
            observedGeneration: r.observed_generation ?? 0,
            phase: r.phase,
            ...(r.message !== null ? { message: r.message } : {}),
            objects: () => (r.objects ? json<ObjectReadiness>(r.objects, 'workload_status.objects') : {}),
          },
        }
      : {}),
    ...(r.last_seen !== null ? { lastSeen: r.last_seen } : {}),
    ...(r.connected_since !== null ? { connectedSince: r.connected_since } : {}),
  };
}

export function sqlStatusState(db: SqlDb): StatusState {
  return {
    project(edge, workloads) {
      // Queued (sql.ts write): on PostgreSQL the whole projection of a report goes with the
      // next round trip instead of one per row, and rows written unchanged before are skipped
      // (all written again when the set of workloads changed: a row deleted may come back).
      const names = JSON.stringify(workloads.map((w) => w.workload));
      const sameNames = alreadyWritten(db, edge, 'status-names', names);
      if (!sameNames) forgetWritten(db, edge, 'status/');
      for (const w of workloads) {
        const row = [
          w.observedGeneration,
          w.phase,
          w.message ?? null,
          w.since,
          w.restarts,
          JSON.stringify(w.objects),
        ] as const;
        if (alreadyWritten(db, edge, `status/${w.workload}`, () => JSON.stringify(row))) continue;
        write(
          db,
          `INSERT INTO workload_status (edge, workload, observed_generation, phase, message, since, restarts, objects) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(edge, workload) DO UPDATE SET observed_generation = excluded.observed_generation, phase = excluded.phase, message = excluded.message, since = excluded.since, restarts = excluded.restarts, objects = excluded.objects`,
          edge,
          w.workload,
          ...row,
        );
      }
      // Workloads the report no longer holds.
      if (!sameNames)
        write(db, `DELETE FROM workload_status WHERE edge = ? AND workload NOT IN (${jsonListParam(db)})`, edge, names);
    },
    forgetEdge(edge) {
      forgetWritten(db, edge);
      run(db, 'DELETE FROM workload_status WHERE edge = ?', edge);
    },
    reported(edge, workload) {
      const r = one<StatusRow>(db, 'SELECT * FROM workload_status WHERE edge = ? AND workload = ?', edge, workload);
      return (
        r && {
          workload: r.workload,
          observedGeneration: r.observed_generation,
          phase: r.phase,
          ...(r.message !== null ? { message: r.message } : {}),
          since: r.since,
          restarts: r.restarts,
          objects: json<ObjectReadiness>(r.objects, 'workload_status.objects'),
        }
      );
    },
    byPlacement(project, placement) {
      return all<JoinedRow>(db, `${JOINED} WHERE a.project = ? AND a.placement = ?`, project, placement).map(
        toAssigned,
      );
    },
    byWorkload(project, workload) {
      return all<JoinedRow>(db, `${JOINED} WHERE a.project = ? AND a.workload = ?`, project, workload).map(toAssigned);
    },
    byEdge(edge) {
      return all<JoinedRow>(db, `${JOINED} WHERE a.edge = ? ORDER BY a.workload`, edge).map(toAssigned);
    },
  };
}
