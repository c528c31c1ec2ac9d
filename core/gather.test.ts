/**
 * The adaptive gathering of core/gather.ts: a lone arrival waits the short window, a storm's
 * batches the long one, and a quiet second brings the short window back.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatherPace, Gatherer } from './gather.js';

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe('Gatherer', () => {
  it('waits minMs for a lone arrival and maxMs while arrivals keep coming', () => {
    const batches: number[][] = [];
    const g = new Gatherer<number>((b) => batches.push(b), { minMs: 10, maxMs: 75 });
    g.add(1);
    vi.advanceTimersByTime(9);
    expect(batches).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(batches).toEqual([[1]]);
    // A batch of one: the next still waits the short window.
    g.add(2);
    g.add(3);
    vi.advanceTimersByTime(10);
    expect(batches).toEqual([[1], [2, 3]]);
    // A batch of two taken just now: the next gathers the long window.
    expect(g.nextWindowMs).toBe(75);
    g.add(4);
    vi.advanceTimersByTime(10);
    g.add(5);
    vi.advanceTimersByTime(64);
    expect(batches).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(batches).toEqual([[1], [2, 3], [4, 5]]);
    // A second later the storm is over: short again.
    vi.advanceTimersByTime(1_000);
    expect(g.nextWindowMs).toBe(10);
  });

  it('takes a batch that reached maxItems at the end of the turn, without waiting for its window', () => {
    const batches: number[][] = [];
    const g = new Gatherer<number>((b) => batches.push(b), { minMs: 10, maxMs: 75, maxItems: 3 });
    for (const n of [1, 2, 3, 4]) g.add(n);
    expect(batches).toEqual([]);
    vi.advanceTimersByTime(0);
    expect(batches).toEqual([[1, 2, 3, 4]]);
    g.add(5);
    vi.advanceTimersByTime(74);
    expect(batches).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(batches).toEqual([[1, 2, 3, 4], [5]]);
  });

  it('takes what arrived in one turn of the event loop when both windows are 0', () => {
    const batches: string[][] = [];
    const g = new Gatherer<string>((b) => batches.push(b));
    g.add('a');
    g.add('b');
    expect(batches).toEqual([]);
    vi.runAllTicks();
    vi.advanceTimersByTime(0);
    expect(batches).toEqual([['a', 'b']]);
  });
});

describe('GatherPace', () => {
  it('gives minMs until a batch of more than one is taken, then maxMs for a second', () => {
    const pace = new GatherPace({ minMs: 10, maxMs: 40 });
    expect(pace.nextMs).toBe(10);
    pace.taken(1);
    expect(pace.nextMs).toBe(10);
    pace.taken(3);
    expect(pace.nextMs).toBe(40);
    vi.advanceTimersByTime(999);
    expect(pace.nextMs).toBe(40);
    vi.advanceTimersByTime(1);
    expect(pace.nextMs).toBe(10);
    // A lone batch after a busy one: short again at once.
    pace.taken(5);
    pace.taken(1);
    expect(pace.nextMs).toBe(10);
  });
});
