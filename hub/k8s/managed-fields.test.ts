import { describe, expect, it } from 'vitest';
import { serverSideApply } from './apply.js';
import { fieldsOf, fromFieldsV1, mergeApplied, recordUpdate, toFieldsV1, type Manager } from './managed-fields.js';
import { applyJsonPatch } from './patch.js';
import { KubeError } from './status.js';

const obj = (spec: unknown, labels: Record<string, string> = {}) => ({
  apiVersion: 'outpost.dev/v1alpha1',
  kind: 'Placement',
  metadata: { name: 'p', namespace: 'default', labels },
  spec,
});

describe('managed fields', () => {
  it('owns leaves: scalars, lists whole, map keys', () => {
    const f = fieldsOf(obj({ workloads: ['a', 'b'], rollout: { paused: true } }, { app: 'x' }));
    expect([...f.values()]).toEqual([
      ['metadata', 'labels', 'app'],
      ['spec', 'workloads'],
      ['spec', 'rollout', 'paused'],
    ]);
    expect(toFieldsV1(f)).toEqual({
      'f:metadata': { 'f:labels': { 'f:app': {} } },
      'f:spec': { 'f:workloads': {}, 'f:rollout': { 'f:paused': {} } },
    });
    expect([...fromFieldsV1(toFieldsV1(f)).keys()]).toEqual([...f.keys()]);
  });

  it('merges an applied configuration: objects by field, lists replaced', () => {
    expect(mergeApplied({ spec: { a: 1, l: [1, 2] } }, { spec: { b: 2, l: [3] } })).toEqual({
      spec: { a: 1, b: 2, l: [3] },
    });
  });

  it('gives an update the fields it changed, taking them from others', () => {
    const before = obj({ workloads: ['a'] }, { app: 'x' });
    const applier: Manager = { manager: 'kubectl', operation: 'Apply', time: 't0', fields: fieldsOf(before) };
    const after = obj({ workloads: ['a'] }, { app: 'y' });
    const out = recordUpdate([applier], 'kubectl-label', before, after, 't1');
    expect([...out[0].fields.keys()]).toEqual([JSON.stringify(['spec', 'workloads'])]);
    expect(out[1]).toMatchObject({ manager: 'kubectl-label', operation: 'Update' });
    expect([...out[1].fields.values()]).toEqual([['metadata', 'labels', 'app']]);
  });

  const apply = (current: any, managers: Manager[], applied: unknown, manager: string, force = false) =>
    serverSideApply({ current, managers, applied, manager, force, now: 'now', normalize: (o) => o });

  it('conflicts on another manager’s field with another value, not with the same value', () => {
    const cur = obj({ workloads: ['a'] });
    const a: Manager = { manager: 'a', operation: 'Apply', time: 't', fields: fieldsOf(cur) };
    expect(() => apply(cur, [a], obj({ workloads: ['b'] }), 'b')).toThrow(KubeError);
    try {
      apply(cur, [a], obj({ workloads: ['b'] }), 'b');
    } catch (err) {
      expect((err as KubeError).code).toBe(409);
      expect((err as KubeError).message).toBe('Apply failed with 1 conflict: conflict with "a": .spec.workloads');
    }
    const shared = apply(cur, [a], obj({ workloads: ['a'] }), 'b');
    expect(shared.managers.map((m) => [m.manager, m.fields.size])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    const forced = apply(cur, [a], obj({ workloads: ['b'] }), 'b', true);
    expect(forced.object.spec).toEqual({ workloads: ['b'] });
    expect(forced.managers.find((m) => m.manager === 'a')!.fields.size).toBe(0);
  });

  it('removes what a manager stops applying unless another owns it', () => {
    const cur = obj({ workloads: ['a'], edges: ['e1'] });
    const mine: Manager = { manager: 'm', operation: 'Apply', time: 't', fields: fieldsOf(cur) };
    const other: Manager = { manager: 'o', operation: 'Update', time: 't', fields: fieldsOf(obj({ edges: ['e1'] })) };
    const out = apply(cur, [mine, other], obj({}), 'm');
    expect(out.object.spec).toEqual({ edges: ['e1'] });
  });
});

describe('JSON patch', () => {
  it('adds, replaces, removes, moves, tests', () => {
    const doc = { spec: { l: [1, 2], a: 'x' } };
    expect(
      applyJsonPatch(doc, [
        { op: 'add', path: '/spec/l/-', value: 3 },
        { op: 'replace', path: '/spec/a', value: 'y' },
        { op: 'move', from: '/spec/a', path: '/spec/b' },
        { op: 'remove', path: '/spec/l/0' },
        { op: 'test', path: '/spec/b', value: 'y' },
      ]),
    ).toEqual({ spec: { l: [2, 3], b: 'y' } });
    expect(doc).toEqual({ spec: { l: [1, 2], a: 'x' } });
    expect(() => applyJsonPatch(doc, [{ op: 'test', path: '/spec/a', value: 'z' }])).toThrow('JSON patch test failed');
    expect(() => applyJsonPatch(doc, [{ op: 'remove', path: '/spec/nope' }])).toThrow('does not exist');
  });
});
