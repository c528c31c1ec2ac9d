import { describe, expect, it } from 'vitest';
import type { State } from './status.js';
import {
  readyColumn,
  stateFromReport,
  summarize,
  summarizeByEdge,
  workloadOutcome,
  type ReportFacts,
  type StatusEntry,
} from './summary.js';

const e = (edge: string, workload: string, state: State, reason?: string, object?: string): StatusEntry => ({
  edge,
  workload,
  state,
  reason,
  object,
});

describe('summarize', () => {
  it('is empty for no entries', () => {
    expect(summarize([])).toEqual({ total: 0, ready: 0, states: {}, broken: [] });
  });

  it('counts pairs, ready, states and the worst state', () => {
    const s = summarize([
      e('e1', 'web', 'Ready'),
      e('e2', 'web', 'Ready'),
      e('e3', 'web', 'Progressing'),
      e('e1', 'db', 'Paused'),
    ]);
    expect(s).toEqual({
      total: 4,
      ready: 2,
      states: { Ready: 2, Progressing: 1, Paused: 1 },
      worst: 'Paused',
      broken: [],
    });
    expect(readyColumn(s)).toBe('2/4');
  });

  it('counts a pair with several object entries once, at its worst state', () => {
    const s = summarize([
      e('e1', 'web', 'Ready', undefined, 'Pod/a'),
      e('e1', 'web', 'Failed', 'CrashLoop', 'Pod/b'),
      e('e2', 'web', 'Ready'),
    ]);
    expect(s.total).toBe(2);
    expect(s.ready).toBe(1);
    expect(s.states).toEqual({ Failed: 1, Ready: 1 });
    expect(s.broken).toEqual([{ edge: 'e1', workload: 'web', object: 'Pod/b', reason: 'CrashLoop' }]);
  });

  it('lists broken entries worst first, then by edge, workload and object', () => {
    const s = summarize([
      e('e2', 'web', 'Stale', 'edge offline for 3m, last known Ready'),
      e('e9', 'web', 'Degraded', '1 of 2 replicas ready'),
      e('e1', 'web', 'Failed', 'image pull failed'),
      e('e5', 'web', 'Error', 'edge "e5" has no label "region"'),
      e('e1', 'db', 'Failed', 'exit 1', 'Pod/db-b'),
      e('e1', 'db', 'Failed', 'exit 2', 'Pod/db-a'),
      e('e0', 'web', 'Paused'),
      e('e0', 'db', 'Pending'),
      e('e0', 'api', 'Progressing'),
    ]);
    expect(s.broken.map((b) => `${b.edge}/${b.workload}${b.object ? `/${b.object}` : ''}: ${b.reason}`)).toEqual([
      'e5/web: edge "e5" has no label "region"',
      'e1/db/Pod/db-a: exit 2',
      'e1/db/Pod/db-b: exit 1',
      'e1/web: image pull failed',
      'e9/web: 1 of 2 replicas ready',
      'e2/web: edge offline for 3m, last known Ready',
    ]);
    expect(s.worst).toBe('Error');
  });

  it('caps the broken list but keeps every state counted', () => {
    const entries = Array.from({ length: 25 }, (_, i) => e(`e${String(i).padStart(2, '0')}`, 'web', 'Failed', 'boom'));
    const s = summarize(entries, 3);
    expect(s.broken.map((b) => b.edge)).toEqual(['e00', 'e01', 'e02']);
    expect(s.states.Failed).toBe(25);
    expect(summarize(entries).broken).toHaveLength(10);
    expect(summarize(entries, 0).broken).toEqual([]);
  });

  it('gives a broken entry without a reason a visible one', () => {
    expect(summarize([e('e1', 'web', 'Degraded')]).broken[0].reason).toBe('Degraded: no reason reported');
  });
});

describe('summarizeByEdge', () => {
  it('gives each edge its READY x/y', () => {
    const by = summarizeByEdge([
      e('e2', 'web', 'Ready'),
      e('e1', 'web', 'Ready'),
      e('e1', 'db', 'Failed', 'exit 1'),
      e('e1', 'cache', 'Ready'),
    ]);
    expect(Object.keys(by)).toEqual(['e1', 'e2']);
    expect(readyColumn(by.e1)).toBe('2/3');
    expect(by.e1.worst).toBe('Failed');
    expect(readyColumn(by.e2)).toBe('1/1');
  });
});

describe('stateFromReport', () => {
  const cases: [string, ReportFacts, { state: State; reason?: string }][] = [
    [
      'a spec error wins',
      {
        generation: 2,
        specError: 'workload web: edge "e1" has no label "region"',
        online: false,
        lastSeenAgoMs: 1,
        reported: { phase: 'Ready', observedGeneration: 2 },
      },
      { state: 'Error', reason: 'workload web: edge "e1" has no label "region"' },
    ],
    [
      'never reported',
      { generation: 1, online: true, lastSeenAgoMs: 0 },
      { state: 'Pending', reason: 'waiting for the edge to report' },
    ],
    [
      'never connected',
      { generation: 1, online: false },
      { state: 'Pending', reason: 'waiting for the edge to connect for the first time' },
    ],
    [
      'older generation',
      { generation: 3, online: true, lastSeenAgoMs: 0, reported: { phase: 'Ready', observedGeneration: 2 } },
      { state: 'Progressing', reason: 'edge is applying generation 3 (last reported Ready on generation 2)' },
    ],
    [
      'ready',
      { generation: 3, online: true, lastSeenAgoMs: 0, reported: { phase: 'Ready', observedGeneration: 3 } },
      { state: 'Ready' },
    ],
    [
      'ahead of the hub counts as current',
      { generation: 3, online: true, reported: { phase: 'Ready', observedGeneration: 4 } },
      { state: 'Ready' },
    ],
    [
      'offline, last known Ready',
      { generation: 2, online: false, lastSeenAgoMs: 180_000, reported: { phase: 'Ready', observedGeneration: 2 } },
      { state: 'Stale', reason: 'edge offline for 3m, last known Ready' },
    ],
    [
      'offline on an older generation',
      { generation: 3, online: false, lastSeenAgoMs: 7_200_000, reported: { phase: 'Ready', observedGeneration: 2 } },
      {
        state: 'Stale',
        reason: 'edge offline for 2h, last known Ready on generation 2 (generation 3 not applied yet)',
      },
    ],
    [
      'offline, never reported',
      { generation: 1, online: false, lastSeenAgoMs: 45_000 },
      { state: 'Stale', reason: 'edge offline for 45s, no status reported yet' },
    ],
    [
      'offline hides a failure only behind its reason',
      { generation: 1, online: false, lastSeenAgoMs: 90_000, reported: { phase: 'Failed', observedGeneration: 1 } },
      { state: 'Stale', reason: 'edge offline for 1m30s, last known Failed' },
    ],
    [
      'paused on site',
      { generation: 1, online: true, reported: { phase: 'Paused', observedGeneration: 1 } },
      { state: 'Paused', reason: 'paused on site by a local intent' },
    ],
    [
      'paused on site while the hub wrote a newer generation: held, not applying',
      { generation: 2, online: true, reported: { phase: 'Paused', observedGeneration: 1 } },
      {
        state: 'Paused',
        reason: 'paused on site by a local intent (held on the edge): generation 2 waits, generation 1 is held',
      },
    ],
    [
      'failed with message',
      {
        generation: 1,
        online: true,
        reported: { phase: 'Failed', observedGeneration: 1, message: 'container web exited with code 1' },
      },
      { state: 'Failed', reason: 'container web exited with code 1' },
    ],
    [
      'failed without message',
      { generation: 1, online: true, reported: { phase: 'Failed', observedGeneration: 1 } },
      { state: 'Failed', reason: 'failed, the edge gave no message' },
    ],
    [
      'degraded',
      { generation: 1, online: true, reported: { phase: 'Degraded', observedGeneration: 1, message: '1/2 ready' } },
      { state: 'Degraded', reason: '1/2 ready' },
    ],
    [
      'progressing',
      { generation: 1, online: true, reported: { phase: 'Progressing', observedGeneration: 1 } },
      { state: 'Progressing', reason: 'starting on the edge' },
    ],
    [
      'pending',
      { generation: 1, online: true, reported: { phase: 'Pending', observedGeneration: 1, message: 'pulling image' } },
      { state: 'Pending', reason: 'pulling image' },
    ],
    [
      'unknown phase',
      { generation: 1, online: true, reported: { phase: 'Exploded', observedGeneration: 1 } },
      {
        state: 'Pending',
        reason:
          'edge reported an unknown phase "Exploded"; check that the edge agent and the hub run compatible versions',
      },
    ],
  ];
  it.each(cases)('%s', (_name, facts, want) => {
    expect(stateFromReport(facts)).toEqual(want);
  });
});

describe('workloadOutcome (the one rule for ready, progressing, failed and held)', () => {
  const at = (phase: string, observedGeneration = 3) => ({ generation: 3, reported: { phase, observedGeneration } });

  it('fails on a spec error, and on Failed or Degraded reported on the current generation only', () => {
    expect(workloadOutcome({ generation: 3, specError: 'missing label region' })).toBe('failed');
    expect(workloadOutcome(at('Failed'))).toBe('failed');
    expect(workloadOutcome(at('Degraded'))).toBe('failed');
    expect(workloadOutcome(at('Failed', 2))).toBe('progressing');
    expect(workloadOutcome(at('Degraded', 2))).toBe('progressing');
  });

  it('is ready only on Ready for the current generation; held when paused on site, whatever the generation', () => {
    expect(workloadOutcome(at('Ready'))).toBe('ready');
    expect(workloadOutcome(at('Ready', 2))).toBe('progressing');
    expect(workloadOutcome(at('Paused', 1))).toBe('paused');
    expect(workloadOutcome({ generation: 1 })).toBe('progressing');
    for (const phase of ['Progressing', 'Pending', 'Modified', 'Bogus'])
      expect(workloadOutcome(at(phase))).toBe('progressing');
  });

  it('agrees with the summary: what it calls failed is a broken state there', () => {
    for (const phase of ['Ready', 'Progressing', 'Pending', 'Paused', 'Modified', 'Degraded', 'Failed'])
      for (const observedGeneration of [2, 3]) {
        const f = at(phase, observedGeneration);
        const state = stateFromReport({ ...f, online: true }).state;
        expect(workloadOutcome(f) === 'failed').toBe(['Failed', 'Degraded', 'Error'].includes(state));
      }
  });
});
