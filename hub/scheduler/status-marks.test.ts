/** Status marks on fake timers and the hub's tables in memory: which placements a status change queues, and when. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PG_GATHER } from '../../core/durations.js';
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { SqlAssignmentStore } from '../state/assignments.js';
import { GateWaits } from './gate-waits.js';
import { MAX_STATUS_DELAY_MS, WorkQueue, type Work } from './queue.js';
import type { RolloutStatus } from './rollout.js';
import { StatusMarks } from './status-marks.js';

let passes: string[][];
let store: SqlAssignmentStore;
let queue: WorkQueue;
let leading: boolean;
let rolloutStatus: Map<string, RolloutStatus>;
let waits: GateWaits;
let marks: StatusMarks;

const complete = (skipped = 0): RolloutStatus =>
  ({
    phase: 'Complete',
    reason: '',
    counts: { skipped },
    maxUnavailable: 1,
    paused: false,
  }) as unknown as RolloutStatus;

function assign(edge: string, placement: string): void {
  store.put({
    edge,
    workload: placement,
    project: 'default',
    placement,
    revision: 1,
    contentKey: 'k',
    generation: 1,
    manifests: [],
  });
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
  store = new SqlAssignmentStore(memoryHubState().db);
  passes = [];
  queue = new WorkQueue(
    (w: Work) => passes.push([...w.placements].sort()),
    () => marks.busy,
  );
  leading = true;
  rolloutStatus = new Map();
  waits = new GateWaits(store);
  marks = new StatusMarks(store, queue, { leading: () => leading, rolloutStatus, heldBack: new Set(), waits });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('StatusMarks', () => {
  it('queues, in one pass, the placements on the edges marked in one turn and those waiting on a gate there', async () => {
    assign('e1', 'a');
    assign('e2', 'b');
    assign('e3', 'c');
    waits.setWaiting('default/d', ['e2']);
    marks.add('e1', 'report');
    marks.add('e2', 'report');
    expect(marks.busy).toBe(true);
    await vi.advanceTimersByTimeAsync(MAX_STATUS_DELAY_MS);
    expect(marks.busy).toBe(false);
    expect(passes).toEqual([['default/a', 'default/b', 'default/d']]);
  });

  it('leaves a Complete rollout alone on a connect or disconnect, unless it skipped an edge; a report re-plans it', async () => {
    assign('e1', 'a');
    assign('e1', 'b');
    rolloutStatus.set('default/a', complete());
    rolloutStatus.set('default/b', complete(1));
    marks.add('e1', 'connectivity');
    await vi.advanceTimersByTimeAsync(MAX_STATUS_DELAY_MS);
    expect(passes).toEqual([['default/b']]);
    marks.add('e1', 'connectivity');
    marks.add('e1', 'report');
    await vi.advanceTimersByTimeAsync(MAX_STATUS_DELAY_MS);
    expect(passes[1]).toEqual(['default/a', 'default/b']);
  });

  it('does nothing on a process that does not plan, nor at the flush once leadership went', async () => {
    assign('e1', 'a');
    leading = false;
    marks.add('e1', 'report');
    expect(marks.busy).toBe(false);
    leading = true;
    marks.add('e1', 'report');
    leading = false;
    await vi.advanceTimersByTimeAsync(MAX_STATUS_DELAY_MS);
    expect(passes).toEqual([]);
  });

  it('with hub replicas, gathers a lone edge PG_GATHER.minMs and edges that keep coming PG_GATHER.maxMs', async () => {
    vi.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance', 'Date'],
    });
    for (const e of ['e1', 'e2', 'e3']) assign(e, 'a');
    marks.gather = true;
    marks.add('e1', 'report');
    await vi.advanceTimersByTimeAsync(PG_GATHER.minMs - 1);
    expect(marks.busy).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(marks.busy).toBe(false);
    // The batch before was one edge: this one gathers the short window too.
    marks.add('e1', 'report');
    marks.add('e2', 'report');
    await vi.advanceTimersByTimeAsync(PG_GATHER.minMs);
    expect(marks.busy).toBe(false);
    // Two came together: the next gathers the long window, as long as a second passes.
    marks.add('e3', 'report');
    await vi.advanceTimersByTimeAsync(PG_GATHER.maxMs - 1);
    expect(marks.busy).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(marks.busy).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    marks.add('e1', 'report');
    await vi.advanceTimersByTimeAsync(PG_GATHER.minMs);
    expect(marks.busy).toBe(false);
  });
});
