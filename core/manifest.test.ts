import { describe, expect, it } from 'vitest';
import type { Manifest } from './resources.js';
import { declaredPorts, parseManifests, podTemplates } from './manifest.js';

describe('parseManifests', () => {
  it('parses several documents and skips empty ones', () => {
    const text = [
      '---',
      '# a comment-only document',
      '---',
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata: {name: cfg}',
      'data: {a: "1"}',
      '---',
      '---',
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      '  name: p',
      '',
    ].join('\n');
    expect(parseManifests(text)).toEqual([
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { a: '1' } },
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } },
    ]);
  });

  it('returns nothing for empty text or comments only', () => {
    expect(parseManifests('')).toEqual([]);
    expect(parseManifests('# nothing\n')).toEqual([]);
  });

  it('reads JSON too, and expands kind: List', () => {
    expect(parseManifests('{"kind": "List", "items": [{"kind": "Pod"}, {"kind": "Service"}]}')).toEqual([
      { kind: 'Pod' },
      { kind: 'Service' },
    ]);
  });

  it('expands a top-level list', () => {
    expect(parseManifests('- kind: Pod\n- kind: Service\n')).toEqual([{ kind: 'Pod' }, { kind: 'Service' }]);
  });

  const bad: [string, string][] = [
    [
      'kind: Pod\n---\njust text\n',
      'YAML document 2: expected a Kubernetes object (a mapping with apiVersion, kind and metadata), got "just text"',
    ],
    [
      'a: 1\n---\nb: [1,\n',
      'YAML document 2 (line 4, column 1): Flow sequence in block collection must be sufficiently indented and end with a ]',
    ],
    ['kind: Pod\nkind: Service\n', 'YAML document 1 (line 2, column 1): Map keys must be unique'],
    [
      'x: 1\n---\ny: 2\n---\na:\n  b: 1\n c: 2\n',
      'YAML document 3 (line 7, column 1): All mapping items must start at the same column',
    ],
  ];
  it.each(bad)('names the document and line: %j', (text, msg) => {
    expect(() => parseManifests(text)).toThrow(msg);
    try {
      parseManifests(text);
    } catch (err) {
      expect((err as Error).message).not.toContain('\n');
    }
  });

  it('refuses an alias bomb instead of expanding it', () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 0; i < 8; i++)
      lines.push(
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9)
          .fill(`*${String.fromCharCode(97 + i)}`)
          .join(',')}]`,
      );
    expect(() => parseManifests(lines.join('\n'))).toThrow(/YAML document 1: .*alias/i);
  });
});

const pod = (name: string, ports: number[]): Manifest => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels: { app: name } },
  spec: { containers: [{ name: 'c', image: 'busybox', ports: ports.map((p) => ({ containerPort: p })) }] },
});

const controller = (kind: string, name: string, spec: Record<string, unknown>, ports: number[] = []): Manifest => ({
  apiVersion: 'apps/v1',
  kind,
  metadata: { name },
  spec: {
    ...spec,
    template: {
      metadata: { labels: { app: name, n: 1 } },
      spec: { restartPolicy: 'Always', containers: [{ name: 'c', ports: ports.map((p) => ({ containerPort: p })) }] },
    },
  },
});

describe('podTemplates', () => {
  it('yields kind, name, replicas, pod spec and pod labels for each workload kind', () => {
    const ms: Manifest[] = [
      pod('p', [80]),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: {} },
      controller('Deployment', 'd', { replicas: 3 }),
      controller('Deployment', 'd0', { replicas: 0 }),
      controller('Deployment', 'dx', {}),
      controller('StatefulSet', 's', { replicas: 2 }),
      controller('ReplicaSet', 'r', {}),
      controller('DaemonSet', 'ds', { replicas: 5 }),
      controller('Job', 'j', { parallelism: 4, replicas: 9 }),
    ];
    const t = podTemplates(ms);
    expect(t.map((x) => [x.kind, x.name, x.replicas, x.index])).toEqual([
      ['Pod', 'p', 1, 0],
      ['Deployment', 'd', 3, 2],
      ['Deployment', 'd0', 0, 3],
      ['Deployment', 'dx', 1, 4],
      ['StatefulSet', 's', 2, 5],
      ['ReplicaSet', 'r', 1, 6],
      ['DaemonSet', 'ds', 1, 7],
      ['Job', 'j', 4, 8],
    ]);
    expect(t[0].podSpec.containers[0].image).toBe('busybox');
    expect(t[0].podLabels).toEqual({ app: 'p' });
    expect(t[1].podSpec.restartPolicy).toBe('Always');
    expect(t[1].podLabels).toEqual({ app: 'd' });
  });

  it('gives an empty container list for a malformed spec instead of throwing', () => {
    const ms = [
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' } },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'y' },
        spec: { replicas: 'two', template: { spec: { containers: 'nope' } } },
      },
    ] as Manifest[];
    expect(podTemplates(ms).map((t) => [t.name, t.replicas, t.podSpec.containers])).toEqual([
      ['x', 1, []],
      ['y', 1, []],
    ]);
  });
});

describe('declaredPorts', () => {
  it('collects containerPorts of all workload kinds, sorted and unique', () => {
    const ms = [
      pod('p', [8080, 80]),
      controller('Deployment', 'd', {}, [80, 9090]),
      controller('Job', 'j', {}, [7000]),
      controller('StatefulSet', 's', {}, [5432]),
    ];
    expect(declaredPorts(ms)).toEqual([80, 5432, 7000, 8080, 9090]);
  });

  it('ignores Services, init containers and invalid values', () => {
    const ms: Manifest[] = [
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ports: [{ port: 80, targetPort: 8080 }] } },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p' },
        spec: {
          initContainers: [{ name: 'i', ports: [{ containerPort: 1111 }] }],
          containers: [
            {
              name: 'c',
              ports: [
                { containerPort: '80' },
                { containerPort: 0 },
                { containerPort: 70000 },
                { name: 'x' },
                'junk',
                { containerPort: 443 },
              ],
            },
          ],
        },
      },
    ];
    expect(declaredPorts(ms)).toEqual([443]);
  });
});
