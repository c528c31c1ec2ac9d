import { describe, expect, it } from 'vitest';
import { chartReleaseOf, chartValues, flattenScalars, parseRendered, refusedHooks } from './chart.js';
import { PackageError } from './package.js';

const chart = { name: 'shop', profiles: { small: { replicas: 1, cache: { size: 4, enabled: true } } } };

describe('chart values', () => {
  it('merges the profile, then each value at its dotted path', () => {
    expect(chartValues(chart, 'small', { 'cache.size': 8, greeting: 'hi', site: '{{ edge.labels.site }}' })).toEqual({
      replicas: 1,
      cache: { size: 8, enabled: true },
      greeting: 'hi',
      site: '{{ edge.labels.site }}',
    });
  });

  it('refuses an unknown profile, naming the file and the profiles there are', () => {
    expect(() => chartValues(chart, 'large', {})).toThrow(
      new PackageError('profile large: chart shop has no values-large.yaml (its profiles: small)'),
    );
  });

  it('refuses a path that is not dotted segments, and never touches a prototype', () => {
    expect(() => chartValues(chart, undefined, { 'a..b': 1 })).toThrow(
      /values\.a\.\.b: a chart value is a dotted path/,
    );
    expect(() => chartValues(chart, undefined, { 'a.b c': 1 })).toThrow(PackageError);
    const v = chartValues(chart, undefined, { '__proto__.polluted': true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(v, '__proto__')?.value).toEqual({ polluted: true });
  });

  it('flattens scalar leaves by dotted path', () => {
    expect(flattenScalars({ a: 1, b: { c: 'x', d: [1] }, e: null })).toEqual({ a: 1, 'b.c': 'x' });
  });
});

describe('hooks', () => {
  it('drops test hooks and refuses lifecycle hooks, naming each', () => {
    expect(
      refusedHooks('shop 1.0.0', [{ name: 't', kind: 'Pod', path: 'shop/templates/tests/t.yaml', events: ['test'] }]),
    ).toBeUndefined();
    const r = refusedHooks('shop 1.0.0', [
      { name: 't', kind: 'Pod', path: 'shop/templates/tests/t.yaml', events: ['test'] },
      { name: 'm', kind: 'Job', path: 'shop/templates/m.yaml', events: ['pre-install', 'pre-upgrade'] },
      { name: 'x', kind: 'Job', path: 'shop/templates/x.yaml', events: ['post-delete', 'test'] },
    ]);
    expect(r).toContain(
      'chart shop 1.0.0 renders hooks Outpost cannot run: Job/m (shop/templates/m.yaml) on pre-install, pre-upgrade; Job/x (shop/templates/x.yaml) on post-delete, test.',
    );
  });
});

describe("Helm's rendered output", () => {
  it('reads the manifests of the stream, skipping empty documents', () => {
    const ms = parseRendered(
      'c 1',
      '---\n# Source: c/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# empty\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n',
    );
    expect(ms.map((m) => `${m.kind}/${m.metadata.name}`)).toEqual(['ConfigMap/a', 'Pod/p']);
  });

  it('refuses a document that is not a manifest, and an empty rendering', () => {
    expect(() => parseRendered('c 1', 'kind: ConfigMap\nmetadata: {name: a}\n')).toThrow(
      /chart c 1 rendered a manifest that is not one: manifests\[0\]\.apiVersion/,
    );
    expect(() => parseRendered('c 1', '---\n# nothing\n')).toThrow('chart c 1 rendered no manifest with these values');
  });

  it('knows a ChartRelease only as the one manifest of a workload', () => {
    const r = { apiVersion: 'outpost.dev/v1alpha1', kind: 'ChartRelease', metadata: { name: 'w' } };
    expect(chartReleaseOf([r])).toBe(r);
    expect(chartReleaseOf([r, r])).toBeUndefined();
    expect(chartReleaseOf([{ ...r, apiVersion: 'example.com/v1' }])).toBeUndefined();
  });
});
