/**
 * @module Logger factory: pino, JSON lines, one namespace per folder (`hub:api`, `edge:reconciler`).
 *
 * Output goes to stdout, except under vitest, where it is dropped unless OUTPOST_TEST_LOG is set;
 * tests that assert on what was logged use `captureLogs()`.
 */
import pino from 'pino';

export type Logger = pino.Logger;

const captures = new Set<string[]>();
const toStdout = !process.env.VITEST || !!process.env.OUTPOST_TEST_LOG;
/** A one-shot command prints its own messages on stdout: its log lines go to stderr (cliLogging). */
let toStderr = false;

let root: pino.Logger | undefined;

function rootLogger(): pino.Logger {
  root ??= pino(
    {
      level: process.env.OUTPOST_LOG_LEVEL ?? 'info',
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    {
      write(line: string) {
        for (const c of captures) c.push(line);
        if (toStdout) (toStderr ? process.stderr : process.stdout).write(line);
      },
    },
  );
  return root;
}

/**
 * For a one-shot command (`outpost hub migrate`, `backup`, `restore`) whose messages are its
 * output: only warnings and errors are logged (unless OUTPOST_LOG_LEVEL says otherwise), on
 * stderr, so no JSON line falls among what it prints for the operator.
 */
export function cliLogging(): void {
  toStderr = true;
  if (!process.env.OUTPOST_LOG_LEVEL) rootLogger().level = 'warn';
}

export function createLogger(ns: string, bindings: Record<string, unknown> = {}): Logger {
  return rootLogger().child({ ns, ...bindings });
}

/** Collects every log line written from now until `stop()` (for tests). */
export function captureLogs(): { lines: string[]; parsed(): Record<string, unknown>[]; stop(): void } {
  const lines: string[] = [];
  captures.add(lines);
  return {
    lines,
    parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    stop: () => captures.delete(lines),
  };
}

/**
 * Rate-limits a log line: `emit` runs at most once per `intervalMs` and is told how many calls were
 * skipped since it last ran. For lines an attacker can trigger at will (refused connections).
 */
export function throttle(intervalMs: number): (emit: (suppressed: number) => void) => void {
  let last = -Infinity;
  let suppressed = 0;
  return (emit) => {
    const now = Date.now();
    if (now - last < intervalMs) {
      suppressed++;
      return;
    }
    last = now;
    const n = suppressed;
    suppressed = 0;
    emit(n);
  };
}
