/**
 * `-o jsonpath` and `-o custom-columns` against what kubectl 1.33.13 (test/kube/build.sh kubectl)
 * printed for the same template on the same object (`kubectl create -f obj.json --dry-run=client
 * -o jsonpath=...`, with and without `--allow-missing-template-keys=false`); each expectation
 * below is its answer.
 */
import { describe, expect, it } from 'vitest';
import { parseGetOutput, renderCustomColumns, renderJsonPathOutput } from './get-output.js';

const OBJ = {
  kind: 'ConfigMap',
  metadata: { name: 'z', labels: {} },
  data: { e: '' },
  spec: { a: null, e: '', l: [], m: {}, n: { x: null } },
};
const LIST = { kind: 'List', items: [{ metadata: { name: 'a' } }, { metadata: { name: 'c' } }] };

function run(template: string, value: unknown, allowMissingKeys: boolean): string {
  const out = parseGetOutput(`jsonpath=${template}`);
  if (out.kind !== 'jsonpath') throw new Error('not a jsonpath output');
  return renderJsonPathOutput(out, value, { allowMissingKeys });
}

describe('-o jsonpath as kubectl executes it', () => {
  it.each([
    // template, kubectl's output (the same with and without --allow-missing-template-keys=false)
    ['{.spec.a}', 'null'],
    ['{.spec.e}', ''],
    ['{.spec.l}', '[]'],
    ['{.spec.m}', '{}'],
    ['{.spec.n}', '{"x":null}'],
    ['{.spec.n.x}', 'null'],
    ['{.metadata.labels}', '{}'],
    ['{.data.e}', ''],
    ['{.spec.l[*]}', ''],
    ['{.spec.l[*].x}', ''],
    ['{.spec.a}{.spec.e}|', 'null|'],
  ])('%s on a field that exists prints %j, no error', (template, printed) => {
    expect(run(template, OBJ, true)).toBe(printed);
    expect(run(template, OBJ, false)).toBe(printed);
  });

  it.each([
    ['{.spec.nope}', 'nope is not found'],
    ['{.spec.a.b}', 'b is not found'],
    ['{.spec.n.x.y}', 'y is not found'],
    ['{.metadata.labels.q}', 'q is not found'],
    ['{.spec.e.x}', 'x is not found'],
  ])('%s prints nothing, or with missing keys not allowed fails: %s', (template, why) => {
    expect(run(template, OBJ, true)).toBe('');
    expect(() => run(template, OBJ, false)).toThrow(
      `error executing jsonpath ${JSON.stringify(template)}: Error executing template: ${why}. \`-o yaml\` shows the fields the object has`,
    );
  });

  it('fails on an index past the end whether missing keys are allowed or not', () => {
    for (const allow of [true, false])
      expect(() => run('{.spec.l[0]}', OBJ, allow)).toThrow(
        'Error executing template: array index out of bounds: index 0, length 0.',
      );
  });

  it('in a range, a field no item has fails only when missing keys are not allowed', () => {
    const t = '{range .items[*]}{.metadata.name}{.nope}{"\\n"}{end}';
    expect(run(t, LIST, true)).toBe('a\nc\n');
    expect(() => run(t, LIST, false)).toThrow(
      'error executing jsonpath "{range .items[*]}{.metadata.name}{.nope}{\\"\\\\n\\"}{end}": Error executing template: nope is not found.',
    );
    expect(() => run('{.items[*].spec.nope}', LIST, false)).toThrow('spec is not found');
    // No input, no output: a wildcard over an empty list selects nothing and nothing after it fails.
    expect(run('{.items[*].spec.nope}', { items: [] }, false)).toBe('');
  });
});

describe('-o custom-columns as kubectl prints them', () => {
  it('a missing field is <none>; an index past the end is an error naming the column', () => {
    const cols = (s: string) => {
      const out = parseGetOutput(`custom-columns=${s}`);
      if (out.kind !== 'custom-columns') throw new Error('not custom-columns');
      return out.columns;
    };
    expect(renderCustomColumns(cols('N:.metadata.name,X:.spec.nope'), LIST.items)).toMatch(
      /^N +X\na +<none>\nc +<none>\n$/,
    );
    expect(() => renderCustomColumns(cols('N:.metadata.name,X:.spec.l[5]'), [OBJ])).toThrow(
      'array index out of bounds: index 5, length 0 (column X: .spec.l[5])',
    );
  });
});
