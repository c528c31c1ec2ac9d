/** Observation and planning of one placement's rollout, from plain inputs (no tables, no hub). */
import { describe, expect, it } from 'vitest';
import { contentSetKey } from '../../core/rollout.js';
import { placementObject } from '../../test/fixtures/hub-state.js';
import type { EdgeLiveness } from '../state/edges.js';
import type { AssignedStatus, AssignmentKey } from '../state/assignments.js';
import { failedEdges, observeEdges, planPlacement, skipDelayMs, writtenKeyOf } from './rollout.js';
import type { Selection, Target } from './targets.js';

const NOW = 1_000_000;
const online: EdgeLiveness = { approved: true, enrolledAt: 0, connectedSince: NOW - 10, lastSeen: NOW - 10 };

const target = (workload: string, key: string): Target => ({ workload, revision: 1, manifests: [], key });

function selection(edges: string[], ts: Target[]): Selection {
  return {
    selected: edges,
    targets: new Map(edges.map((e) => [e, ts])),
    targetKeys: new Map(edges.map((e) => [e, contentSetKey(ts)])),
  };
}

const assigned = (edge: string, workload: string, key: string, generation = 1, error?: string): AssignmentKey => ({
  edge,
  workload,
  project: 'default',
  placement: 'web',
  revision: 1,
  contentKey: key,
  generation,
  ...(error ? { error } : {}),
});

const status = (rows: [edge: string, workload: string, gen: number, phase: string][]) =>
  new Map<string, AssignedStatus>(
    rows.map(([edge, workload, observedGeneration, phase]) => [
      `${edge}/${workload}`,
      { edge, workload, observedGeneration, phase },
    ]),
  );

function byEdge(as: AssignmentKey[]): Map<string, AssignmentKey[]> {
  const m = new Map<string, AssignmentKey[]>();
  for (const a of as) m.set(a.edge, [...(m.get(a.edge) ?? []), a]);
  return m;
}

describe('observeEdges', () => {
  it('tells written from pending, and ready, progressing, failed and held by the one rule', () => {
    const sel = selection(['a', 'b', 'c', 'd', 'e'], [target('web', 'new')]);
    const current = byEdge([
      assigned('a', 'web', 'new', 2),
      assigned('b', 'web', 'new', 2),
      assigned('c', 'web', 'new', 2),
      assigned('d', 'web', 'old', 1),
    ]);
    const edges = observeEdges({
      selection: sel,
      current,
      heldElsewhere: new Map(),
      status: status([
        ['a', 'web', 2, 'Ready'],
        ['b', 'web', 2, 'Failed'],
        ['c', 'web', 1, 'Failed'],
        ['d', 'web', 0, 'Paused'],
      ]),
      runtimes: new Map([
        ...['a', 'b', 'c', 'd'].map((e): [string, EdgeLiveness] => [e, online]),
        ['e', { approved: true, enrolledAt: NOW - 500 }],
      ]),
      now: NOW,
    });
    const key = sel.targetKeys.get('a')!;
    expect(edges.map((e) => [e.edge, e.writtenKey === key, e.observed?.state])).toEqual([
      ['a', true, 'ready'],
      ['b', true, 'failed'],
      ['c', true, 'progressing'],
      ['d', false, 'paused'],
      ['e', false, undefined],
    ]);
    // Never connected: offline since enrollment.
    expect(edges[4]).toMatchObject({ online: false, offlineForMs: 500 });
  });

  it('sets apart a workload another placement holds: the edge is blocked, its own part rolls out', () => {
    const sel = selection(['a', 'b'], [target('web', 'w1'), target('db', 'd1')]);
    const edges = observeEdges({
      selection: sel,
      current: byEdge([assigned('b', 'web', 'w1')]),
      heldElsewhere: new Map([
        ['a/web', 'other'],
        ['a/db', 'other'],
        ['b/db', 'other'],
      ]),
      status: status([['b', 'web', 1, 'Ready']]),
      runtimes: new Map([
        ['a', online],
        ['b', online],
      ]),
      now: NOW,
    });
    expect(edges[0]).toMatchObject({
      edge: 'a',
      targetKey: 'blocked',
      writtenKey: 'blocked',
      observed: { state: 'ready' },
    });
    expect(edges[0]!.blocked).toEqual(['web (placement other)', 'db (placement other)']);
    expect(edges[1]).toMatchObject({
      targetKey: contentSetKey([target('web', 'w1')]),
      writtenKey: contentSetKey([target('web', 'w1')]),
      observed: { state: 'ready' },
      blocked: ['db (placement other)'],
    });
  });
});

describe('resume and the planner use one key', () => {
  it('a failure acknowledged by resume lets a paused rollout go on (it would stay paused if the keys differed)', () => {
    const placement = placementObject('web', {
      workloads: ['web', 'db'],
      edges: ['a', 'b', 'c'],
      rollout: { maxUnavailable: 1, failureThreshold: 1 },
    });
    const ts = [target('web', 'w2'), target('db', 'd1')];
    const sel = selection(['a', 'b', 'c'], ts);
    const as = [
      assigned('a', 'db', 'd1', 1),
      assigned('a', 'web', 'w2', 2),
      assigned('b', 'db', 'd1', 1),
      assigned('b', 'web', 'w1', 1),
      assigned('c', 'db', 'd1', 1),
      assigned('c', 'web', 'w1', 1),
    ];
    const st = status([
      ['a', 'web', 2, 'Failed'],
      ['a', 'db', 1, 'Ready'],
      ['b', 'web', 1, 'Ready'],
      ['b', 'db', 1, 'Ready'],
      ['c', 'web', 1, 'Ready'],
      ['c', 'db', 1, 'Ready'],
    ]);
    const observe = () =>
      observeEdges({
        selection: sel,
        current: byEdge(as),
        heldElsewhere: new Map(),
        status: st,
        runtimes: new Map(['a', 'b', 'c'].map((e) => [e, online])),
        now: NOW,
      });
    const paused = planPlacement(placement, observe(), {}, []);
    expect(paused.phase).toBe('Paused');
    expect(paused.update).toEqual([]);

    const acknowledged = failedEdges(as, st);
    expect(acknowledged).toEqual({ a: writtenKeyOf(as.filter((x) => x.edge === 'a')) });
    expect(acknowledged.a).toBe(sel.targetKeys.get('a'));
    const resumed = planPlacement(placement, observe(), acknowledged, []);
    expect(resumed.phase).toBe('Progressing');
    expect(resumed.update).toEqual(['b']);
  });

  it('a spec error counts as a failure to acknowledge', () => {
    const as = [assigned('a', 'web', 'error:x', 1, 'missing label tier'), assigned('b', 'web', 'w1', 1)];
    expect(Object.keys(failedEdges(as, status([['b', 'web', 1, 'Ready']])))).toEqual(['a']);
  });
});

describe('planPlacement', () => {
  it('fails a placement naming a workload that is gone, saying which and what to do', () => {
    const placement = placementObject('web', { workloads: ['web', 'gone'], edges: ['a'] });
    const plan = planPlacement(placement, [], {}, ['gone']);
    expect(plan.phase).toBe('Failed');
    expect(plan.reason).toMatch(
      /^workload gone not found in project default: apply it or remove it from the placement; /,
    );
  });
});

describe('skipDelayMs', () => {
  it('is the time until the first awaited offline edge passes skipOfflineAfter', () => {
    const p = placementObject('web', { workloads: ['web'], edges: ['a'], rollout: { skipOfflineAfter: '1m' } });
    const e = (edge: string, offlineForMs?: number, ready = false) => ({
      edge,
      targetKey: 'k',
      online: offlineForMs === undefined,
      ...(offlineForMs === undefined ? {} : { offlineForMs }),
      ...(ready ? { observed: { key: 'k', state: 'ready' as const } } : {}),
    });
    expect(skipDelayMs(p, [e('a'), e('b', 20_000), e('c', 50_000), e('d', 59_000, true), e('x', 90_000)])).toBe(10_000);
    expect(skipDelayMs(p, [e('a')])).toBeUndefined();
    expect(skipDelayMs(placementObject('web', { workloads: ['web'], edges: ['a'] }), [e('b', 1)])).toBeUndefined();
  });
});
