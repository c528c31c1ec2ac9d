import { describe, expect, it } from 'vitest';
import type { CustomizationRule, Manifest } from './resources.js';
import {
  applyOverrides,
  applyOverridesDetailed,
  applySet,
  canonicalJson,
  customize,
  formatPath,
  manifestHash,
  mergePatch,
  renderTemplates,
} from './customize.js';

const edge = {
  name: 'e1',
  labels: { region: 'eu', 'example.com/tier': 'small', replicas: '3' },
  annotations: { 'site/address': 'Main St 1' },
};

function deployment(): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      replicas: 1,
      template: {
        spec: {
          containers: [
            {
              name: 'web',
              image: 'nginx:1.25',
              env: [
                { name: 'EDGE', value: '{{ edge.name }}' },
                { name: 'REGION', value: '{{edge.labels.region}}' },
              ],
            },
          ],
        },
      },
    },
  };
}

const service = (): Manifest => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web' },
  spec: { ports: [{ port: 80 }] },
});

const env = (m: Manifest) => (m as any).spec.template.spec.containers[0].env;

describe('mergePatch (RFC 7386 examples)', () => {
  // The table from RFC 7386 appendix A.
  const cases: [unknown, unknown, unknown][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  it.each(cases)('%j + %j', (target, patch, want) => {
    const before = JSON.stringify(target);
    expect(mergePatch(target, patch)).toEqual(want);
    expect(JSON.stringify(target)).toBe(before);
  });

  it('keeps a "__proto__" key as data instead of changing the prototype', () => {
    const out = mergePatch({}, JSON.parse('{"__proto__": {"polluted": true}}')) as Record<string, unknown>;
    expect(Object.keys(out)).toEqual(['__proto__']);
    expect((out as { polluted?: boolean }).polluted).toBeUndefined();
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

describe('applySet', () => {
  it('sets nested fields and list items without mutating the input', () => {
    const d = deployment();
    const before = JSON.stringify(d);
    const out = applySet(d, 'spec.template.spec.containers.0.image', 'nginx:1.27') as any;
    expect(out.spec.template.spec.containers[0].image).toBe('nginx:1.27');
    expect(JSON.stringify(d)).toBe(before);
  });

  it('creates missing parents: objects, or lists before a numeric segment', () => {
    expect(applySet({}, 'spec.replicas', 3)).toEqual({ spec: { replicas: 3 } });
    expect(applySet({ spec: null }, 'spec.a.b', 'x')).toEqual({ spec: { a: { b: 'x' } } });
    expect(applySet({}, 'spec.containers.0.name', 'a')).toEqual({ spec: { containers: [{ name: 'a' }] } });
    expect(applySet({ l: [1, 2] }, 'l.2', 3)).toEqual({ l: [1, 2, 3] });
  });

  it('copies the value so later edits of the result do not reach the caller', () => {
    const value = { cpu: '1' };
    const out = applySet({}, 'limits', value) as any;
    out.limits.cpu = '2';
    expect(value.cpu).toBe('1');
  });

  const bad: [unknown, string, string][] = [
    [
      { spec: { replicas: 1 } },
      'spec.replicas.max',
      'cannot set "spec.replicas.max": spec.replicas is a number, not an object',
    ],
    [{ l: [1] }, 'l.x', 'cannot set "l.x": l is a list; use a numeric index such as l.0'],
    [{ l: [1] }, 'l.5', 'cannot set "l.5": index 5 is past the end of l (1 items)'],
    [{}, 'spec..replicas', 'invalid path "spec..replicas": use a dotted path such as spec.replicas'],
    [{}, '', 'invalid path ""'],
    ['text', 'a', 'cannot set "a": the target is a string, not an object'],
  ];
  it.each(bad)('%j %s throws', (obj, path, msg) => {
    expect(() => applySet(obj, path, 1)).toThrow(msg);
  });
});

describe('renderTemplates', () => {
  const ok: [string, string][] = [
    ['{{ edge.name }}', 'e1'],
    ['{{edge.name}}', 'e1'],
    ['{{   edge.labels.region   }}', 'eu'],
    ['{{ edge.labels.example.com/tier }}', 'small'],
    ['{{ edge.labels["example.com/tier"] }}', 'small'],
    ["{{ edge.labels['example.com/tier'] }}", 'small'],
    ['{{ edge.annotations["site/address"] }}', 'Main St 1'],
    ['{{ edge.labels.replicas }}', '3'],
    ['http://{{ edge.name }}.{{ edge.labels.region }}.example.com:8080/', 'http://e1.eu.example.com:8080/'],
    ['no templates { here }', 'no templates { here }'],
    ['{{ "{{" }} .Values {{ "}}" }}', '{{ .Values }}'],
  ];
  it.each(ok)('%s -> %s', (input, want) => {
    expect(renderTemplates(input, edge)).toEqual({ value: want });
  });

  it('keeps a whole-string template a string, and leaves other types alone', () => {
    expect(renderTemplates({ a: '{{ edge.labels.replicas }}', n: 3, b: true, z: null }, edge)).toEqual({
      value: { a: '3', n: 3, b: true, z: null },
    });
  });

  it('does not render keys', () => {
    expect(renderTemplates({ '{{ edge.name }}': 'x' }, edge)).toEqual({ value: { '{{ edge.name }}': 'x' } });
  });

  const bad: [unknown, string][] = [
    [
      { v: '{{ edge.labels.zone }}' },
      'v: edge "e1" has no label "zone" (add the label to the edge or change the template)',
    ],
    [
      { v: '{{ edge.annotations.owner }}' },
      'v: edge "e1" has no annotation "owner" (add the annotation to the edge or change the template)',
    ],
    [
      { v: '{{ edge.hostname }}' },
      'v: unknown template expression "{{ edge.hostname }}": use {{ edge.name }}, {{ edge.labels.KEY }}',
    ],
    [{ v: '{{ .Values.x }}' }, 'v: unknown template expression "{{ .Values.x }}"'],
    [{ v: '{{ edge.labels }}' }, 'v: unknown template expression "{{ edge.labels }}"'],
    [
      { v: '{{ edge.name ' },
      'v: unclosed template in "{{ edge.name ": close it with }}, or write {{ "{{" }} for literal braces',
    ],
    [{ 'example.com/x': ['{{ edge.labels.zone }}'] }, '["example.com/x"][0]: edge "e1" has no label "zone"'],
    [
      { a: '{{ edge.labels.x }}', b: '{{ edge.labels.y }}', c: '{{ edge.labels.z }}' },
      'a: edge "e1" has no label "x" (add the label to the edge or change the template) (and 2 more template errors)',
    ],
  ];
  it.each(bad)('%j is an error', (input, msg) => {
    const r = renderTemplates(input, edge);
    expect(r).toHaveProperty('error');
    expect((r as { error: string }).error).toContain(msg);
  });

  it('does not treat a missing label as an empty string even when labels has an inherited property of that name', () => {
    expect(renderTemplates('{{ edge.labels.constructor }}', edge)).toEqual({
      error: 'edge "e1" has no label "constructor" (add the label to the edge or change the template)',
    });
  });
});

describe('formatPath', () => {
  it('uses dots for identifiers, brackets for indexes and odd keys', () => {
    expect(formatPath(['manifests', 0, 'metadata', 'annotations', 'example.com/x', 'y'])).toBe(
      'manifests[0].metadata.annotations["example.com/x"].y',
    );
  });
});

describe('customize', () => {
  it('renders templates per edge', () => {
    const r = customize([deployment()], edge, [], 'web');
    expect(r).not.toHaveProperty('error');
    const m = (r as { manifests: Manifest[] }).manifests;
    expect(env(m[0])).toEqual([
      { name: 'EDGE', value: 'e1' },
      { name: 'REGION', value: 'eu' },
    ]);
  });

  it('names the workload, the field and the fix for a missing label', () => {
    const r = customize([service(), deployment()], { ...edge, labels: {} }, [], 'web');
    expect(r).toEqual({
      error:
        'workload web: manifests[1].spec.template.spec.containers[0].env[1].value: edge "e1" has no label "region" (add the label to the edge or change the template)',
    });
  });

  it('applies rules in order, patch before set, with templates in patches rendered last', () => {
    const rules: CustomizationRule[] = [
      { patch: { spec: { replicas: 2, template: { metadata: { labels: { site: '{{ edge.name }}' } } } } } },
      {
        target: { kind: 'Deployment' },
        set: [
          { path: 'spec.replicas', value: 5 },
          { path: 'spec.template.spec.containers.0.image', value: 'nginx:{{ edge.labels.region }}' },
        ],
      },
    ];
    const r = customize([deployment()], edge, rules, 'web') as { manifests: any[] };
    expect(r.manifests[0].spec.replicas).toBe(5);
    expect(r.manifests[0].spec.template.metadata.labels).toEqual({ site: 'e1' });
    expect(r.manifests[0].spec.template.spec.containers[0].image).toBe('nginx:eu');
    expect(r.manifests[0].spec.template.spec.containers[0].env).toHaveLength(2);
  });

  it('filters rules by edge selector, workload and target', () => {
    const rules: CustomizationRule[] = [
      { edgeSelector: { matchLabels: { region: 'us' } }, set: [{ path: 'metadata.labels.us', value: 'yes' }] },
      { edgeSelector: { matchLabels: { region: 'eu' } }, set: [{ path: 'metadata.labels.eu', value: 'yes' }] },
      { edgeSelector: {}, set: [{ path: 'metadata.labels.all', value: 'yes' }] },
      { workloads: ['other'], set: [{ path: 'metadata.labels.other', value: 'yes' }] },
      { workloads: ['web'], target: { kind: 'Service' }, set: [{ path: 'metadata.labels.svc', value: 'yes' }] },
      { target: { name: 'web', kind: 'Deployment' }, set: [{ path: 'metadata.labels.dep', value: 'yes' }] },
      { target: { name: 'nope' }, set: [{ path: 'metadata.labels.nope', value: 'yes' }] },
    ];
    const r = customize([deployment(), service()], edge, rules, 'web') as { manifests: Manifest[] };
    expect(r.manifests.map((m) => m.metadata.labels)).toEqual([
      { eu: 'yes', all: 'yes', dep: 'yes' },
      { eu: 'yes', all: 'yes', svc: 'yes' },
    ]);
  });

  it('deletes with null and replaces lists', () => {
    const rules: CustomizationRule[] = [
      { patch: { spec: { replicas: null, template: { spec: { containers: [{ name: 'only', image: 'busybox' }] } } } } },
    ];
    const r = customize([deployment()], edge, rules, 'web') as { manifests: any[] };
    expect(r.manifests[0].spec.replicas).toBeUndefined();
    expect(r.manifests[0].spec.template.spec.containers).toEqual([{ name: 'only', image: 'busybox' }]);
  });

  it('never mutates its inputs', () => {
    const input = [deployment(), service()];
    const rules: CustomizationRule[] = [
      { patch: { spec: { replicas: 9 } }, set: [{ path: 'metadata.labels.x', value: { deep: ['{{ edge.name }}'] } }] },
    ];
    const before = JSON.stringify([input, rules]);
    customize(input, edge, rules, 'web');
    expect(JSON.stringify([input, rules])).toBe(before);
  });

  it('reports a set that runs into a scalar, naming the rule and manifest', () => {
    const r = customize([deployment()], edge, [{}, { set: [{ path: 'spec.replicas.x', value: 1 }] }], 'web');
    expect(r).toEqual({
      error:
        'workload web: customization[1] on manifests[0]: cannot set "spec.replicas.x": spec.replicas is a number, not an object (fix the set path in the placement)',
    });
  });

  it('reports a patch that breaks the manifest envelope', () => {
    const r = customize(
      [service(), deployment()],
      edge,
      [{ target: { kind: 'Deployment' }, patch: { kind: null } }],
      'web',
    );
    expect(r).toHaveProperty('error');
    expect((r as { error: string }).error).toMatch(
      /^workload web: manifests\[1\]\.kind: .* after customization \(check the placement's patch rules\)$/,
    );
  });

  it('gives different edges different content and the same edge the same hash', () => {
    const a = customize([deployment()], edge, [], 'web') as { manifests: Manifest[] };
    const a2 = customize([deployment()], edge, [], 'web') as { manifests: Manifest[] };
    const b = customize([deployment()], { ...edge, name: 'e2' }, [], 'web') as { manifests: Manifest[] };
    expect(manifestHash(a.manifests)).toBe(manifestHash(a2.manifests));
    expect(manifestHash(a.manifests)).not.toBe(manifestHash(b.manifests));
  });
});

describe('applyOverrides', () => {
  it('sets a plain path on every manifest that already has the field', () => {
    const { manifests, problems } = applyOverridesDetailed([deployment(), service()], { 'spec.replicas': 3 });
    expect(problems).toEqual([]);
    expect((manifests[0] as any).spec.replicas).toBe(3);
    expect((manifests[1] as any).spec.replicas).toBeUndefined();
  });

  it('adds a missing field to a single-manifest workload', () => {
    const d = deployment();
    delete (d as any).spec.replicas;
    expect((applyOverrides([d], { 'spec.replicas': 2 })[0] as any).spec.replicas).toBe(2);
  });

  it('targets Kind/name:path, kind case-insensitively, creating parents', () => {
    const out = applyOverrides([deployment(), service()], {
      'deployment/web:spec.template.spec.nodeSelector.disk': 'ssd',
      'Service/web:spec.type': 'NodePort',
    });
    expect((out[0] as any).spec.template.spec.nodeSelector).toEqual({ disk: 'ssd' });
    expect((out[1] as any).spec.type).toBe('NodePort');
  });

  it('applies overrides in order, later ones winning', () => {
    const out = applyOverrides([deployment()], { 'spec.replicas': 3, 'Deployment/web:spec.replicas': 4 });
    expect((out[0] as any).spec.replicas).toBe(4);
  });

  it('skips and reports overrides that cannot apply, and applies the rest', () => {
    const { manifests, problems } = applyOverridesDetailed([deployment(), service()], {
      'spec.paused': true,
      'StatefulSet/db:spec.replicas': 1,
      'Deployment/web:spec.replicas.max': 1,
      'spec..x': 1,
      'metadata.name': 'renamed',
    });
    expect(problems).toEqual([
      'override "spec.paused": no manifest has this field; name the manifest, e.g. "Deployment/web:spec.paused" (manifests: Deployment/web, Service/web)',
      'override "StatefulSet/db:spec.replicas": the workload has no StatefulSet named "db" (it has Deployment/web, Service/web)',
      'override "Deployment/web:spec.replicas.max" on Deployment/web: cannot set "spec.replicas.max": spec.replicas is a number, not an object',
      'override "spec..x": invalid path "spec..x": use a dotted path such as spec.replicas or spec.containers.0.image',
    ]);
    expect(manifests.map((m) => m.metadata.name)).toEqual(['renamed', 'renamed']);
  });

  it('does not mutate its input', () => {
    const input = [deployment()];
    const before = JSON.stringify(input);
    applyOverrides(input, { 'spec.replicas': 7 });
    expect(JSON.stringify(input)).toBe(before);
  });
});

describe('canonicalJson and manifestHash', () => {
  it('sorts keys at every level, keeps list order, drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('is a 16-hex-character sha256 prefix independent of key order', () => {
    const a = manifestHash([
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1', b: '2' } },
    ]);
    const b = manifestHash([
      { metadata: { name: 'x' }, data: { b: '2', a: '1' }, kind: 'ConfigMap', apiVersion: 'v1' },
    ]);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(a).toBe(b);
    expect(
      manifestHash([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1', b: '3' } }]),
    ).not.toBe(a);
  });

  it('matches a known value, so hashes stay stable across releases', () => {
    // Changing this hash restarts every workload on every edge after an upgrade.
    expect(manifestHash([])).toBe('4f53cda18c2baa0c');
  });
});
