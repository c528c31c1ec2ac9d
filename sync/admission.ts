/**
 * @module Admission of the hub's sync upgrades (sync/http-upgrade.ts): a bounded number of
 * handshakes at once, a FIFO line behind them, 503 with a paced Retry-After beyond the line, and a
 * reconnect token bucket per edge. After a hub restart thousands of edges return at once; admitting
 * them all made every handshake slow enough to time out and be retried, which fed the storm
 * (docs/benchmarks.md).
 */
import type { Duplex } from 'node:stream';
import { RECONNECT_BURST, RECONNECT_REFILL_MS } from '../core/durations.js';
import { OutpostError } from '../core/errors.js';
import { rawErrorResponse } from '../core/http.js';
import type { EdgeName } from '../core/ids.js';

/**
 * Answers a refused upgrade with the error's status and body (core/http.ts) and destroys the
 * socket once the answer is written (or after a second): a client that reads its 401 and never
 * closes must not keep the socket, nor anything counted against it, open.
 */
export function answerAndDestroy(
  socket: Duplex,
  err: OutpostError,
  headers: Record<string, string | number> = {},
): void {
  if (socket.destroyed) return;
  const kill = setTimeout(() => socket.destroy(), 1_000);
  kill.unref();
  socket.end(rawErrorResponse(err, headers), () => {
    clearTimeout(kill);
    socket.destroy();
  });
}

export class HandshakeAdmission {
  private pending = 0;
  /** The time the last refused upgrade was told to come back at (Retry-After pacing). */
  private nextSlotAt = 0;
  /** Handshakes completed in the current and the previous second (for Retry-After). */
  private rate = { second: 0, current: 0, previous: 0 };
  /** The most handshakes completed in one whole second since the server started. */
  private peakRate = 0;
  /** Upgrades waiting for a handshake slot, oldest first. */
  private readonly queued = new Map<() => void, Duplex>();
  /** Per edge: reconnect tokens left and when they were counted (reconnectWaitMs). */
  private readonly reconnects = new Map<EdgeName, { tokens: number; at: number }>();

  /**
   * `maxPending` handshakes at once; `maxQueued` upgrades in line behind them (SyncServerOptions
   * `maxPendingHandshakes`, `maxQueuedUpgrades`).
   */
  constructor(private readonly limits: { maxPending: number; maxQueued: number }) {}

  /**
   * Per edge, reconnects are a token bucket (RECONNECT_BURST, one more every RECONNECT_REFILL_MS):
   * a reconnect loop wrote ~440 rows a second into the hub's events and connections. Returns how
   * long the edge must wait, 0 when it may connect now (and takes the token).
   */
  reconnectWaitMs(edge: EdgeName): number {
    const now = Date.now();
    const b = this.reconnects.get(edge) ?? { tokens: RECONNECT_BURST, at: now };
    b.tokens = Math.min(RECONNECT_BURST, b.tokens + (now - b.at) / RECONNECT_REFILL_MS);
    b.at = now;
    if (this.reconnects.size >= 100_000 && !this.reconnects.has(edge)) this.reconnects.clear();
    this.reconnects.set(edge, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - b.tokens) * RECONNECT_REFILL_MS);
  }

  /** The socket gave up (its deadline passed): out of the line. */
  dropQueued(socket: Duplex): void {
    for (const [resume, s] of this.queued) if (s === socket) this.queued.delete(resume);
  }

  /**
   * A handshake slot for `socket` (`start` is called now with `done`, which frees the slot: call it
   * when the handshake ends, or it is called when the socket closes), a place in line (`start` is
   * called when a slot frees), or 503 with Retry-After when the line is full. `deadline` is
   * cleared once the socket has a slot or its answer.
   */
  admit(socket: Duplex, deadline: NodeJS.Timeout, start: (done: () => void) => void, fromQueue = false): void {
    // Newcomers line up behind the queue; a queued upgrade handed a free slot goes straight in.
    if (this.pending >= this.limits.maxPending || (!fromQueue && this.queued.size > 0)) {
      if (this.queued.size >= this.limits.maxQueued) {
        // Each refused edge is given its own future slot: after the line ahead has drained, one
        // per 1/rate seconds at the rate handshakes complete now. Refused edges then come back
        // paced as the hub can take them, not all together once the line is empty (with a flat
        // Retry-After the hub sat idle between waves while 10,000 edges waited).
        const now = Date.now();
        const rate = this.handshakeRate();
        this.nextSlotAt = Math.max(this.nextSlotAt, now + (this.queued.size / rate) * 1000) + 1000 / rate;
        const retry = Math.min(60, Math.max(1, Math.round((this.nextSlotAt - now) / 1000)));
        clearTimeout(deadline);
        answerAndDestroy(
          socket,
          new OutpostError('unavailable', `the hub is busy admitting other edges: come back in ${retry} s`),
          { 'Retry-After': retry },
        );
        return;
      }
      const resume = () => {
        this.queued.delete(resume);
        if (!socket.destroyed) this.admit(socket, deadline, start, true);
      };
      this.queued.set(resume, socket);
      socket.once('close', () => this.queued.delete(resume));
      return;
    }
    clearTimeout(deadline);
    this.pending++;
    let counted = true;
    const done = () => {
      if (counted) {
        this.pending--;
        this.countHandshake();
        // Hand the slot to the oldest waiting upgrade.
        const next = this.queued.keys().next().value as (() => void) | undefined;
        next?.();
      }
      counted = false;
    };
    socket.once('close', done);
    start(done);
  }

  private countHandshake(): void {
    const sec = Math.floor(Date.now() / 1000);
    if (sec !== this.rate.second) {
      this.peakRate = Math.max(this.peakRate, this.rate.current);
      this.rate = { second: sec, current: 0, previous: sec === this.rate.second + 1 ? this.rate.current : 0 };
    }
    this.rate.current++;
  }

  /**
   * Handshakes per second the hub can take: the best whole second so far, the last one, or the
   * current one extrapolated (at least 50, so an idle moment does not inflate Retry-After). Right
   * after a restart no second is complete yet: counting the current second's handshakes as a
   * whole second's made the first refused edges of a 10,000-edge storm come back 10-26 s later
   * while the hub, at ~1,500 handshakes a second, had drained its line after 6 s and sat idle
   * (docs/benchmarks.md, fourth round). An edge told to come back too early only gets another
   * 503 with a better estimate.
   */
  private handshakeRate(): number {
    const now = Date.now();
    const elapsed = this.rate.second === Math.floor(now / 1000) ? Math.max(0.25, (now % 1000) / 1000) : 1;
    return Math.max(50, this.peakRate, this.rate.previous, this.rate.current / elapsed);
  }
}
