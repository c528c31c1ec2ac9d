import { afterEach, describe, expect, it, vi } from 'vitest';
import { TokenStreams } from './token-streams.js';

const streams: TokenStreams[] = [];
afterEach(() => {
  for (const s of streams.splice(0)) s.close();
  vi.useRealTimers();
});

function registry(live: (ids: string[]) => Set<string> = (ids) => new Set(ids)) {
  const broadcast = vi.fn();
  const s = new TokenStreams({ live, broadcast, recheckMs: 1_000 });
  streams.push(s);
  return { s, broadcast };
}

describe('TokenStreams', () => {
  it("revoke ends that token's requests only, tells the other replicas, and forgets them", () => {
    const { s, broadcast } = registry();
    const closed: string[] = [];
    s.hold({ tokenId: 'a' }, (why) => closed.push(`a1: ${why}`));
    s.hold({ tokenId: 'a' }, (why) => closed.push(`a2: ${why}`));
    s.hold({ tokenId: 'b' }, (why) => closed.push(`b: ${why}`));
    expect(s.revoke('a')).toBe(2);
    expect(closed).toEqual(['a1: token a was revoked', 'a2: token a was revoked']);
    expect(broadcast).toHaveBeenCalledWith(['a']);
    expect(s.size).toBe(1);
    // A revocation another replica sent: ended here, not sent on again.
    expect(s.revoked(['b', 'c'])).toBe(1);
    expect(broadcast).toHaveBeenCalledTimes(1);
    expect(s.size).toBe(0);
  });

  it('a released request is not closed later; a close that throws does not stop the others', () => {
    const { s } = registry();
    const first = vi.fn();
    const release = s.hold({ tokenId: 'a' }, first);
    release();
    release();
    s.hold({ tokenId: 'a' }, () => {
      throw new Error('socket already gone');
    });
    const last = vi.fn();
    s.hold({ tokenId: 'a' }, last);
    expect(s.revoked(['a'])).toBe(2);
    expect(first).not.toHaveBeenCalled();
    expect(last).toHaveBeenCalledOnce();
  });

  it('ends a request when its credential expires, each at its own time', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { s } = registry();
    const closed: string[] = [];
    s.hold({ tokenId: 'a', expiresAt: 1_000_000 + 5_000 }, (why) => closed.push(why));
    s.hold({ tokenId: 'a', expiresAt: 1_000_000 + 9_000 }, (why) => closed.push(why));
    s.hold({ tokenId: 'a', expiresAt: null }, (why) => closed.push(why));
    vi.advanceTimersByTime(4_999);
    expect(closed).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(closed).toEqual([`token a expired at ${new Date(1_005_000).toISOString()}`]);
    vi.advanceTimersByTime(4_000);
    expect(closed).toHaveLength(2);
    expect(s.size).toBe(1);
  });

  it('rechecks the tokens of open requests in one call, and ends those no longer valid', () => {
    vi.useFakeTimers();
    const asked: string[][] = [];
    let valid = new Set(['a', 'b']);
    const { s } = registry((ids) => (asked.push(ids), new Set(ids.filter((i) => valid.has(i)))));
    const closed: string[] = [];
    s.hold({ tokenId: 'a' }, (why) => closed.push(why));
    s.hold({ tokenId: 'b' }, (why) => closed.push(why));
    vi.advanceTimersByTime(1_000);
    expect(asked).toEqual([['a', 'b']]);
    expect(closed).toEqual([]);
    valid = new Set(['a']);
    vi.advanceTimersByTime(1_000);
    expect(closed).toEqual(['token b is no longer valid (revoked or expired)']);
    // The database away: nothing is ended for it, and the next recheck tries again.
    valid = new Set();
    const failing = registry(() => {
      throw new Error('database unavailable');
    }).s;
    failing.hold({ tokenId: 'a' }, (why) => closed.push(why));
    expect(failing.recheck()).toBe(0);
    expect(failing.size).toBe(1);
  });

  it('stops rechecking once nothing is open', () => {
    vi.useFakeTimers();
    const live = vi.fn((ids: string[]) => new Set(ids));
    const { s } = registry(live);
    s.hold({ tokenId: 'a' }, () => {})();
    vi.advanceTimersByTime(5_000);
    expect(live).not.toHaveBeenCalled();
  });
});
