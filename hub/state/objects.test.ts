/** The object tables on an in-memory hub database: resourceVersions, generations, revisions. */
import { describe, expect, it } from 'vitest';
import { memoryHubState } from '../../test/fixtures/hub-state.js';

const edge = (name: string, project = 'p') => ({
  kind: 'Edge' as const,
  project,
  name,
  uid: `uid-${name}`,
  labels: { region: 'eu' },
  annotations: {},
  spec: { unschedulable: false },
  at: '2026-01-01T00:00:00.000Z',
});

describe('object state', () => {
  it('hands out one resourceVersion per write and bumps the generation only on a spec change', () => {
    const { objects } = memoryHubState().state;
    const rv1 = objects.insert(edge('a'));
    const rv2 = objects.insert(edge('b'));
    expect(rv2).toBe(rv1 + 1);
    expect(objects.get('Edge', 'p', 'a')).toMatchObject({
      resourceVersion: rv1,
      generation: 1,
      labels: { region: 'eu' },
    });
    const rv3 = objects.update({ ...edge('a'), labels: { region: 'us' }, specChanged: false });
    expect(objects.get('Edge', 'p', 'a')).toMatchObject({
      resourceVersion: rv3,
      generation: 1,
      labels: { region: 'us' },
    });
    objects.update({ ...edge('a'), spec: { unschedulable: true }, specChanged: true });
    expect(objects.get('Edge', 'p', 'a')).toMatchObject({ generation: 2, spec: { unschedulable: true } });
  });

  it('lists in name order with a cursor, counts, and lists projects', () => {
    const { objects } = memoryHubState().state;
    for (const n of ['c', 'a', 'b']) objects.insert(edge(n));
    objects.insert(edge('z', 'q'));
    expect(objects.list('Edge', 'p').map((o) => o.name)).toEqual(['a', 'b', 'c']);
    expect(objects.list('Edge', 'p', { after: 'a', limit: 1 }).map((o) => o.name)).toEqual(['b']);
    expect(objects.list('Edge', '*', { after: 'p/c' }).map((o) => `${o.project}/${o.name}`)).toEqual(['q/z']);
    expect(objects.count('Edge', 'p')).toBe(3);
    expect(objects.count('Edge', '*')).toBe(4);
    expect(objects.count('Workload', 'p')).toBe(0);
    expect(objects.projects()).toEqual(['p', 'q']);
    expect(objects.labels('Edge', 'q').map((r) => [r.name, r.labels()])).toEqual([['z', { region: 'eu' }]]);
    objects.delete('Edge', 'p', 'b');
    expect(objects.get('Edge', 'p', 'b')).toBeUndefined();
  });

  it('keeps the newest revisions of a workload and drops them with it', () => {
    const { objects } = memoryHubState().state;
    objects.insert({ ...edge('w'), kind: 'Workload', spec: { manifests: [] } });
    for (let i = 1; i <= 5; i++)
      objects.addRevision('p', 'w', { manifests: [{ i }], changeCause: `c${i}`, at: `t${i}` }, 3);
    expect(objects.currentRevision('p', 'w')).toBe(5);
    expect(objects.revisions('p', 'w')).toEqual([
      { revision: 3, createdAt: 't3', manifests: [{ i: 3 }], changeCause: 'c3' },
      { revision: 4, createdAt: 't4', manifests: [{ i: 4 }], changeCause: 'c4' },
      { revision: 5, createdAt: 't5', manifests: [{ i: 5 }], changeCause: 'c5' },
    ]);
    objects.delete('Workload', 'p', 'w');
    expect(objects.revisions('p', 'w')).toEqual([]);
    expect(objects.currentRevision('p', 'w')).toBe(0);
  });

  it('finds the key a stored value was sealed with', () => {
    const { objects } = memoryHubState().state;
    expect(objects.sealedKeyId('ohs1.')).toBeUndefined();
    objects.insert({ ...edge('w'), kind: 'Workload', spec: { manifests: [{ data: { k: 'ohs1.0a1b2c3d.xyz' } }] } });
    expect(objects.sealedKeyId('ohs1.')).toBe('0a1b2c3d');
  });
});
