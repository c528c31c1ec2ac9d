/**
 * @module The scheduler's paced work queue: the dirty set (placements, edges) and when the next
 * pass runs. A burst of changes (an `apply -f dir/`, 1,000 reports arriving) costs one pass;
 * status-only work is paced by the duration of the last pass; an operator's change never waits
 * behind a paced pass.
 */
import { SUMMARY_DEBOUNCE_MS } from '../../core/durations.js';
import { createLogger } from '../../core/logger.js';

const log = createLogger('hub:scheduler');

/** The longest a status-triggered pass is paced out. */
export const MAX_STATUS_DELAY_MS = 5_000;

export interface Work {
  /** `project/name` of each dirty placement. */
  placements: Set<string>;
  /** Names of edges that changed themselves (labels, approval, drain, enrollment). */
  edges: Set<string>;
}

export class WorkQueue {
  private placements = new Set<string>();
  private edges = new Set<string>();
  private scheduled = false;
  private running = false;
  private dueAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private idleWaiters: (() => void)[] = [];
  /** How long the last pass took: status passes are paced by it. */
  lastPassMs = 0;

  constructor(
    /** One pass over the work taken from the queue. */
    private readonly pass: (work: Work) => void,
    /** True while work started by a pass is still going on (spec documents being written). */
    private readonly busy: () => boolean = () => false,
  ) {}

  /** Forgets what is queued (this hub replica stopped planning; hub/replicas/). */
  clear(): void {
    this.placements.clear();
    this.edges.clear();
  }

  addPlacement(key: string, delayMs = 0): void {
    this.placements.add(key);
    this.schedule(delayMs);
  }

  addEdge(name: string): void {
    this.edges.add(name);
    this.schedule();
  }

  /**
   * The delay of a status-triggered pass. A pass over a large fleet is long: waiting twice its
   * duration keeps status passes under a third of the hub's time however many reports arrive.
   * When no rollout waits on status (`advances` false: every selected edge already has its target
   * written, a fleet-wide change in flight), a pass only refreshes the phase and counts, and waits
   * twenty times its duration (at most 5 s): at 10,000 edges a pass is ~0.2 s, passes every second
   * took a third of the hub during a fan-out, and at ten times its duration still a tenth. The
   * summary (READY x/y) is read from the tables on demand and never waits for a pass.
   */
  statusDelay(advances: boolean): number {
    return Math.min(Math.max(SUMMARY_DEBOUNCE_MS, (advances ? 2 : 20) * this.lastPassMs), MAX_STATUS_DELAY_MS);
  }

  /** True when nothing is queued, no pass is due and nothing a pass started is still going on. */
  get isIdle(): boolean {
    return !this.scheduled && !this.busy();
  }

  /** Resolves once no work is queued (no pass pending, nothing a pass started still going on). */
  idle(): Promise<void> {
    if (this.isIdle) return Promise.resolve();
    // Whoever waits (a stopping hub, the API's ?wait) should not sit out a paced status pass.
    if (this.timer) this.schedule(0);
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Called when work a pass started ends (the last spec written). */
  wakeIdle(): void {
    if (this.isIdle) for (const w of this.idleWaiters.splice(0)) w();
  }

  /**
   * Runs a pass after `delayMs` (at once for 0). A pass already due sooner stands; one due later
   * (a paced status pass) is brought forward.
   */
  schedule(delayMs = 0): void {
    const due = performance.now() + delayMs;
    if (this.scheduled) {
      if (this.running || due >= this.dueAt) return;
      clearTimeout(this.timer);
      clearImmediate(this.immediate);
      this.timer = undefined;
      this.immediate = undefined;
    }
    this.scheduled = true;
    this.dueAt = due;
    if (delayMs > 0) this.timer = setTimeout(() => this.run(), delayMs);
    else this.immediate = setImmediate(() => this.run());
  }

  private run(): void {
    this.timer = undefined;
    this.immediate = undefined;
    this.running = true;
    const work = { placements: this.placements, edges: this.edges };
    this.placements = new Set();
    this.edges = new Set();
    const t0 = performance.now();
    try {
      this.pass(work);
      this.lastPassMs = performance.now() - t0;
    } catch (err) {
      log.error({ err }, 'scheduling pass failed; it will run again on the next change');
    } finally {
      this.running = false;
      this.scheduled = false;
      if (this.placements.size || this.edges.size) this.schedule();
      else this.wakeIdle();
    }
  }
}
