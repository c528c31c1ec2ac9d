/**
 * @module One pass at a time, the loop of the spec's followers that act on an order in passes (the
 * cluster follower, data deliveries, image staging): `check()` starts a pass, or asks for another
 * one right after the running one (spec changes that come during a pass coalesce into one more); `later(ms)` schedules the next check (the supervision
 * tick, a retry after a failure); `stop()` lets the running pass end and starts none after it.
 */
/** What `untilStopped` rejects with once the passes stop: not a failure of the order, nothing to report. */
export class PassStopped extends Error {
  constructor() {
    super('stopping: the pass was left');
    this.name = 'PassStopped';
  }
}

export class OnePassAtATime {
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pass: () => Promise<void>,
    /** A pass that threw (it is retried by the next check). */
    private readonly failed: (err: unknown) => void,
  ) {}

  get isStopped(): boolean {
    return this.stopped;
  }

  check(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch((err: unknown) => (err instanceof PassStopped ? undefined : this.failed(err)))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.check();
        }
      });
  }

  later(ms: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => this.check(), ms);
    this.timer.unref();
  }

  /**
   * `p`, or a PassStopped rejection as soon as `stop()` is called: what a pass awaits that only a
   * connection can end (a blob fetch resolves once the blob is in, across reconnects) must not hold
   * up the agent's stop, which awaits the running pass.
   */
  untilStopped<T>(p: Promise<T>): Promise<T> {
    if (this.stopped) return Promise.reject(new PassStopped());
    const signal = this.stopping.signal;
    return new Promise<T>((resolve, reject) => {
      const onStop = () => reject(new PassStopped());
      signal.addEventListener('abort', onStop, { once: true });
      p.then(
        (v) => {
          signal.removeEventListener('abort', onStop);
          resolve(v);
        },
        (err: unknown) => {
          signal.removeEventListener('abort', onStop);
          reject(err as Error);
        },
      );
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    clearTimeout(this.timer);
    await this.running;
  }
}
