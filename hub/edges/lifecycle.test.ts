/**
 * EdgeLifecycle's record of connections ending (hub/edges/lifecycle.ts `disconnected`), on a hub
 * state in memory: the connections that end in one turn are recorded together at its end, read
 * ahead once, and an edge's ended connection is always recorded before its next one, even when
 * both come in the same turn. The scheduler is a recording test double; the other dependencies are
 * not used by these paths.
 */
import { describe, expect, it } from 'vitest';
import { memoryHubState, SEED_REPLICA, seedEdge } from '../../test/fixtures/hub-state.js';
import { EdgeLifecycle, type EdgeLifecycleDeps } from './lifecycle.js';

function lifecycleOnMemory() {
  const { db, state } = memoryHubState();
  for (const name of ['e1', 'e2', 'e3']) seedEdge(db, name, { lastSeen: Date.now() });
  const marked: string[] = [];
  const readAhead: string[][] = [];
  const schedulerDouble = { markEdge: () => undefined, markStatus: (name: string) => void marked.push(name) };
  const lifecycle = new EdgeLifecycle({
    state,
    scheduler: schedulerDouble,
    readAheadDisconnects: (edges: string[]) => void readAhead.push(edges),
    replica: SEED_REPLICA,
  } as unknown as EdgeLifecycleDeps);
  return { state, lifecycle, marked, readAhead };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('EdgeLifecycle disconnections', () => {
  it("records a turn's ended connections together at its end, read ahead once", async () => {
    const { state, lifecycle, marked, readAhead } = lifecycleOnMemory();
    for (const edge of ['e1', 'e2', 'e3'])
      lifecycle.disconnected({ edge, connection: `seed-${edge}`, code: 1006, reason: '' });
    expect(state.edges.get('e1')?.connectedSince).toBeDefined();
    await turn();
    expect(readAhead).toEqual([['e1', 'e2', 'e3']]);
    for (const edge of ['e1', 'e2', 'e3']) {
      expect(state.edges.get(edge)?.connectedSince).toBeUndefined();
      expect(state.events.last('default', 'Edge', edge)?.message).toBe(
        `edge ${edge} disconnected: connection lost (1006: no close from the edge: a network cut, or its process ended)`,
      );
    }
    expect(marked).toEqual(['e1', 'e2', 'e3']);
  });

  it("records an edge's ended connection before its new one of the same turn", async () => {
    const { state, lifecycle } = lifecycleOnMemory();
    lifecycle.disconnected({ edge: 'e1', connection: 'seed-e1', code: 1006, reason: 'link lost' });
    lifecycle.connected([
      { edge: 'e1', remoteAddress: '10.0.0.7', agentVersion: 't', replica: 'r1', connection: 'n1' },
    ]);
    await turn();
    expect(state.edges.get('e1')?.connectedSince).toBeDefined();
    expect(state.events.last('default', 'Edge', 'e1')?.reason).toBe('Reconnected');
  });

  it('records what is left when the hub stops', () => {
    const { state, lifecycle } = lifecycleOnMemory();
    lifecycle.disconnected({ edge: 'e2', connection: 'seed-e2', code: 1001, reason: 'going away' });
    lifecycle.stop('SIGTERM');
    expect(state.events.last('default', 'Edge', 'e2')?.message).toBe(
      'edge e2 disconnected: closed by the edge (1001: going away)',
    );
    // The others' connections end with the stop of their replica, saying so.
    expect(state.edges.get('e1')?.connectedSince).toBeUndefined();
    expect(state.edges.connections('e1', 1)[0]?.reason).toBe(`hub replica ${SEED_REPLICA} stopped (SIGTERM)`);
  });
});
