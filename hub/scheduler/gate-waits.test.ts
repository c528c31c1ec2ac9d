/** The gates during a pass, and who waits on which edge, on the hub's tables in memory. */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Placement } from '../../core/resources.js';
import type { RolloutEdge } from '../../core/rollout.js';
import { memoryHubState, seedStatus } from '../../test/fixtures/hub-state.js';
import { SqlAssignmentStore } from '../state/assignments.js';
import { GateWaits } from './gate-waits.js';
import type { EdgeGate } from './gates.js';

const placement = { metadata: { name: 'app', project: 'default' } } as Placement;
let store: SqlAssignmentStore;
let db: ReturnType<typeof memoryHubState>['db'];

beforeEach(() => {
  db = memoryHubState().db;
  store = new SqlAssignmentStore(db);
});

const edges = (): RolloutEdge[] => [
  { edge: 'e1', targetKey: 'k2', writtenKey: 'k1' },
  { edge: 'e2', targetKey: 'k2' },
  { edge: 'e3', targetKey: 'k2', writtenKey: 'k2' },
];

describe('GateWaits', () => {
  it('asks nothing and sets nothing without gates', () => {
    const waits = new GateWaits(store);
    const es = edges();
    waits.ask('default/app', placement, es, new Map());
    expect(es.map((e) => e.waitingFor)).toEqual([undefined, undefined, undefined]);
    expect(waits.on('e1')).toBeUndefined();
  });

  it('asks about the unwritten edges only, sets what they wait for and remembers who waits where', () => {
    const waits = new GateWaits(store);
    const asked: string[][] = [];
    const gate: EdgeGate = (_p, es) => {
      asked.push([...es]);
      return new Map(es.filter((e) => e !== 'e2').map((e) => [e, ['package db ^1 Ready on it']]));
    };
    waits.add(gate);
    const es = edges();
    waits.ask('default/app', placement, es, new Map());
    expect(asked).toEqual([['e1', 'e2']]);
    expect(es.map((e) => e.waitingFor)).toEqual([['package db ^1 Ready on it'], undefined, undefined]);
    expect([...(waits.on('e1') ?? [])]).toEqual(['default/app']);
    expect(waits.on('e2')).toBeUndefined();
    // What it waits on is replaced, and forgotten with no edges.
    waits.setWaiting('default/app', ['e2']);
    expect(waits.on('e1')).toBeUndefined();
    expect([...(waits.on('e2') ?? [])]).toEqual(['default/app']);
    waits.setWaiting('default/app', []);
    expect(waits.on('e2')).toBeUndefined();
  });

  it("lets a gate ask whether another placement's workloads are Ready on an edge", () => {
    for (const edge of ['e1', 'e2'])
      store.put({
        edge,
        workload: 'db',
        project: 'default',
        placement: 'db',
        revision: 1,
        contentKey: 'd1',
        generation: 1,
        manifests: [],
      });
    seedStatus(db, 'e1', 'db', 1, 'Ready');
    const waits = new GateWaits(store);
    waits.add(
      (_p, es, ctx) =>
        new Map(es.filter((e) => !ctx.readyOn('default', 'db', e)).map((e) => [e, ['package db ^1 Ready on it']])),
    );
    const es = edges();
    waits.ask('default/app', placement, es, new Map());
    expect(es.map((e) => e.waitingFor)).toEqual([undefined, ['package db ^1 Ready on it'], undefined]);
  });
});
