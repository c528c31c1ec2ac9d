/** @module Logger factory: pino, one namespace per folder (`hub:api`, `edge:reconciler`). */
import pino from 'pino';

export type Logger = pino.Logger;

let root: pino.Logger | undefined;

function rootLogger(): pino.Logger {
  if (!root) {
    root = pino({
      level: process.env.OUTPOST_LOG_LEVEL ?? (process.env.VITEST ? 'silent' : 'info'),
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    });
  }
  return root;
}

/** Replace the root logger (tests capture logs, main sets the level from flags). */
export function setRootLogger(l: pino.Logger): void {
  root = l;
}

export function createLogger(ns: string, bindings: Record<string, unknown> = {}): Logger {
  return rootLogger().child({ ns, ...bindings });
}
