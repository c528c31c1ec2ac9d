import { describe, expect, it } from 'vitest';
import { parseManifests } from '../../core/manifest.js';
import { checkYaml, editable, toYaml } from './yaml.js';

describe('YAML in the editor', () => {
  it('reports syntax errors with the document and line, as the hub words them', () => {
    const r = checkYaml('kind: Workload\nspec: [');
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(/^YAML document 1 \(line \d+, column \d+\)/);
  });

  it('says so when the text holds no object', () => {
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
    expect(parseManifests(toYaml(editable(o)))).toEqual([editable(o)]);
  });
});
