/**
 * @module One pass at a time, the loop of the spec's followers that act on an order in passes (the
 * cluster follower, data deliveries, image staging): `check()` starts a pass, or asks for another
 * one right after the running one (spec changes that come during a pass coalesce into one more); `later(ms)` schedules the next check (the supervision
 * tick, a retry after a failure); `stop()` lets the running pass end and starts none after it.
 */
export class OnePassAtATime {
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
      .catch(this.failed)
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

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
