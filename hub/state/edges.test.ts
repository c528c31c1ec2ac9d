/** The edges state module on an in-memory hub database: what each method stores and reads back. */
import { describe, expect, it } from 'vitest';
import { memoryHubState } from '../../test/fixtures/hub-state.js';

const INV = {
  hostname: 'h',
  os: 'linux',
  arch: 'arm64',
  cpus: 2,
  memoryBytes: 1024,
  runtimes: ['process'],
  driver: 'process',
  agentVersion: '1.0.0',
};

function withEdges() {
  const { state } = memoryHubState();
  state.edges.enroll({ name: 'a', project: 'p', approved: true, at: 10 });
  state.edges.enroll({ name: 'b', project: 'p', approved: false, at: 20 });
  state.edges.enroll({ name: 'c', project: 'q', approved: true, at: 30 });
  return state.edges;
}

describe('edge state', () => {
  it('enrolls, approves, finds and forgets edges', () => {
    const edges = withEdges();
    expect(edges.get('b')).toEqual({ name: 'b', project: 'p', approved: false, enrolledAt: 20 });
    expect(edges.exists('b')).toBe(true);
    expect(edges.exists('zz')).toBe(false);
    expect(edges.projectOf('c')).toBe('q');
    expect(edges.names().sort()).toEqual(['a', 'b', 'c']);
    expect(edges.projects()).toEqual(['p', 'q']);
    expect(edges.count()).toBe(3);
    edges.approve('b');
    expect(edges.get('b')?.approved).toBe(true);
    edges.remove('b');
    expect(edges.get('b')).toBeUndefined();
    expect(edges.count()).toBe(2);
  });

  it('refuses a second enrollment of the same name', () => {
    const edges = withEdges();
    expect(() => edges.enroll({ name: 'a', project: 'q', approved: true, at: 1 })).toThrow(/UNIQUE/);
  });

  it('stores the inventory and says when its derived labels change', () => {
    const edges = withEdges();
    expect(edges.storeInventory('a', INV)).toBe(true);
    expect(edges.storeInventory('a', { ...INV, hostname: 'other' })).toBe(false);
    expect(edges.storeInventory('a', { ...INV, arch: 'amd64' })).toBe(true);
    expect(edges.get('a')?.inventory).toEqual({ ...INV, arch: 'amd64' });
    expect(edges.liveness('p').get('a')?.inventoryLabels).toMatchObject({ 'inventory.outpost.dev/arch': 'amd64' });
    expect(edges.storeInventory('nobody', INV)).toBe(false);
  });

  it('records connections, heartbeats and disconnections in the runtime facts and the history', () => {
    const edges = withEdges();
    edges.connected('a', { at: 100, agentVersion: '1.0.0', remoteAddress: '10.0.0.1' });
    edges.touch([['a', 150]]);
    expect(edges.get('a')).toMatchObject({ connectedSince: 100, lastSeen: 150, remoteAddress: '10.0.0.1' });
    expect(edges.quietSince(200)).toEqual(['a']);
    expect(edges.quietSince(150)).toEqual([]);
    edges.disconnected('a', 300, '1006 gone');
    expect(edges.get('a')).toMatchObject({ disconnectedAt: 300, lastSeen: 150 });
    expect(edges.get('a')?.connectedSince).toBeUndefined();
    expect(edges.quietSince(1_000)).toEqual([]);
    expect(edges.connections('a', 10)).toEqual([
      { connectedAt: 100, disconnectedAt: 300, reason: '1006 gone', remoteAddress: '10.0.0.1' },
    ]);
    expect(edges.lastSeenAll()).toEqual([{ name: 'a', project: 'p', lastSeen: 150 }]);
  });

  it('ends every open connection when the hub stops', () => {
    const edges = withEdges();
    edges.connected('a', { at: 100, agentVersion: 'v', remoteAddress: 'x' });
    edges.connected('c', { at: 100, agentVersion: 'v', remoteAddress: 'y' });
    expect(edges.allDisconnected(500, 'hub stopped')).toBe(2);
    expect(edges.connections('c', 1)[0]).toMatchObject({ disconnectedAt: 500, reason: 'hub stopped' });
    expect(edges.allDisconnected(600, 'hub stopped')).toBe(0);
  });

  it('gives the connection spans of a project’s approved edges only', () => {
    const edges = withEdges();
    for (const n of ['a', 'b', 'c']) edges.connected(n, { at: 100, agentVersion: 'v', remoteAddress: 'x' });
    expect(edges.connectionSpans('p', 0, 1_000)).toEqual([
      { edge: 'a', connectedAt: 100, edgeConnectedSince: 100, edgeLastSeen: 100 },
    ]);
    expect(edges.connectionSpans('p', 0, 50)).toEqual([]);
  });

  it('reads liveness per project or for all', () => {
    const edges = withEdges();
    expect([...edges.liveness('p').keys()].sort()).toEqual(['a', 'b']);
    expect([...edges.liveness('*').keys()].sort()).toEqual(['a', 'b', 'c']);
    expect(edges.liveness('q').get('c')).toEqual({ approved: true, enrolledAt: 30 });
  });
});
