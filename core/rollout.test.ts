import { describe, expect, it } from 'vitest';
import {
  contentSetKey,
  edgeOutcome,
  planRollout,
  resolveMaxUnavailable,
  type RolloutEdge,
  type RolloutInput,
} from './rollout.js';

const NEW = 'k2';
const OLD = 'k1';

/** An edge running the old content, ready on it. */
const old = (edge: string, extra: Partial<RolloutEdge> = {}): RolloutEdge => ({
  edge,
  targetKey: NEW,
  writtenKey: OLD,
  observed: { key: OLD, state: 'ready' },
  ...extra,
});
const written = (
  edge: string,
  state?: 'ready' | 'progressing' | 'failed',
  extra: Partial<RolloutEdge> = {},
): RolloutEdge => ({
  edge,
  targetKey: NEW,
  writtenKey: NEW,
  observed: state ? { key: NEW, state } : { key: OLD, state: 'ready' },
  ...extra,
});

const plan = (
  edges: RolloutEdge[],
  rollout: RolloutInput['rollout'] = {},
  acknowledgedFailures?: Record<string, string>,
) => planRollout({ placement: 'web', rollout, edges, acknowledgedFailures });

describe('resolveMaxUnavailable', () => {
  const cases: [number | string | undefined, number, number][] = [
    [undefined, 10, 2], // the default, 25%
    ['100%', 10, 10],
    ['25%', 10, 2],
    ['25%', 3, 1], // 0.75 rounds down to 0, raised to 1
    ['0%', 10, 1],
    [0, 10, 1],
    [3, 10, 3],
    [50, 10, 10],
    ['150%', 4, 4],
    ['50%', 0, 1],
  ];
  it.each(cases)('%j of %i edges is %i', (v, total, want) => {
    expect(resolveMaxUnavailable(v, total)).toBe(want);
  });

  it('rejects a malformed value with the fix', () => {
    expect(() => resolveMaxUnavailable('25', 4)).toThrow(
      'invalid maxUnavailable "25": use a number of edges or a percentage like "25%"',
    );
  });
});

describe('planRollout', () => {
  it('updates a quarter of the edges at a time with the defaults, at least one', () => {
    const p = plan([old('e2'), old('e1'), old('e3')]);
    expect(p.update).toEqual(['e1']);
    expect(p.phase).toBe('Progressing');
    expect(p.counts).toEqual({
      total: 3,
      updated: 1,
      ready: 0,
      failed: 0,
      pending: 2,
      held: 0,
      skipped: 0,
      blocked: 0,
      waiting: 0,
    });
    expect(p.maxUnavailable).toBe(1);
  });

  it('updates everything at once with maxUnavailable 100%', () => {
    const p = plan([old('e2'), old('e1'), old('e3')], { maxUnavailable: '100%' });
    expect(p.update).toEqual(['e1', 'e2', 'e3']);
    expect(p.reason).toBe('3 of 3 edges updated, 0 ready; waiting for e1, e2, e3; at most 3 unavailable at once');
  });

  it('writes a first batch of maxUnavailable edges, by name', () => {
    const p = plan([old('e4'), old('e3'), old('e2'), old('e1')], { maxUnavailable: '50%' });
    expect(p.update).toEqual(['e1', 'e2']);
    expect(p.maxUnavailable).toBe(2);
    expect(p.counts).toEqual({
      total: 4,
      updated: 2,
      ready: 0,
      failed: 0,
      pending: 2,
      held: 0,
      skipped: 0,
      blocked: 0,
      waiting: 0,
    });
  });

  it('only fills the budget left by edges still in flight', () => {
    const p = plan([written('e1', 'ready'), written('e2', 'progressing'), old('e3'), old('e4'), old('e5')], {
      maxUnavailable: 2,
    });
    expect(p.update).toEqual(['e3']);
    expect(p.counts).toEqual({
      total: 5,
      updated: 3,
      ready: 1,
      failed: 0,
      pending: 2,
      held: 0,
      skipped: 0,
      blocked: 0,
      waiting: 0,
    });
  });

  it('counts an edge written but not yet reporting on the new key as in flight', () => {
    const p = plan([written('e1'), old('e2')], { maxUnavailable: 1 });
    expect(p.update).toEqual([]);
    expect(p.phase).toBe('Progressing');
    expect(p.reason).toBe('1 of 2 edges updated, 0 ready; waiting for e1; at most 1 unavailable at once');
  });

  it('prefers online edges and names offline ones that hold the budget', () => {
    const p = plan([old('a', { online: false }), old('b'), old('c')], { maxUnavailable: 2 });
    expect(p.update).toEqual(['b', 'c']);
    const q = plan([written('a', undefined, { online: false }), old('b')], { maxUnavailable: 1 });
    expect(q.update).toEqual([]);
    expect(q.reason).toContain('waiting for a (offline)');
  });

  it('still writes to offline edges once online ones are done, so they catch up on reconnect', () => {
    const p = plan([written('a', 'ready'), old('b', { online: false })], { maxUnavailable: 1 });
    expect(p.update).toEqual(['b']);
  });

  it('treats a brand-new edge like any other pending edge', () => {
    const fresh: RolloutEdge = { edge: 'new', targetKey: NEW };
    const p = plan([written('e1', 'progressing'), fresh], { maxUnavailable: 1 });
    expect(p.update).toEqual([]);
    expect(plan([written('e1', 'ready'), fresh], { maxUnavailable: 1 }).update).toEqual(['new']);
  });

  it('writes edges already ready on the target at no cost, even when the budget is used up', () => {
    const p = plan(
      [
        written('e1', 'progressing'),
        { edge: 'e2', targetKey: NEW, writtenKey: OLD, observed: { key: NEW, state: 'ready' } },
        old('e3'),
      ],
      {
        maxUnavailable: 1,
      },
    );
    expect(p.update).toEqual(['e2']);
    expect(p.counts).toEqual({
      total: 3,
      updated: 2,
      ready: 1,
      failed: 0,
      pending: 1,
      held: 0,
      skipped: 0,
      blocked: 0,
      waiting: 0,
    });
  });

  it('is Complete when every edge is ready on its target, each edge with its own key', () => {
    const p = plan([
      { edge: 'e1', targetKey: 'a', writtenKey: 'a', observed: { key: 'a', state: 'ready' } },
      { edge: 'e2', targetKey: 'b', writtenKey: 'b', observed: { key: 'b', state: 'ready' } },
    ]);
    expect(p).toMatchObject({ update: [], phase: 'Complete', reason: 'all 2 edges ready on the new version' });
  });

  it('is Pending, not Complete, when no edge is selected', () => {
    expect(plan([])).toMatchObject({ phase: 'Pending', reason: expect.stringMatching(/^no edge selected/) });
  });

  it('counts an edge paused on site as held: written at no cost, never waited for, never Complete', () => {
    const held = { edge: 'e2', targetKey: NEW, writtenKey: OLD, observed: { key: OLD, state: 'paused' as const } };
    const p = plan([written('e1', 'ready'), held], { maxUnavailable: 1 });
    expect(p.update).toEqual(['e2']);
    expect(p.phase).toBe('Paused');
    expect(p.reason).toMatch(/held on e2 \(paused on site or stopped by a remote action/);
    // With the reasons the edges gave: each named with its own, the first three.
    const because = (edge: string, why: string) => ({
      ...held,
      edge,
      observed: { ...held.observed, held: why },
    });
    const r = plan([
      because('e2', 'stopped by a remote action: `outpost edge action e2 start w` runs it again'),
      because('e3', 'paused on site: `outpost edge local resume w` there, or `outpost edge clear e3 w`, runs it again'),
      because('e4', 'x'),
      because('e5', 'y'),
    ]);
    expect(r.reason).toContain(
      "held on e2 (stopped by a remote action: `outpost edge action e2 start w` runs it again), e3 (paused on site: `outpost edge local resume w` there, or `outpost edge clear e3 w`, runs it again), e4 (x) and 1 more edge (each one's status says why)",
    );
    expect(p.counts).toMatchObject({ total: 2, ready: 1, held: 1, pending: 0 });
    // A held edge does not use the budget: e3 is written next to it.
    const q = plan([held, old('e3')], { maxUnavailable: 1 });
    expect(q.update).toEqual(['e2', 'e3']);
  });

  it('does not write an edge that waits for a precondition, names it, holds no budget and is never Complete', () => {
    const waits = old('e2', { waitingFor: ['package db ^1 Ready on it'] });
    const p = plan([written('e1', 'ready'), waits, old('e3')], { maxUnavailable: 1 });
    // e2 waits: the one unit of budget goes to e3, the next pending edge.
    expect(p.update).toEqual(['e3']);
    expect(p.phase).toBe('Progressing');
    expect(p.counts).toMatchObject({ waiting: 1, pending: 1, updated: 2 });
    expect(p.reason).toMatch(/waiting on e2 for package db \^1 Ready on it before writing the new version there/);
    // Everything else ready: still not Complete while e2 waits.
    expect(plan([written('e1', 'ready'), waits]).phase).toBe('Progressing');
    // The precondition met: e2 is written like any pending edge.
    expect(plan([written('e1', 'ready'), old('e2')]).update).toEqual(['e2']);
    // Already written (it was ready before the gate mattered): nothing to hold back.
    expect(plan([written('e2', 'ready', { waitingFor: ['x'] })]).phase).toBe('Complete');
  });

  it('skips edges offline longer than skipOfflineAfter and can complete without them', () => {
    const dead = old('e3', { online: false, offlineForMs: 600_000 });
    const recent = old('e4', { online: false, offlineForMs: 5_000 });
    const p = plan([written('e1', 'ready'), written('e2', 'ready'), dead], { skipOfflineAfter: '5m' });
    expect(p).toMatchObject({ update: [], phase: 'Complete' });
    expect(p.reason).toBe('all 2 edges ready on the new version; skipped 1 edge offline longer than 5m: e3');
    expect(p.counts).toMatchObject({ skipped: 1, pending: 0 });
    expect(plan([written('e1', 'ready'), recent], { skipOfflineAfter: '5m' }).phase).toBe('Progressing');
    expect(plan([written('e1', 'ready'), dead]).phase).toBe('Progressing');
    expect(() => plan([dead], { skipOfflineAfter: '5 minutes' })).toThrow(/invalid skipOfflineAfter/);
  });

  it('never calls an edge lacking a workload (held by another placement) ready', () => {
    const p = plan([written('e1', 'ready'), written('e2', 'ready', { blocked: ['web (placement dup)'] })]);
    expect(p.phase).toBe('Failed');
    expect(p.counts).toMatchObject({ ready: 1, blocked: 1 });
    expect(p.reason).toMatch(/blocked on e2 \(web \(placement dup\)\): another placement holds/);
    expect(plan([old('e1'), written('e2', 'ready', { blocked: ['web (placement dup)'] })]).phase).toBe('Progressing');
  });

  it('does not count a failure on the old key against the new version', () => {
    const p = plan(
      [{ edge: 'e1', targetKey: NEW, writtenKey: OLD, observed: { key: OLD, state: 'failed' } }, old('e2')],
      { maxUnavailable: 1 },
    );
    expect(p.update).toEqual(['e1']);
    expect(p.counts.failed).toBe(0);
  });

  it('pauses once failures reach the threshold and keeps updated edges updated', () => {
    const edges = [written('e1', 'failed'), written('e2', 'failed'), written('e3', 'ready'), old('e4'), old('e5')];
    const p = plan(edges, { maxUnavailable: '100%', failureThreshold: 2 });
    expect(p.update).toEqual([]);
    expect(p.phase).toBe('Paused');
    expect(p.reason).toBe(
      'paused: 2 edges failed on the new version (threshold 2): e1, e2; fix the workload or run `outpost rollout resume placement web` to go on anyway',
    );
    expect(p.counts).toEqual({
      total: 5,
      updated: 3,
      ready: 1,
      failed: 2,
      pending: 2,
      held: 0,
      skipped: 0,
      blocked: 0,
      waiting: 0,
    });
    expect(p.failures).toEqual({ e1: NEW, e2: NEW });
  });

  it('goes on below the threshold, with failed edges holding budget', () => {
    const p = plan([written('e1', 'failed'), old('e2'), old('e3'), old('e4')], {
      maxUnavailable: 2,
      failureThreshold: 2,
    });
    expect(p.update).toEqual(['e2']);
    expect(p.phase).toBe('Progressing');
    expect(p.reason).toBe('2 of 4 edges updated, 0 ready, 1 failed; waiting for e2; at most 2 unavailable at once');
  });

  it('continues after resume: acknowledged failures neither count nor hold budget', () => {
    const edges = [written('e1', 'failed'), old('e2'), old('e3')];
    expect(plan(edges, { maxUnavailable: 1 }).phase).toBe('Paused');
    const first = plan(edges, { maxUnavailable: 1 });
    const resumed = plan(edges, { maxUnavailable: 1 }, first.failures);
    expect(resumed.update).toEqual(['e2']);
    expect(resumed.phase).toBe('Progressing');
    expect(resumed.counts.failed).toBe(1);
  });

  it('forgets an acknowledgement when the target key changes', () => {
    const edges: RolloutEdge[] = [
      { edge: 'e1', targetKey: 'k3', writtenKey: 'k3', observed: { key: 'k3', state: 'failed' } },
      old('e2'),
    ];
    expect(plan(edges, {}, { e1: NEW }).phase).toBe('Paused');
  });

  it('is Failed when nothing is left to roll and some edges failed', () => {
    const p = plan([written('e1', 'failed'), written('e2', 'ready')], { failureThreshold: 5 });
    expect(p.phase).toBe('Failed');
    expect(p.reason).toBe('1 of 2 edges failed on the new version: e1');
    expect(plan([written('e1', 'failed'), written('e2', 'ready')]).phase).toBe('Failed');
  });

  it('writes nothing at all when paused, not even free updates', () => {
    const free: RolloutEdge = { edge: 'e2', targetKey: NEW, writtenKey: OLD, observed: { key: NEW, state: 'ready' } };
    const p = plan([old('e1'), free], { paused: true });
    expect(p.update).toEqual([]);
    expect(p.phase).toBe('Paused');
    expect(p.reason).toBe(
      'paused by user; 0 of 2 edges updated, 0 ready; run `outpost rollout resume placement web` to continue',
    );
    const done = plan([written('e1', 'ready')], { paused: true });
    expect(done.reason).toBe(
      'paused by user; the edge is up to date; run `outpost rollout resume placement web` to roll out later changes',
    );
  });

  it('lists at most five names', () => {
    const edges = Array.from({ length: 8 }, (_, i) => written(`e${i}`, 'failed')).concat([old('z')]);
    expect(plan(edges, { failureThreshold: 1 }).reason).toContain('e0, e1, e2, e3, e4 and 3 more;');
  });

  it('ignores duplicate edge entries', () => {
    expect(plan([old('e1'), old('e1')]).counts.total).toBe(1);
  });

  // Drives the planner against a simulated fleet where written edges become ready (or fail) one
  // step later, and checks the promise users rely on: never more than maxUnavailable down.
  it.each([
    [10, 3, []],
    [10, '25%', []],
    [7, 1, []],
    [12, '50%', ['e03']],
  ] as [number, number | string, string[]][])(
    'rolls %i edges with maxUnavailable %j, failing %j, within budget',
    (n, maxUnavailable, failing) => {
      const fleet = new Map<string, RolloutEdge>();
      for (let i = 0; i < n; i++) fleet.set(`e${String(i).padStart(2, '0')}`, old(`e${String(i).padStart(2, '0')}`));
      const budget = resolveMaxUnavailable(maxUnavailable, n);
      let last;
      for (let step = 0; step < 100; step++) {
        // Edges written in the previous step report.
        for (const e of fleet.values()) {
          if (e.writtenKey === NEW && e.observed?.key !== NEW)
            e.observed = { key: NEW, state: failing.includes(e.edge) ? 'failed' : 'ready' };
        }
        last = plan([...fleet.values()], { maxUnavailable, failureThreshold: 2 });
        for (const name of last.update) fleet.get(name)!.writtenKey = NEW;
        const down = [...fleet.values()].filter(
          (e) => e.writtenKey === NEW && !(e.observed?.key === NEW && e.observed.state === 'ready'),
        ).length;
        expect(down).toBeLessThanOrEqual(budget);
        if (last.phase === 'Complete' || last.phase === 'Failed') break;
      }
      expect(last!.phase).toBe(failing.length ? 'Failed' : 'Complete');
      expect(last!.counts.updated).toBe(n);
      expect(last!.counts.ready).toBe(n - failing.length);
    },
  );
});

describe('contentSetKey', () => {
  it('is the same for the same set in any order, and differs when one content key differs', () => {
    const a = contentSetKey([
      { workload: 'web', key: 'k1' },
      { workload: 'db', key: 'k2' },
    ]);
    expect(
      contentSetKey([
        { workload: 'db', key: 'k2' },
        { workload: 'web', key: 'k1' },
      ]),
    ).toBe(a);
    expect(
      contentSetKey([
        { workload: 'web', key: 'k1' },
        { workload: 'db', key: 'k3' },
      ]),
    ).not.toBe(a);
    expect(contentSetKey([{ workload: 'web', key: 'k1' }])).not.toBe(a);
  });
});

describe('edgeOutcome', () => {
  it('takes the first failed or held workload, else progressing if any is, else ready', () => {
    expect(edgeOutcome([])).toBe('ready');
    expect(edgeOutcome(['ready', 'ready'])).toBe('ready');
    expect(edgeOutcome(['ready', 'progressing'])).toBe('progressing');
    expect(edgeOutcome(['progressing', 'failed'])).toBe('failed');
    expect(edgeOutcome(['paused', 'failed'])).toBe('paused');
    expect(edgeOutcome(['failed', 'paused'])).toBe('failed');
  });
});
