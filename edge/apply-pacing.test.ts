// The pace of applies that settle nothing (edge/apply-pacing.ts), as a pure rule.
import { describe, expect, it } from 'vitest';
import { ApplyPacing, unsettledDelay } from './apply-pacing.js';

describe('apply pacing', () => {
  it('waits nothing after the first failed apply, then the base, doubling up to the maximum', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => unsettledDelay(n, 5_000, 300_000))).toEqual([
      0, 5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000,
    ]);
  });

  it('looks at drift it put back a period later at the soonest, then twice as long each time', () => {
    const p = new ApplyPacing(1_000, 8_000);
    p.unsettled('web', 'h1', 0, { drift: ['Pod/web'] });
    expect(p.why('web')).toBeUndefined(); // a first put-back is no news
    expect(p.holdBack('web', 'h1', 500)).toBe('changed on site: Pod/web; put back; looking again in 1 s');
    expect(p.holdBack('web', 'h1', 1_000)).toBeUndefined();
    p.unsettled('web', 'h1', 1_000, { drift: ['Pod/web'] });
    const why =
      'changed on site again after it was put back: Pod/web; something on site keeps changing it (attempt 2; the next in 2 s, twice as long each time up to 8 s)';
    expect(p.why('web')).toBe(why);
    expect(p.holdBack('web', 'h1', 2_900)).toBe(why);
    expect(p.holdBack('web', 'h1', 3_000)).toBeUndefined();
    p.unsettled('web', 'h1', 3_000, { drift: ['Pod/web'] });
    expect(p.holdBack('web', 'h1', 6_000)).toMatch(/attempt 3; the next in 4 s/);
    // New content from the hub is applied at once.
    expect(p.holdBack('web', 'h2', 6_000)).toBeUndefined();
  });

  it('says why an apply failed, and starts over once the workload settles', () => {
    const p = new ApplyPacing(1_000, 60_000);
    p.unsettled('db', 'h1', 0, { error: 'image not found' });
    expect(p.why('db')).toBe('applying failed: image not found');
    expect(p.holdBack('db', 'h1', 0)).toBeUndefined(); // the next pass tries again
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
