/** Selection and customization, cached until the placement, its workloads or an edge change. */
import { describe, expect, it } from 'vitest';
import type { Edge } from '../../core/resources.js';
import { contentSetKey } from '../../core/rollout.js';
import { edgeObject, placementObject, workloadObject } from '../../test/fixtures/hub-state.js';
import type { EdgeLiveness } from '../state/edges.js';
import { TargetCache } from './targets.js';

const live = (approved = true): EdgeLiveness => ({ approved, enrolledAt: 0 });

function setup(edges: Edge[]) {
  let reads = 0;
  const cache = new TargetCache(
    () => {
      reads++;
      return edges;
    },
    (edge) => (edge === 'nokey' ? 'edge nokey has no key to receive Secrets' : undefined),
  );
  return { cache, reads: () => reads };
}

const runtimes = (names: string[], unapproved: string[] = []) =>
  new Map(names.map((n) => [n, live(!unapproved.includes(n))]));

describe('TargetCache', () => {
  const placement = placementObject('web', {
    workloads: ['web'],
    edgeSelector: { matchLabels: { region: 'eu' } },
    customization: [{ set: [{ path: 'spec.containers.0.image', value: 'busybox:{{ edge.labels.tier }}' }] }],
  });
  const web = workloadObject('web', 'busybox:1');

  it('selects approved, schedulable edges matching the selector and customizes each workload for each', () => {
    const edges = [
      edgeObject('a', { region: 'eu', tier: 'small' }),
      edgeObject('b', { region: 'us', tier: 'small' }),
      edgeObject('c', { region: 'eu', tier: 'big' }, true),
      edgeObject('d', { region: 'eu', tier: 'big' }),
      edgeObject('e', { region: 'eu' }),
    ];
    const { cache } = setup(edges);
    const sel = cache.get(placement, [web], runtimes(['a', 'b', 'c', 'd', 'e'], ['d']));
    expect(sel.selected).toEqual(['a', 'e']);
    const a = sel.targets.get('a')!;
    expect(a[0]!.manifests[0]).toMatchObject({ spec: { containers: [{ image: 'busybox:small' }] } });
    expect(sel.targetKeys.get('a')).toBe(contentSetKey(a));
    // A missing label is a per-edge error with its own key, never an empty string.
    const e = sel.targets.get('e')![0]!;
    expect(e.error).toMatch(/tier/);
    expect(e.key).toMatch(/^error:/);
    expect(e.manifests).toEqual([]);
  });

  it('an edge that cannot receive the manifests gets an error target', () => {
    const { cache } = setup([edgeObject('nokey', { region: 'eu', tier: 's' })]);
    const t = cache.get(placement, [web], runtimes(['nokey'])).targets.get('nokey')![0]!;
    expect(t.error).toBe('edge nokey has no key to receive Secrets');
  });

  it('is reused until the placement, a workload, an edge or the approved count changes', () => {
    const edges = [edgeObject('a', { region: 'eu', tier: 'small' })];
    const { cache, reads } = setup(edges);
    const rt = runtimes(['a']);
    const first = cache.get(placement, [web], rt);
    expect(cache.get(placement, [web], rt)).toBe(first);
    expect(reads()).toBe(1);
    expect(cache.get(placement, [workloadObject('web', 'busybox:2', 2)], rt)).not.toBe(first);
    const second = cache.get(placement, [web], rt);
    expect(cache.get(placementObject('web', { workloads: ['web'], edges: ['a'] }, '2'), [web], rt).selected).toEqual([
      'a',
    ]);
    expect(cache.get(placement, [web], rt)).not.toBe(second);
    const third = cache.get(placement, [web], rt);
    cache.edgesChanged();
    expect(cache.get(placement, [web], rt)).not.toBe(third);
    expect(cache.get(placement, [web], runtimes(['a', 'b'], ['b']))).not.toBe(third);
    const n = reads();
    cache.forget('default', 'web');
    cache.get(placement, [web], runtimes(['a', 'b'], ['b']));
    expect(reads()).toBe(n + 1);
  });
});
