// The pace of applies that settle nothing (edge/apply-pacing.ts), as a pure rule.
import { describe, expect, it } from 'vitest';
import { ApplyPacing, unsettledDelay } from './apply-pacing.js';

describe('apply pacing', () => {
  it('waits nothing after the first unsettled apply, then the base, doubling up to the maximum', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => unsettledDelay(n, 5_000, 300_000))).toEqual([
      0, 5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000,
    ]);
  });

  it('holds back the same content until its time, with a reason that stays the same meanwhile', () => {
    const p = new ApplyPacing(1_000, 8_000);
    p.unsettled('web', 'h1', 0, { drift: ['Pod/web'] });
    expect(p.holdBack('web', 'h1', 0)).toBeUndefined(); // the first one: the next pass applies again
    expect(p.why('web')).toBeUndefined();
    p.unsettled('web', 'h1', 10, { drift: ['Pod/web'] });
    const why = p.holdBack('web', 'h1', 500);
    expect(why).toBe(
      'changed on site again after it was put back: Pod/web; something on site keeps changing it (attempt 2; the next in 1 s, twice as long each time up to 8000 ms)',
    );
    expect(p.holdBack('web', 'h1', 900)).toBe(why);
    expect(p.holdBack('web', 'h1', 1_010)).toBeUndefined();
    p.unsettled('web', 'h1', 1_010, { drift: ['Pod/web'] });
    expect(p.holdBack('web', 'h1', 3_000)).toMatch(/attempt 3; the next in 2 s/);
    // New content from the hub is applied at once.
    expect(p.holdBack('web', 'h2', 3_000)).toBeUndefined();
  });

  it('says why an apply failed, and starts over once the workload settles', () => {
    const p = new ApplyPacing(1_000, 60_000);
    p.unsettled('db', 'h1', 0, { error: 'image not found' });
    expect(p.why('db')).toBe('applying failed: image not found');
    p.unsettled('db', 'h1', 5, { error: 'image not found' });
    expect(p.holdBack('db', 'h1', 10)).toBe(
      'applying failed: image not found (attempt 2; the next in 1 s, twice as long each time up to 1 min)',
    );
    p.settled('db');
    expect(p.holdBack('db', 'h1', 10)).toBeUndefined();
    p.unsettled('db', 'h1', 20, { error: 'image not found' });
    expect(p.holdBack('db', 'h1', 20)).toBeUndefined();
  });

  it('counts again from one for other content', () => {
    const p = new ApplyPacing(1_000, 60_000);
    p.unsettled('db', 'h1', 0, { error: 'x' });
    p.unsettled('db', 'h1', 0, { error: 'x' });
    p.unsettled('db', 'h2', 0, { error: 'y' });
    expect(p.why('db')).toBe('applying failed: y');
  });
});
