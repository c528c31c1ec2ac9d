/** The edge's followers (edge/orders/followers.ts): each checked in its own turn, one failing does not stop the others. */
import { describe, expect, it } from 'vitest';
import { SpecFollowers } from './followers.js';

const turns = () => new Promise((r) => setImmediate(() => setImmediate(r)));

describe('SpecFollowers', () => {
  it('checks every follower after a change, tells those that wait on it of the connection, and outlives one that throws', async () => {
    const seen: string[] = [];
    const followers = new SpecFollowers();
    followers.add({
      kind: 'broken',
      check: () => {
        throw new Error('cannot read its part');
      },
    });
    followers.add({ kind: 'workloads', check: () => void seen.push('workloads checked') });
    followers.add({
      kind: 'image-staging',
      check: () => void seen.push('staging checked'),
      connected: () => void seen.push('staging goes on'),
    });
    followers.checkAll();
    // Each in a turn of its own: none has run yet.
    expect(seen).toEqual([]);
    await turns();
    expect(seen).toEqual(['workloads checked', 'staging checked']);
    followers.connected();
    await turns();
    expect(seen).toEqual(['workloads checked', 'staging checked', 'staging goes on']);
  });
});
