import { describe, expect, it } from 'vitest';
import { parsePackage, renderPackage, resolveValues, resolveVersion } from './package.js';

const base = {
  kind: 'Package',
  metadata: { name: 'web' },
  spec: {
    version: '1.2.0',
    parameters: [
      { name: 'greeting', type: 'string', required: true },
      { name: 'workers', type: 'integer', default: 1, minimum: 1 },
      { name: 'tier', type: 'string', enum: ['small', 'large'], default: 'large' },
      { name: 'password', type: 'string', secret: true },
    ],
    profiles: { small: { tier: 'small', workers: 2 } },
    workloads: [
      {
        name: 'app',
        manifests: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'cfg' },
            data: { line: '{{ params.greeting }} at {{ edge.labels.site }}', workers: '{{ params.workers }}' },
          },
        ],
      },
    ],
  },
};

describe('packages', () => {
  it('layers defaults, profile and values, and names a missing or ill-typed parameter', () => {
    const pkg = parsePackage(base);
    expect(resolveValues(pkg, { profile: 'small', values: { greeting: 'hi' } })).toEqual({
      greeting: 'hi',
      workers: 2,
      tier: 'small',
    });
    expect(() => resolveValues(pkg, { values: {} })).toThrow(
      /values\.greeting: the string parameter greeting is required/,
    );
    expect(() => resolveValues(pkg, { values: { greeting: 'x', workers: 1.5 } })).toThrow(
      /values\.workers: must be an integer, got 1\.5/,
    );
    expect(() => resolveValues(pkg, { values: { greeting: 'x', colour: 'red' } })).toThrow(
      /values\.colour: .* has no parameter/,
    );
  });

  it('renders params, keeps edge templates for the scheduler, and puts secrets in a generated Secret only', () => {
    const pkg = parsePackage(base);
    const [w] = renderPackage(pkg, { greeting: 'hi', workers: 3, tier: 'large', password: 's3cret' });
    expect(w.manifests[0]).toMatchObject({
      kind: 'Secret',
      metadata: { name: 'web-params' },
      stringData: { password: 's3cret' },
    });
    expect(w.manifests[1]).toMatchObject({ data: { line: 'hi at {{ edge.labels.site }}', workers: 3 } });
    expect(() =>
      parsePackage({
        ...base,
        spec: {
          ...base.spec,
          workloads: [
            {
              name: 'app',
              manifests: [
                { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { p: '{{ params.password }}' } },
              ],
            },
          ],
        },
      }),
    ).toThrow(/would put a secret parameter into a plain manifest: read it from the generated Secret web-params/);
  });

  it('refuses bad versions, profiles naming unknown parameters, and resolves ranges to the newest match', () => {
    expect(() => parsePackage({ ...base, spec: { ...base.spec, version: 'v1' } })).toThrow(
      /spec\.version: must be a semantic version/,
    );
    expect(() => parsePackage({ ...base, spec: { ...base.spec, profiles: { x: { nope: 1 } } } })).toThrow(
      /spec\.profiles\.x\.nope: no such parameter/,
    );
    expect(resolveVersion('^1.0', ['1.0.0', '1.1.0', '2.0.0'])).toBe('1.1.0');
    expect(resolveVersion('~1.0.0', ['1.0.0', '1.0.3', '1.1.0'])).toBe('1.0.3');
    expect(resolveVersion('^3', ['1.0.0'])).toBeUndefined();
  });
});
