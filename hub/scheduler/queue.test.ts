/** The paced work queue on fake timers: what runs in one pass, and when. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SUMMARY_DEBOUNCE_MS } from '../../core/durations.js';
import { MAX_STATUS_DELAY_MS, WorkQueue, type Work } from './queue.js';

let passes: { placements: string[]; edges: string[] }[];
let queue: WorkQueue;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
  passes = [];
  queue = new WorkQueue((w: Work) => passes.push({ placements: [...w.placements], edges: [...w.edges] }));
});

afterEach(() => {
  vi.useRealTimers();
});

describe('WorkQueue', () => {
  it('runs a burst of changes as one pass on the next turn of the event loop', async () => {
    queue.addPlacement('default/a');
    queue.addPlacement('default/b');
    queue.addEdge('e1');
    expect(passes).toEqual([]);
    await vi.advanceTimersByTimeAsync(0);
    expect(passes).toEqual([{ placements: ['default/a', 'default/b'], edges: ['e1'] }]);
    await expect(queue.idle()).resolves.toBeUndefined();
  });

  it('paces status work by the last pass, and an operator change brings it forward', async () => {
    queue.lastPassMs = 100;
    expect(queue.statusDelay(true)).toBe(SUMMARY_DEBOUNCE_MS);
    expect(queue.statusDelay(false)).toBe(2_000);
    queue.lastPassMs = 4_000;
    expect(queue.statusDelay(true)).toBe(MAX_STATUS_DELAY_MS);

    queue.addPlacement('default/a', queue.statusDelay(false));
    await vi.advanceTimersByTimeAsync(MAX_STATUS_DELAY_MS - 1);
    expect(passes).toEqual([]);
    queue.addPlacement('default/b');
    await vi.advanceTimersByTimeAsync(0);
    expect(passes).toEqual([{ placements: ['default/a', 'default/b'], edges: [] }]);
  });

  it('a later status delay never pushes back a pass already due sooner', async () => {
    queue.addPlacement('default/a', 300);
    queue.addPlacement('default/b', 5_000);
    await vi.advanceTimersByTimeAsync(300);
    expect(passes).toEqual([{ placements: ['default/a', 'default/b'], edges: [] }]);
  });

  it('idle() does not sit out a paced pass, and waits for what a pass started', async () => {
    let busy = true;
    queue = new WorkQueue(
      (w) => passes.push({ placements: [...w.placements], edges: [...w.edges] }),
      () => busy,
    );
    queue.addPlacement('default/a', MAX_STATUS_DELAY_MS);
    let idle = false;
    void queue.idle().then(() => (idle = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(passes).toHaveLength(1);
    expect(idle).toBe(false);
    busy = false;
    queue.wakeIdle();
    await vi.advanceTimersByTimeAsync(0);
    expect(idle).toBe(true);
  });

  it('work added during a pass runs in a pass of its own, and a failing pass does not stop the queue', async () => {
    let first = true;
    queue = new WorkQueue((w) => {
      passes.push({ placements: [...w.placements], edges: [...w.edges] });
      if (first) {
        first = false;
        queue.addPlacement('default/again');
        throw new Error('boom');
      }
    });
    queue.addPlacement('default/a');
    await vi.runAllTimersAsync();
    expect(passes.map((p) => p.placements)).toEqual([['default/a'], ['default/again']]);
  });
});
