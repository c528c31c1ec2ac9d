/** The replicas' bus messages: cut below PostgreSQL's payload limit, read back whole; bad ones dropped. */
import { describe, expect, it } from 'vitest';
import { MAX_PAYLOAD_BYTES, parsePayload, payloads } from './bus.js';

describe('replica bus payloads', () => {
  it('sends a short message as one payload', () => {
    const p = payloads('r1', { t: 'specs', edges: ['e1', 'e2'] });
    expect(p).toHaveLength(1);
    expect(parsePayload(p[0])).toEqual({ from: 'r1', m: { t: 'specs', edges: ['e1', 'e2'] } });
  });

  it('cuts a long list into parts below the limit that together hold every item once', () => {
    const edges = Array.from({ length: 10_000 }, (_, i) => `edge-${String(i).padStart(5, '0')}`);
    const p = payloads('replica-a', { t: 'status', cause: 'report', edges });
    expect(p.length).toBeGreaterThan(1);
    for (const x of p) expect(Buffer.byteLength(x)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
    const back = p.map((x) => parsePayload(x)!);
    expect(back.every((b) => b.from === 'replica-a' && b.m.t === 'status' && b.m.cause === 'report')).toBe(true);
    expect(back.flatMap((b) => (b.m as { edges: string[] }).edges)).toEqual(edges);
  });

  it('drops what is not a message of ours', () => {
    expect(parsePayload('not json')).toBeUndefined();
    expect(parsePayload(JSON.stringify({ from: 'r', m: { t: 'drop-tables' } }))).toBeUndefined();
    expect(parsePayload(JSON.stringify({ m: { t: 'specs', edges: [] } }))).toBeUndefined();
  });
});
