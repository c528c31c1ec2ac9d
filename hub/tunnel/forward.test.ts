/** The signature one hub replica puts on a tunnel request it forwards to another (forward.ts). */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FORWARD_SIGNATURE_MAX_AGE_MS } from '../../core/durations.js';
import { OutpostError } from '../../core/errors.js';
import { FORWARD_SIGNATURE, FORWARDED_BY, signForward, verifyForward } from './forward.js';

const key = randomBytes(32);
const url = '/api/v1/edges/e1/logs/web?follow=true';
const now = 1_800_000_000_000;
const headers = (h: Record<string, string>) => h;

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(OutpostError);
    expect((err as OutpostError).status).toBe(401);
    return (err as Error).message;
  }
  throw new Error('not refused');
}

describe('forwarded request signatures', () => {
  it('a request signed by replica A for B is from A, on B only', () => {
    const h = signForward(key, 'a', 'b', 'GET', url, now);
    expect(verifyForward(key, 'b', h, 'GET', url, now + 1_000)).toBe('a');
    expect(refusal(() => verifyForward(key, 'c', h, 'GET', url, now))).toMatch(/not for this replica/);
  });

  it('a request from a client has no claim; a made-up or altered one is refused', () => {
    expect(verifyForward(key, 'b', {}, 'GET', url, now)).toBeUndefined();
    const h = signForward(key, 'a', 'b', 'GET', url, now);
    expect(refusal(() => verifyForward(key, 'b', headers({ [FORWARDED_BY]: 'a' }), 'GET', url, now))).toMatch(
      /set only by hub replicas.*is missing/,
    );
    // Another path, method, claimed sender or key: the signature does not match.
    expect(refusal(() => verifyForward(key, 'b', h, 'GET', '/api/v1/edges/e2/logs/web', now))).toMatch(
      /does not match/,
    );
    expect(refusal(() => verifyForward(key, 'b', h, 'POST', url, now))).toMatch(/does not match/);
    expect(refusal(() => verifyForward(key, 'b', { ...h, [FORWARDED_BY]: 'z' }, 'GET', url, now))).toMatch(
      /does not match/,
    );
    expect(refusal(() => verifyForward(randomBytes(32), 'b', h, 'GET', url, now))).toMatch(/does not match/);
    expect(refusal(() => verifyForward(key, 'b', { ...h, [FORWARD_SIGNATURE]: 'garbage' }, 'GET', url, now))).toMatch(
      /not for this replica/,
    );
  });

  it('an old signature is refused (a replay)', () => {
    const h = signForward(key, 'a', 'b', 'GET', url, now);
    expect(verifyForward(key, 'b', h, 'GET', url, now + FORWARD_SIGNATURE_MAX_AGE_MS)).toBe('a');
    expect(refusal(() => verifyForward(key, 'b', h, 'GET', url, now + FORWARD_SIGNATURE_MAX_AGE_MS + 1))).toMatch(
      /too old/,
    );
  });
});
