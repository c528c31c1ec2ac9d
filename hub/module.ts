/**
 * @module A part of the hub with a life of its own: what the composition root (hub/hub.ts) lists,
 * starts and stops. The list is in dependency order: a module comes after those it uses, so the
 * hub starts them in list order and stops them in reverse (a controller stops before the blobs it
 * reads, the edges' connections are told why before the tunnel and the auth they use go away).
 * What outlives every module (the sync server, the HTTP server, the scheduler, the store and the
 * database) closes after them (hub/shutdown.ts).
 *
 * A route file receives the module it serves (hub/api/app.ts), not the hub.
 *
 * @example
 * const modules: HubModule[] = [loop('blobs', blobs), loop('catalog', catalog)];
 * startModules(modules); // blobs, then catalog
 * await stopModules(modules, 'SIGTERM'); // catalog, then blobs
 */
import { createLogger } from '../core/logger.js';

const log = createLogger('hub');

export interface HubModule {
  /** Names it in the log when it fails to stop. */
  readonly name: string;
  /** Starts its loops and timers, once the whole hub is wired and before it listens. */
  start?(): void;
  /** Stops them; `why` (the signal, e.g.) is what the edges it disconnects are told. */
  stop?(why: string | undefined): void | Promise<void>;
}

/** A class of the hub with `start`/`stop` (a controller, a loop) as a module. */
export function loop(name: string, part: { start?(): void; stop?(): void | Promise<void> }): HubModule {
  return {
    name,
    ...(part.start ? { start: () => part.start!() } : {}),
    ...(part.stop ? { stop: () => part.stop!() } : {}),
  };
}

export function startModules(modules: readonly HubModule[]): void {
  for (const m of modules) m.start?.();
}

/** In reverse list order; one that fails to stop is logged and the rest still stop. */
export async function stopModules(modules: readonly HubModule[], why: string | undefined): Promise<void> {
  for (const m of [...modules].reverse()) {
    try {
      await m.stop?.(why);
    } catch (err) {
      log.warn({ err, module: m.name }, 'a hub module failed to stop; stopping the rest');
    }
  }
}
