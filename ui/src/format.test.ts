import { describe, expect, it } from 'vitest';
import { ago, bytes, dateTime, duration } from './format.js';

describe('format', () => {
  it('durations read naturally at every scale', () => {
    expect([0, 42_000, 65_000, 15 * 60_000, 3 * 3_600_000 + 120_000, 26 * 3_600_000].map(duration)).toEqual([
      '0s',
      '42s',
      '1m 5s',
      '15m',
      '3h 2m',
      '1d 2h',
    ]);
  });

  it('ago is relative to now and honest about missing values', () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    expect(ago('2026-01-01T11:55:00Z', now)).toBe('5m ago');
    expect(ago(now - 500, now)).toBe('just now');
    expect(ago(undefined, now)).toBe('never');
    expect(ago('garbage', now)).toBe('unknown');
  });

  it('dates are year-first to the second; sizes in binary units', () => {
    expect(dateTime(new Date(2026, 0, 2, 3, 4, 5).getTime())).toBe('2026-01-02 03:04:05');
    expect([undefined, 512, 1536, 24 * 1024 ** 3].map(bytes)).toEqual(['—', '512 B', '1.5 KiB', '24 GiB']);
  });
});
