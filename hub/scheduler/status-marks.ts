/**
 * @module Status marks, on the leader: an edge's status changed (a report, a connect or a
 * disconnect), which may move the rollouts of the placements on it. The edges marked within one
 * turn (with hub replicas on PostgreSQL, within PG_GATHER, longer while they keep coming) are
 * gathered for one read of their placements, and those whose rollout it may move are queued for a
 * pass, paced (WorkQueue.statusDelay): a thousand reports arriving together cost one pass.
 */
import { PG_GATHER } from '../../core/durations.js';
import { GatherPace } from '../../core/gather.js';
import { createLogger } from '../../core/logger.js';
import type { AssignmentStore } from '../state/assignments.js';
import type { GateWaits } from './gate-waits.js';
import type { WorkQueue } from './queue.js';
import type { RolloutStatus } from './rollout.js';

const log = createLogger('hub:scheduler');

/** What the flush reads of the scheduler (index.ts): whether it plans, and its per-placement state. */
export interface PlanState {
  /** Whether this process plans now. */
  leading(): boolean;
  /** Each placement's rollout status, as the planner last decided. */
  readonly rolloutStatus: ReadonlyMap<string, RolloutStatus>;
  /** Placements whose last pass left some selected edge short of its target. */
  readonly heldBack: ReadonlySet<string>;
  /** Which placements wait for a gate on which edge. */
  readonly waits: GateWaits;
}

export class StatusMarks {
  /** Edges whose status changed this turn, planned together. */
  private pending = new Map<string, 'report' | 'connectivity'>();
  private flushDue: NodeJS.Immediate | NodeJS.Timeout | undefined;
  /** Hub replicas on PostgreSQL share the work (Scheduler.usePeers): statuses are gathered PG_GATHER. */
  gather = false;
  private readonly pace = new GatherPace(PG_GATHER);

  constructor(
    private readonly assignments: AssignmentStore,
    private readonly queue: WorkQueue,
    private readonly plan: PlanState,
  ) {}

  /** True while marked edges wait for their flush. */
  get busy(): boolean {
    return this.flushDue !== undefined;
  }

  /** An edge's status changed (nothing unless this process plans). */
  add(name: string, cause: 'report' | 'connectivity'): void {
    if (!this.plan.leading()) return;
    // Gathered for one read of their placements at the end of this turn, or with hub replicas on
    // PostgreSQL (where a read is a round trip, and the other replicas' statuses come in messages
    // gathered as long) after PG_GATHER: reports arrive in bursts. A report outweighs a connect
    // or disconnect.
    if (this.pending.get(name) !== 'report') this.pending.set(name, cause);
    this.flushDue ??= this.gather ? setTimeout(() => this.flush(), this.pace.nextMs) : setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushDue = undefined;
    const pending = this.pending;
    this.pending = new Map();
    this.pace.taken(pending.size);
    try {
      if (!this.plan.leading() || !pending.size) return;
      const on = this.assignments.placementsOnEdges([...pending.keys()]);
      for (const [name, cause] of pending) {
        const keys: string[] = [];
        let advances = false;
        for (const r of on.get(name) ?? []) {
          const key = `${r.project}/${r.placement}`;
          // An edge coming or going changes a rollout only while something is still to be written
          // or awaited: a Complete rollout stays Complete (unless it skipped an offline edge: that
          // one coming back is to be written), and skipping it is what keeps a reconnect storm of
          // 10,000 edges from re-planning the whole fleet every few hundred milliseconds.
          const st = this.plan.rolloutStatus.get(key);
          if (cause === 'connectivity' && st?.phase === 'Complete' && !st.counts.skipped) continue;
          keys.push(key);
          if (this.plan.heldBack.has(key)) advances = true;
        }
        // Placements with nothing on this edge yet, whose new version waits for something there.
        for (const key of this.plan.waits.on(name) ?? []) {
          keys.push(key);
          advances = true;
        }
        const delay = this.queue.statusDelay(advances);
        for (const k of keys) this.queue.addPlacement(k, delay);
      }
    } catch (err) {
      log.warn(
        { err, edges: pending.size },
        'could not read which placements the reporting edges hold; their next report plans them',
      );
    } finally {
      this.queue.wakeIdle();
    }
  }
}
