/**
 * @module When the reconciler may apply a workload's content again after applies that settled
 * nothing: the apply threw, or the drift it put back (objects changed or removed on site) was
 * there again at the next pass. The first such attempt is not held back (it is the next pass, as
 * before); each further one on the same content waits twice as long as the one before, from the
 * reconcile period up to UNSETTLED_APPLY_MAX_MS (core/durations.ts). A pass that finds the workload
 * as desired, or new content from the hub, starts over.
 */
import { RECONCILE_PERIOD_MS, UNSETTLED_APPLY_MAX_MS } from '../core/durations.js';

interface Attempts {
  hash: string;
  /** Consecutive applies of this content that settled nothing. */
  count: number;
  nextAt: number;
  /** Why the last one settled nothing, and when the next may run (for the workload's status). */
  why: string | undefined;
}

/** The wait before the next apply after `count` applies of one content that settled nothing: 0, base, 2 base, 4 base... up to max. */
export function unsettledDelay(count: number, baseMs = RECONCILE_PERIOD_MS, maxMs = UNSETTLED_APPLY_MAX_MS): number {
  return count <= 1 ? 0 : Math.min(maxMs, baseMs * 2 ** (count - 2));
}

export class ApplyPacing {
  private readonly attempts = new Map<string, Attempts>();

  constructor(
    private readonly baseMs = RECONCILE_PERIOD_MS,
    private readonly maxMs = UNSETTLED_APPLY_MAX_MS,
  ) {}

  /**
   * Undefined when `name` at `hash` may be applied now; otherwise why it waits (for its status
   * message: the same until the next attempt, so waiting adds no report history).
   */
  holdBack(name: string, hash: string, now: number): string | undefined {
    const a = this.attempts.get(name);
    if (!a || a.hash !== hash || now >= a.nextAt) return undefined;
    return a.why;
  }

  /** What the status says of `name` after its last unsettled attempt (none after the first). */
  why(name: string): string | undefined {
    return this.attempts.get(name)?.why;
  }

  /**
   * Records an apply of `name` at `hash` that was needed although the content was applied before
   * (`error` when it threw; `drift` when it put back objects changed on site): one more attempt
   * that settled nothing if the one before was of the same content.
   */
  unsettled(name: string, hash: string, now: number, cause: { error?: string; drift?: string[] }): void {
    const prev = this.attempts.get(name);
    const count = prev && prev.hash === hash ? prev.count + 1 : 1;
    const delay = unsettledDelay(count, this.baseMs, this.maxMs);
    const what = cause.error
      ? `applying failed: ${cause.error}`
      : `changed on site again after it was put back: ${(cause.drift ?? []).join(', ')}; something on site keeps changing it`;
    const next = delay >= 1000 ? `${Math.round(delay / 1000)} s` : `${delay} ms`;
    const max = this.maxMs >= 60_000 ? `${Math.round(this.maxMs / 60_000)} min` : `${this.maxMs} ms`;
    this.attempts.set(name, {
      hash,
      count,
      nextAt: now + delay,
      why:
        count === 1
          ? cause.error && what
          : `${what} (attempt ${count}; the next in ${next}, twice as long each time up to ${max})`,
    });
  }

  /** `name` runs as desired (or is gone): its next trouble starts from the first attempt. */
  settled(name: string): void {
    this.attempts.delete(name);
  }
}
