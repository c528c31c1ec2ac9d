import { describe, expect, it } from 'vitest';
import { parseManifests } from '../../core/manifest.js';
import { checkYaml, editable, parseObjects, toYaml } from './yaml.js';

const hubMessage = (text: string) => {
  try {
    parseManifests(text);
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  }
};
const uiMessage = (text: string) => {
  try {
    parseObjects(text);
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  }
};

describe('YAML in the editor', () => {
  it('reports syntax errors with the same words and line as the hub would', () => {
    for (const text of [
      'kind: Workload\nspec: [',
      'a: 1\na: 2\n',
      'kind: Workload\n---\n- 1\n---\njust a string\n',
      'x:\n\t- tab',
    ]) {
      expect(uiMessage(text)).toBe(hubMessage(text));
    }
    const r = checkYaml('kind: Workload\nspec: [');
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(/^YAML document 1 \(line \d+, column \d+\)/);
  });

  it('parses several documents and lists the same way as the hub', () => {
    const text =
      'kind: Workload\nmetadata: {name: a}\n---\n---\nkind: List\nitems:\n  - {kind: Placement, metadata: {name: b}}\n';
    expect(parseObjects(text)).toEqual(parseManifests(text));
    expect(checkYaml('# only a comment\n')).toEqual({ ok: false, message: expect.stringMatching(/holds no object/) });
  });

  it('edits an object without its status and server fields, keeping resourceVersion to catch a concurrent change', () => {
    const o = {
      apiVersion: 'outpost.dev/v1alpha1',
      kind: 'Workload',
      metadata: { name: 'w', project: 'p', labels: {}, annotations: {}, resourceVersion: '7', uid: 'u', generation: 3 },
      spec: { manifests: [] },
      status: { revision: 2 },
    };
    expect(editable(o)).toEqual({
      apiVersion: 'outpost.dev/v1alpha1',
      kind: 'Workload',
      metadata: { name: 'w', project: 'p', resourceVersion: '7' },
      spec: { manifests: [] },
    });
    expect(parseObjects(toYaml(editable(o)))).toEqual([editable(o)]);
  });
});
