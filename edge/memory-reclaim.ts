/**
 * @module Gives back the memory the edge agent's bursts leave behind (its start, a spec with new
 * workloads, a reconnect): once the V8 heap has grown by RECLAIM_GROWTH_BYTES since the last
 * collection and stopped growing, one memory-reducing full collection (V8's "last resort": it
 * compacts the heap and returns the freed pages). V8 itself collects the old generation only when
 * it reaches a limit that a quiet agent takes long to reach, so the garbage of a burst stayed
 * resident: measured with 20 workloads, RssAnon 45.5 MB before such a collection and 34.5 MB after
 * (36.7 MB a few seconds later; docs/benchmarks.md, footprint). A collection costs ~10-20 ms of CPU
 * and happens after bursts only: an idle agent's heap grows slowly.
 *
 * V8's `gc` is taken once, for this module alone: `--expose-gc` set at run time and the function
 * read from a new context (the global of the agent's own context stays as it is). The `outpost
 * edge` process runs it (main/edge-command.ts) unless OUTPOST_EDGE_TUNING=off; agents started in
 * a test process do not.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { RECLAIM_CHECK_MS } from '../core/durations.js';
import { createLogger } from '../core/logger.js';

const log = createLogger('edge:memory');

/** Heap growth since the last collection that makes one worth its CPU. */
export const RECLAIM_GROWTH_BYTES = 2 * 1024 * 1024;
/** Growth between two checks below this: the burst is over. */
export const RECLAIM_QUIET_BYTES = 256 * 1024;

type GcFunction = (opts: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * Whether to collect now: the heap (bytes used) grew by RECLAIM_GROWTH_BYTES since `baseline` (used
 * after the last collection) and by less than RECLAIM_QUIET_BYTES since the previous check.
 */
export function shouldReclaim(baseline: number, previous: number, used: number): boolean {
  return used - baseline >= RECLAIM_GROWTH_BYTES && used - previous < RECLAIM_QUIET_BYTES;
}

/** V8's gc, for this module; undefined when this V8 does not give it. */
function v8Gc(): GcFunction | undefined {
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc: unknown = vm.runInNewContext('gc');
    return typeof gc === 'function' ? (gc as GcFunction) : undefined;
  } catch {
    return undefined;
  }
}

const used = (): number => v8.getHeapStatistics().used_heap_size;

/** Checks every RECLAIM_CHECK_MS (an unref'd timer) and collects after bursts; `stop` ends it. */
export function startMemoryReclaim(): { stop(): void; collections(): number } {
  const gc = v8Gc();
  if (!gc) {
    log.warn('V8 gives no gc() here: the memory of bursts is returned only when V8 collects by itself');
    return { stop: () => undefined, collections: () => 0 };
  }
  // The agent's start is the first burst: collected once it settles.
  let baseline = 0;
  let previous = used();
  let collections = 0;
  const timer = setInterval(() => {
    const now = used();
    if (shouldReclaim(baseline, previous, now)) {
      gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
      collections++;
      baseline = used();
      log.debug({ before: now, after: baseline }, 'collected the garbage of a burst');
    } else if (now < baseline) baseline = now;
    previous = used();
  }, RECLAIM_CHECK_MS);
  timer.unref();
  return { stop: () => clearInterval(timer), collections: () => collections };
}
