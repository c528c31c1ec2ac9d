import { describe, expect, it } from 'vitest';
import { diffLines, diffStats, withContext } from './diff.js';

const ops = (a: string, b: string) =>
  diffLines(a, b).map((l) => `${l.op === 'same' ? ' ' : l.op === 'add' ? '+' : '-'}${l.text}`);

describe('diffLines', () => {
  it('keeps common lines and marks a changed value as one removal and one addition, with line numbers', () => {
    const a = 'env:\n  - name: A\n    value: v1\nports: []\n';
    const b = 'env:\n  - name: A\n    value: v2\nports: []\n';
    expect(ops(a, b)).toEqual([' env:', '   - name: A', '-    value: v1', '+    value: v2', ' ports: []']);
    const d = diffLines(a, b);
    expect(d[2]).toMatchObject({ op: 'del', a: 3 });
    expect(d[3]).toMatchObject({ op: 'add', b: 3 });
    expect(d[4]).toMatchObject({ op: 'same', a: 4, b: 4 });
  });

  it('finds the longest common subsequence in the middle (an insertion does not look like a rewrite)', () => {
    expect(ops('a\nb\nc\nd', 'a\nx\nb\nc\ny\nd')).toEqual([' a', '+x', ' b', ' c', '+y', ' d']);
    expect(diffStats(diffLines('a\nb\nc\nd', 'a\nx\nb\nc\ny\nd'))).toEqual({ added: 2, removed: 0 });
  });

  it('handles empty sides', () => {
    expect(ops('', 'a\nb')).toEqual(['+a', '+b']);
    expect(ops('a', '')).toEqual(['-a']);
    expect(diffLines('same\n', 'same')).toEqual([{ op: 'same', text: 'same', a: 1, b: 1 }]);
  });

  it('shows changes with context and folds long unchanged stretches into gaps', () => {
    const a = Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n');
    const b = a.replace('line 10', 'LINE 10');
    const shown = withContext(diffLines(a, b), 2);
    expect(shown[0]).toBeNull();
    expect(shown.filter((l) => l !== null).map((l) => l!.text)).toEqual([
      'line 8',
      'line 9',
      'line 10',
      'LINE 10',
      'line 11',
      'line 12',
    ]);
    expect(shown[shown.length - 1]).toBeNull();
  });
});
