/**
 * A replica's membership renewal (hub/replicas/index.ts `renewMembership`) on a hub's tables in
 * memory, with the clock faked: after renewing failed for longer than the lease (its database was
 * away), the replica closes the connections the tables no longer say it serves (the leader ended
 * them meanwhile), and only those; a shorter absence closes nothing. The registry is the real one,
 * wrapped by a test double that fails its renewals while the test says the database is away.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { EdgeLeases, LEASE_RENEW_MS, LEASE_TTL_MS } from '../state/leases.js';
import { HubReplicas } from '../state/replicas.js';
import { renewMembership } from './index.js';

const SELF = 'replica-a';

function membership() {
  const { db, state } = memoryHubState();
  const registry = new HubReplicas(db, SELF);
  registry.register('http://hub-a:7443');
  const leases = new EdgeLeases(db, SELF);
  for (const edge of ['e1', 'e2']) {
    state.edges.enroll({ name: edge, project: 'default', approved: true, at: Date.now() });
    state.edges.connected(edge, {
      at: Date.now(),
      agentVersion: 't',
      remoteAddress: '10.0.0.1',
      replica: SELF,
      connection: `c-${edge}`,
    });
    leases.take(edge);
  }
  const db_ = { away: false };
  // Test double: the real registry, whose renewals fail while the database is "away".
  const registryDouble = Object.create(registry) as HubReplicas;
  registryDouble.renew = (now?: number) => {
    if (db_.away) throw new Error('the database is away');
    return registry.renew(now);
  };
  const lost: { edges: string[]; awayMs: number }[] = [];
  const timer = renewMembership({
    leases,
    registry: registryDouble,
    leaseMs: LEASE_TTL_MS,
    state,
    connections: () => ['e1', 'e2'],
    replaced: () => undefined,
    leaseLost: (edges, awayMs) => void lost.push({ edges, awayMs }),
    leading: () => false,
    advertiseUrl: () => 'http://hub-a:7443',
  });
  return { state, db: db_, lost, timer };
}

describe('renewing a replica after its database was away', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('past the lease: closes the connections the leader ended meanwhile, and only those', () => {
    const m = membership();
    vi.advanceTimersByTime(LEASE_RENEW_MS);
    m.db.away = true;
    vi.advanceTimersByTime(LEASE_TTL_MS + LEASE_RENEW_MS);
    // Meanwhile the leader took this replica for dead and ended e1's connection in the tables.
    m.state.edges.disconnected('e1', Date.now(), 'stopped answering (its lease expired)', 'c-e1');
    expect(m.lost).toEqual([]);
    m.db.away = false;
    vi.advanceTimersByTime(LEASE_RENEW_MS);
    expect(m.lost).toEqual([{ edges: ['e1'], awayMs: expect.any(Number) }]);
    expect(m.lost[0]!.awayMs).toBeGreaterThan(LEASE_TTL_MS);
    // Renewing on time again: nothing more.
    vi.advanceTimersByTime(3 * LEASE_RENEW_MS);
    expect(m.lost).toHaveLength(1);
    clearInterval(m.timer);
  });

  it('within the lease: closes nothing, even a connection the tables do not have', () => {
    const m = membership();
    m.db.away = true;
    vi.advanceTimersByTime(2 * LEASE_RENEW_MS);
    m.state.edges.disconnected('e2', Date.now(), 'gone', 'c-e2');
    m.db.away = false;
    vi.advanceTimersByTime(LEASE_RENEW_MS);
    expect(m.lost).toEqual([]);
    clearInterval(m.timer);
  });
});
