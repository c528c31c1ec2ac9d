/**
 * @module When the reconciler may apply a workload's content again after applies that settled
 * nothing: the apply threw, or the drift it put back (objects changed or removed on site) was
 * there again later. Each further attempt on the same content waits twice as long as the one
 * before, up to UNSETTLED_APPLY_MAX_MS (core/durations.ts): after a failed apply the next pass
 * tries again, then 5 s, 10 s, 20 s...; after drift was put back the next look at it waits a
 * reconcile period (a pass sooner could see the put-back before the runtime shows it), then 10 s,
 * 20 s... A pass that finds the workload as desired, or new content from the hub, starts over.
 */
import { RECONCILE_PERIOD_MS, UNSETTLED_APPLY_MAX_MS } from '../core/durations.js';

interface Attempts {
  hash: string;
  /** Consecutive applies of this content that settled nothing. */
  count: number;
  nextAt: number;
  /** Why the workload waits, and how long (its status message while held back). */
  waiting: string;
  /** What its status says right after the attempt: the error, or drift that came back; none for a first put-back. */
  shown: string | undefined;
}

/** The wait after `count` failed applies of one content: 0, base, 2 base, 4 base... up to max. */
export function unsettledDelay(count: number, baseMs = RECONCILE_PERIOD_MS, maxMs = UNSETTLED_APPLY_MAX_MS): number {
  return count <= 1 ? 0 : Math.min(maxMs, baseMs * 2 ** (count - 2));
}

function duration(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`;
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
    return a.waiting;
  }

  /** What the status says of `name` right after its last unsettled attempt. */
  why(name: string): string | undefined {
    return this.attempts.get(name)?.shown;
  }

  /**
   * Records an apply of `name` at `hash` that settled nothing yet: it threw (`error`), or it put
   * back `drift`. One more attempt in a row if the one before was of the same content.
   */
  unsettled(name: string, hash: string, now: number, cause: { error?: string; drift?: string[] }): void {
    const prev = this.attempts.get(name);
    const count = prev && prev.hash === hash ? prev.count + 1 : 1;
    // A put-back is looked at again a period later at the soonest: the runtime may not show it yet.
    const delay = unsettledDelay(cause.error ? count : count + 1, this.baseMs, this.maxMs);
    const drift = (cause.drift ?? []).join(', ');
    const what = cause.error
      ? `applying failed: ${cause.error}`
      : count === 1
        ? `changed on site: ${drift}; put back`
        : `changed on site again after it was put back: ${drift}; something on site keeps changing it`;
    const next = duration(delay);
    const paced = `${what} (attempt ${count}; the next in ${next}, twice as long each time up to ${duration(this.maxMs)})`;
    this.attempts.set(name, {
      hash,
      count,
      nextAt: now + delay,
      waiting: count === 1 ? `${what}; looking again in ${next}` : paced,
      shown: count === 1 ? (cause.error ? what : undefined) : paced,
    });
  }

  /** `name` runs as desired (or is gone): its next trouble starts from the first attempt. */
  settled(name: string): void {
    this.attempts.delete(name);
  }
}
