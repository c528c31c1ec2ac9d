/**
 * @module Batches of work that arrive over time, taken together for one costly step each (a round
 * trip to the hub's PostgreSQL: the credential checks of a reconnect storm's upgrades, its hellos).
 * How long a batch gathers adapts to the arrivals: a lone arrival waits `minMs` (an edge that
 * connects alone is not held up), and while they keep coming (the batch before had more than one,
 * taken within the last second) a batch gathers `maxMs`, so a storm's batches grow with the window.
 * Each batch costs the same few round trips whatever its size; a hub replica that sees a third of
 * the storm needs a window three times as long for batches as large (docs/benchmarks.md, issue #22).
 * With both at 0 a batch is what arrived in one turn of the event loop.
 */

export interface GatherWindow {
  minMs: number;
  maxMs: number;
  /**
   * A batch this large is taken at once: past it a larger batch saves next to nothing, and what
   * waits may hold a scarce slot (a handshake holds one of the sync server's admission slots while
   * it gathers: in a storm of 10,000, a 75 ms window without this bound slowed it by a third).
   */
  maxItems?: number;
}

/** Batches taken this soon after a busy one gather for `maxMs`. */
const BUSY_FOR_MS = 1_000;

/**
 * How long the next batch gathers, the one rule of this module: `minMs` for a lone arrival (it is
 * not held up), `maxMs` while arrivals keep coming (the batch before had more than one and was
 * taken within the last second). For batches taken by code of their own (the hub's deferred
 * PostgreSQL writes, the replicas' messages, the leader's status marks), and by Gatherer.
 */
export class GatherPace {
  private lastSize = 0;
  private lastAt = 0;

  constructor(private readonly window: GatherWindow) {}

  /** How long the next batch gathers. */
  get nextMs(): number {
    return this.lastSize > 1 && Date.now() - this.lastAt < BUSY_FOR_MS ? this.window.maxMs : this.window.minMs;
  }

  /** A batch of `size` was taken now. */
  taken(size: number): void {
    this.lastSize = size;
    this.lastAt = Date.now();
  }
}

export class Gatherer<T> {
  private items: T[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Taken at the end of this turn of the event loop (full, or no window). */
  private soon: NodeJS.Immediate | undefined;
  private readonly pace: GatherPace;

  constructor(
    private readonly take: (batch: T[]) => void,
    private readonly window: GatherWindow = { minMs: 0, maxMs: 0 },
  ) {
    this.pace = new GatherPace(window);
  }

  add(item: T): void {
    this.items.push(item);
    if (this.items.length === 1) {
      const ms = this.nextWindowMs;
      if (ms > 0) this.timer = setTimeout(this.flush, ms);
      else this.soon = setImmediate(this.flush);
    }
    if (this.window.maxItems && this.items.length >= this.window.maxItems && !this.soon) {
      clearTimeout(this.timer);
      this.soon = setImmediate(this.flush);
    }
  }

  /** How long the next batch would gather (for tests and logs). */
  get nextWindowMs(): number {
    return this.pace.nextMs;
  }

  private readonly flush = (): void => {
    clearTimeout(this.timer);
    clearImmediate(this.soon);
    this.timer = this.soon = undefined;
    const batch = this.items;
    this.items = [];
    this.pace.taken(batch.length);
    this.take(batch);
  };
}
