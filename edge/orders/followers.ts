/**
 * @module The edge's side of the orders the hub sends (core/orders/): one follower per kind acts on
 * its part of the spec document (the reconciler on the workloads, edge/upgrade/orders.ts on an
 * agent upgrade, edge/data/delivery.ts on DataObjects, edge/images/staging.ts on image staging).
 * The agent (edge/agent.ts) registers them and checks them all after each change of the spec and
 * at its start, and tells them when the connection to the hub is up: a new kind registers one more
 * follower.
 */
import { createLogger } from '../../core/logger.js';

const log = createLogger('edge:orders');

export interface SpecFollower {
  /** The kind of order it follows (core/orders/kinds.ts), for the logs. */
  readonly kind: string;
  /** Reads its part of the spec now and acts on what changed; cheap when nothing did. Never throws. */
  check(): void;
  /** The connection to the hub is up: what waited for it goes on (fetches over the connection). */
  connected?(): void;
}

export class SpecFollowers {
  private readonly followers: SpecFollower[] = [];

  add(f: SpecFollower): void {
    this.followers.push(f);
  }

  /** Every follower checks its part (each in its own turn, so one's work does not delay the others'). */
  checkAll(): void {
    for (const f of this.followers) this.run(f, () => f.check());
  }

  /** The connection to the hub is up: every follower that waits on it goes on. */
  connected(): void {
    for (const f of this.followers) if (f.connected) this.run(f, () => f.connected!());
  }

  private run(f: SpecFollower, fn: () => void): void {
    setImmediate(() => {
      try {
        fn();
      } catch (err) {
        log.error({ err, kind: f.kind }, 'following an order failed; checked again at the next change');
      }
    });
  }
}
