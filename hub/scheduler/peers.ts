/**
 * @module The scheduler's side of hub replicas on PostgreSQL (hub/replicas/): the marks a replica
 * that does not plan sends the leader (and the leader the replicas), and what the scheduler asks
 * of the replicas (`Scheduler.usePeers`). A SQLite hub has none.
 */
import type { ServedEdges } from './spec-writer.js';

/** What a replica that does not plan sends the leader, and the leader sends the replicas. */
export type PeerMark =
  | { t: 'placements'; keys: string[] }
  | { t: 'edges'; edges: string[] }
  | { t: 'status'; edges: string[]; cause: 'report' | 'connectivity' }
  | { t: 'specs'; edges: string[] };

/**
 * The other hub processes on one PostgreSQL (hub/replicas/): only the leader plans; every process
 * writes the spec documents of the edges it serves. Absent on a SQLite hub, which does both.
 */
export interface SchedulerPeers extends ServedEdges {
  /** Whether this process plans now. */
  readonly leading: boolean;
  /** Queues a mark for the leader, or (from the leader) spec writes for the edges' holders. */
  send(m: PeerMark): void;
}
