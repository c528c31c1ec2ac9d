import { describe, expect, it } from 'vitest';
import { byClaim, deliveryOrder, isDelivered, overlappingPaths, pathHolders, pathsOverlap } from './delivery.js';
import { DataObject, formatIssues, isObjectPath } from './resources.js';

const digest = `sha256:${'c'.repeat(64)}`;
const parse = (spec: Record<string, unknown>) =>
  DataObject.safeParse({
    kind: 'DataObject',
    metadata: { name: 'model' },
    spec: { version: 'v1', digest, size: 3, ...spec },
  });

describe('DataObject', () => {
  it('orders the file at its path (the name by default), with activation and expiry in milliseconds', () => {
    const r = parse({ edgeSelector: { matchLabels: { region: 'eu' } }, activateAt: '2026-12-01T06:00:00Z' });
    expect(r.success).toBe(true);
    expect(deliveryOrder(r.data!)).toEqual({
      version: 'v1',
      digest,
      size: 3,
      path: 'model',
      activateAt: Date.parse('2026-12-01T06:00:00Z'),
    });
  });

  it('refuses what cannot be delivered safely, naming the field', () => {
    const issues = (spec: Record<string, unknown>) => {
      const r = parse(spec);
      return r.success ? [] : formatIssues(r.error);
    };
    expect(issues({})).toEqual([{ path: 'spec.edgeSelector', message: expect.stringMatching(/select edges/) }]);
    expect(issues({ edges: ['e1'], path: '../etc/passwd' })[0]!.path).toBe('spec.path');
    expect(issues({ edges: ['e1'], activateAt: 'tomorrow' })[0]!.message).toMatch(/a time like 2026-12-01T06:00:00Z/);
    expect(issues({ edges: ['e1'], activateAt: '2026-12-02T00:00:00Z', expiresAt: '2026-12-01T00:00:00Z' })[0]).toEqual(
      { path: 'spec.expiresAt', message: 'must be after activateAt' },
    );
  });

  it('takes only relative paths without hidden, . or .. segments', () => {
    for (const ok of ['m.bin', 'models/detector.onnx', 'a/b/c']) expect(isObjectPath(ok)).toBe(true);
    for (const bad of ['', '/etc/passwd', '../x', 'a/../b', 'a//b', '.hidden', 'a/.tmp', 'a\0b'])
      expect(isObjectPath(bad)).toBe(false);
  });

  it('is delivered only when the edge reports that version and digest Delivered', () => {
    const o = { version: 'v2', digest };
    const p = { version: 'v2', digest, path: 'm', state: 'Delivered' as const, at: 1 };
    expect(isDelivered(o, p)).toBe(true);
    expect(isDelivered(o, { ...p, state: 'Waiting' })).toBe(false);
    expect(isDelivered(o, { ...p, version: 'v1' })).toBe(false);
    expect(isDelivered(o, undefined)).toBe(false);
  });
});

describe('one path per edge', () => {
  it('overlaps the same path and a path with a directory of it, not siblings or look-alike names', () => {
    expect(pathsOverlap('models/m.bin', 'models/m.bin')).toBe(true);
    expect(pathsOverlap('models', 'models/m.bin')).toBe(true);
    expect(pathsOverlap('models/m.bin/x', 'models/m.bin')).toBe(true);
    expect(pathsOverlap('models/a', 'models/b')).toBe(false);
    expect(pathsOverlap('models', 'models-old/m.bin')).toBe(false);
    expect(pathsOverlap('mod', 'models')).toBe(false);
  });

  it('finds every overlapping pair without comparing every pair', () => {
    const o = overlappingPaths([
      { name: 'a', path: 'models/m.bin' },
      { name: 'b', path: 'models/m.bin' },
      { name: 'c', path: 'models' },
      { name: 'd', path: 'other/x' },
      { name: 'e', path: 'models/n.bin' },
    ]);
    expect(Object.fromEntries([...o].map(([k, v]) => [k, [...v].sort()]))).toEqual({
      a: ['b', 'c'],
      b: ['a', 'c'],
      c: ['a', 'b', 'e'],
      e: ['c'],
    });
  });

  it('keeps the first claim of each path in the order given, blocking those that overlap a kept one', () => {
    // c (a directory of a's and e's paths) blocked by a; e kept, since c is not.
    const blocked = pathHolders([
      { name: 'a', path: 'models/m.bin' },
      { name: 'c', path: 'models' },
      { name: 'b', path: 'models/m.bin' },
      { name: 'e', path: 'models/n.bin' },
      { name: 'f', path: 'models/m.bin/x' },
    ]);
    expect(Object.fromEntries([...blocked].map(([k, v]) => [k, v.name]))).toEqual({ c: 'a', b: 'a', f: 'a' });
    // The directory first: it holds, the files inside it wait.
    expect([
      ...pathHolders([
        { name: 'c', path: 'models' },
        { name: 'a', path: 'models/m.bin' },
      ]).keys(),
    ]).toEqual(['a']);
  });

  it('ranks the claim the edge holds or fetches first, a failed one next, then by name', () => {
    const at = 1;
    const reports: Record<string, { state: 'Delivered' | 'Failed' | 'Downloading' } | undefined> = {
      z: { state: 'Delivered' },
      y: { state: 'Failed' },
      b: undefined,
      a: undefined,
      x: { state: 'Downloading' },
    };
    const ranked = byClaim(
      Object.keys(reports).map((name) => ({ name })),
      (c) => (reports[c.name] ? { ...reports[c.name]!, version: 'v', digest: 'd', path: 'p', at } : undefined),
    );
    expect(ranked.map((c) => c.name)).toEqual(['x', 'z', 'y', 'a', 'b']);
  });
});
