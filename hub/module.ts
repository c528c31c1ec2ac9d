/**
 * @module A part of the hub with a life of its own: what the composition root (hub/hub.ts) lists,
 * starts and stops. The list is in dependency order: a module comes after those it uses, so the
 * hub starts them in list order and stops them in reverse (a controller stops before the blobs it
 * reads, the edges' connections are told why before the tunnel and the auth they use go away).
 * What outlives every module (the sync server, the HTTP server, the scheduler, the store and the
 * database) closes after them (hub/shutdown.ts).
 *
 * A route file receives the module it serves (hub/api/app.ts), not the hub. What concerns several
 * modules goes to each through its hooks, in list order: an object written on this hub
 * (`onObjectChange`, hub/change-hooks.ts) and an edge decommissioned (`forgetEdge`,
 * hub/edges/lifecycle.ts). The kinds of order each module sends edges are one more list, the order
 * engine's (hub/orders/engine.ts), which is itself a module.
 *
 * @example
 * const modules = new HubModules([loop('blobs', blobs), loop('catalog', catalog)]);
 * modules.start(); // blobs, then catalog
 * modules.objectChanged(change); // each module's onObjectChange, in list order
 * await modules.stop('SIGTERM'); // catalog, then blobs
 */
import { createLogger } from '../core/logger.js';
import type { ObjectChange } from './objects.js';

const log = createLogger('hub');

export interface HubModule {
  /** Names it in the log when it fails to stop. */
  readonly name: string;
  /** Starts its loops and timers, once the whole hub is wired and before it listens. */
  start?(): void;
  /** Stops them; `why` (the signal, e.g.) is what the edges it disconnects are told. */
  stop?(why: string | undefined): void | Promise<void>;
  /** An object was written on this hub (apply, delete): what the module plans or shows from it. */
  onObjectChange?(change: ObjectChange): void;
  /** An edge was decommissioned: the module forgets what it keeps of it. */
  forgetEdge?(edge: string): void;
}

/** A class of the hub with `start`/`stop` (a controller, a loop) as a module. */
export function loop(name: string, part: { start?(): void; stop?(): void | Promise<void> }): HubModule {
  return {
    name,
    ...(part.start ? { start: () => part.start!() } : {}),
    ...(part.stop ? { stop: () => part.stop!() } : {}),
  };
}

/** The hub's modules in dependency order, and what reaches every one of them. */
export class HubModules {
  constructor(readonly list: readonly HubModule[]) {
    const names = new Set<string>();
    for (const m of list) {
      if (names.has(m.name)) throw new Error(`hub module ${m.name} listed twice`);
      names.add(m.name);
    }
  }

  start(): void {
    for (const m of this.list) m.start?.();
  }

  /** In reverse list order; one that fails to stop is logged and the rest still stop. */
  async stop(why: string | undefined): Promise<void> {
    for (const m of [...this.list].reverse()) {
      try {
        await m.stop?.(why);
      } catch (err) {
        log.warn({ err, module: m.name }, 'a hub module failed to stop; stopping the rest');
      }
    }
  }

  objectChanged(change: ObjectChange): void {
    for (const m of this.list) m.onObjectChange?.(change);
  }

  forgetEdge(edge: string): void {
    for (const m of this.list) m.forgetEdge?.(edge);
  }
}
