/** Retention and coalescing of an edge's connection history, on the hub's tables in memory. */
import { describe, expect, it } from 'vitest';
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import {
  CONNECTIONS_PER_EDGE,
  EVENTS_MAX_AGE_MS,
  pruneHistory,
  recordConnect,
  recordDisconnect,
  RECONNECT_COALESCE_MS,
} from './history.js';

function hubState() {
  const { state } = memoryHubState();
  state.edges.enroll({ name: 'e1', project: 'default', approved: true, at: 0 });
  return state;
}
const reasons = (state: ReturnType<typeof hubState>) =>
  state.events
    .list('default', { limit: 100 })
    .reverse()
    .map((e) => e.reason);

describe('connection history', () => {
  it('reconnects within a minute update one event; a later one adds a new event', () => {
    const state = hubState();
    let n = 0;
    const conn = () => ({
      edge: 'e1',
      remoteAddress: '10.0.0.1',
      agentVersion: 't',
      replica: 'r1',
      connection: `c${++n}`,
    });
    const gone = () => ({ edge: 'e1', connection: `c${n}`, code: 1006, reason: '' });
    let t = 1_000_000;
    recordConnect(state, conn(), t);
    for (let i = 0; i < 50; i++) {
      recordDisconnect(state, gone(), (t += 100));
      recordConnect(state, conn(), (t += 100));
    }
    const events = state.events.list('default', { limit: 100 }).reverse();
    expect(events.map((e) => e.reason)).toEqual(['Connected', 'Reconnected']);
    expect(events[1].message).toMatch(/50 reconnects since/);
    recordDisconnect(state, gone(), (t += RECONNECT_COALESCE_MS + 1));
    recordConnect(state, conn(), (t += RECONNECT_COALESCE_MS + 1));
    expect(reasons(state)).toEqual(['Connected', 'Reconnected', 'Disconnected', 'Connected']);
  });

  it('prunes events past their age and connection rows past the per-edge count', () => {
    const state = hubState();
    const now = 10 * EVENTS_MAX_AGE_MS;
    state.events.record({
      project: 'default',
      kind: 'Edge',
      name: 'e1',
      reason: 'Old',
      message: 'old',
      at: now - EVENTS_MAX_AGE_MS - 1,
    });
    state.events.record({ project: 'default', kind: 'Edge', name: 'e1', reason: 'New', message: 'new', at: now - 1 });
    for (let i = 0; i < CONNECTIONS_PER_EDGE + 20; i++) {
      const c = { replica: 'r1', connection: `c${i}` };
      state.edges.connected('e1', { at: now - 1000 + i, agentVersion: 't', remoteAddress: '10.0.0.1', ...c });
      state.edges.disconnected('e1', now - 999 + i, '1006', c.connection);
    }
    const n = pruneHistory(state, now);
    expect(n).toEqual({ events: 1, connections: 20 });
    expect(reasons(state)).toEqual(['New']);
    const kept = state.edges.connections('e1', 500);
    expect(kept).toHaveLength(CONNECTIONS_PER_EDGE);
    expect(Math.min(...kept.map((c) => c.connectedAt))).toBe(now - 1000 + 20);
  });
});
