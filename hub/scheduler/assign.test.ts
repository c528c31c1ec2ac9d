/** Assignment writes from a plan, on the hub's tables in memory. */
import { beforeEach, describe, expect, it } from 'vitest';
import { contentSetKey, type RolloutEdge } from '../../core/rollout.js';
import { memoryHubState, seedStatus } from '../../test/fixtures/hub-state.js';
import type { SqliteDatabase } from '../../sync/sqlite.js';
import { SqlAssignmentStore } from '../state/assignments.js';
import { writeAssignments, type AssignInput } from './assign.js';
import type { Selection, Target } from './targets.js';

let db: SqliteDatabase;
let store: SqlAssignmentStore;

beforeEach(() => {
  db = memoryHubState().db;
  store = new SqlAssignmentStore(db);
});

const target = (workload: string, key: string): Target => ({
  workload,
  revision: 2,
  manifests: [{ apiVersion: 'v1', kind: 'Pod', metadata: { name: workload } }],
  key,
});

function input(edges: string[], ts: Target[], update: string[], extra: Partial<AssignInput> = {}): AssignInput {
  const selection: Selection = {
    selected: edges,
    targets: new Map(edges.map((e) => [e, ts])),
    targetKeys: new Map(edges.map((e) => [e, contentSetKey(ts)])),
  };
  const current = new Map<string, ReturnType<SqlAssignmentStore['keysForPlacement']>>();
  for (const a of store.keysForPlacement('default', 'p')) current.set(a.edge, [...(current.get(a.edge) ?? []), a]);
  const rolloutEdges: RolloutEdge[] = edges.map((e) => ({
    edge: e,
    targetKey: selection.targetKeys.get(e)!,
    ...(current.has(e)
      ? { writtenKey: contentSetKey(current.get(e)!.map((a) => ({ workload: a.workload, key: a.contentKey }))) }
      : {}),
  }));
  return {
    project: 'default',
    placement: 'p',
    selection,
    current,
    heldElsewhere: new Map(),
    edges: rolloutEdges,
    update,
    ...extra,
  };
}

const rows = () =>
  store.keysForPlacement('default', 'p').map((a) => `${a.edge}/${a.workload}@${a.generation}:${a.contentKey}`);

describe('writeAssignments', () => {
  it('writes the edges the plan updates, and only those', () => {
    const r = writeAssignments(store, input(['a', 'b'], [target('web', 'w1')], ['a']));
    expect([...r.changed]).toEqual(['a']);
    expect(rows()).toEqual(['a/web@1:w1']);
    expect(store.forEdge('a')[0]!.manifests).toEqual([{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' } }]);
  });

  it('leaves an edge already on its target alone, and bumps the generation past what the edge saw', () => {
    writeAssignments(store, input(['a', 'b'], [target('web', 'w1')], ['a', 'b']));
    expect(writeAssignments(store, input(['a', 'b'], [target('web', 'w1')], ['a', 'b'])).changed.size).toBe(0);
    seedStatus(db, 'b', 'web', 7, 'Ready');
    writeAssignments(store, input(['a', 'b'], [target('web', 'w2')], ['a', 'b']));
    expect(rows()).toEqual(['a/web@2:w2', 'b/web@8:w2']);
  });

  it('removes workloads no longer named and edges no longer selected, and says which workloads left', () => {
    writeAssignments(store, input(['a', 'b'], [target('web', 'w1'), target('db', 'd1')], ['a', 'b']));
    const r = writeAssignments(store, input(['a'], [target('web', 'w1')], ['a']));
    expect([...r.changed].sort()).toEqual(['a', 'b']);
    expect([...r.released].sort()).toEqual(['db', 'web']);
    expect(rows()).toEqual(['a/web@1:w1']);
  });

  it('never takes over a workload another placement holds on an edge', () => {
    store.put({
      edge: 'a',
      workload: 'web',
      project: 'default',
      placement: 'other',
      revision: 1,
      contentKey: 'x',
      generation: 3,
      manifests: [],
    });
    writeAssignments(
      store,
      input(['a'], [target('web', 'w1'), target('db', 'd1')], ['a'], { heldElsewhere: new Map([['a/web', 'other']]) }),
    );
    expect(rows()).toEqual(['a/db@1:d1']);
    expect(store.forEdge('a').map((a) => `${a.workload}:${a.placement}`)).toEqual(['db:p', 'web:other']);
  });
});
