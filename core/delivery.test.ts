import { describe, expect, it } from 'vitest';
import { deliveryOrder, isDelivered } from './delivery.js';
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
