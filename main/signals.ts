/**
 * @module How `outpost hub` and `outpost edge` run until they are told to stop: SIGINT or SIGTERM
 * closes the hub or the agent gracefully, once.
 */
import { createLogger } from '../core/logger.js';

const log = createLogger('main');

/** Runs until SIGINT/SIGTERM, then closes `thing` gracefully, telling it which signal. */
export function untilSignal(close: (signal: string) => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let closing = false;
    const stop = (sig: string) => {
      if (closing) return;
      closing = true;
      log.info({ signal: sig }, 'shutting down');
      close(sig).then(resolve, (err) => {
        log.error({ err }, 'error while shutting down');
        resolve();
      });
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}
