/**
 * Edges online over time and counts by phase, computed from the hub's real SQLite tables. The rows
 * are written directly: some states here (a connection a crashed hub never closed) are what no
 * single call of hub/state/edges.ts makes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OFFLINE_AFTER_MS } from '../../core/durations.js';
import { openDatabase, type SqliteDatabase } from '../../sync/sqlite.js';
import { tempDir } from '../../test/helpers.js';
import { migrateHub } from '../state/schema/index.js';
import { sqlEdgeState, type EdgeState } from '../state/edges.js';
import { edgeCounts, edgesOnline } from './fleet.js';

let dir: string;
let db: SqliteDatabase;
let edges: EdgeState;
const H = 3_600_000;
const NOW = Date.parse('2026-03-01T12:00:00Z');

beforeEach(() => {
  dir = tempDir('outpost-fleet-test-');
  db = openDatabase(path.join(dir, 'hub.db'));
  migrateHub(db);
  edges = sqlEdgeState(db);
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function edge(
  name: string,
  o: { project?: string; approved?: boolean; connectedSince?: number; lastSeen?: number } = {},
) {
  db.prepare(
    'INSERT INTO edge_runtime (name, project, approved, enrolled_at, last_seen, connected_since) VALUES (?, ?, ?, ?, ?, ?)',
  ).run(
    name,
    o.project ?? 'p',
    o.approved === false ? 0 : 1,
    NOW - 10 * H,
    o.lastSeen ?? null,
    o.connectedSince ?? null,
  );
}
function conn(name: string, from: number, to: number | null) {
  db.prepare('INSERT INTO connections (edge, connected_at, disconnected_at) VALUES (?, ?, ?)').run(name, from, to);
}
const at = (r: ReturnType<typeof edgesOnline>, hoursAgo: number) =>
  r.points.find((p) => Date.parse(p.t) === NOW - hoursAgo * H)!.online;

describe('edgesOnline', () => {
  it('counts open connections at each instant, an edge once even with overlapping rows', () => {
    edge('a', { connectedSince: NOW - 1 * H, lastSeen: NOW });
    edge('b', { lastSeen: NOW - 2 * H });
    conn('a', NOW - 5 * H, NOW - 3 * H);
    conn('a', NOW - 4 * H, NOW - 3.5 * H); // overlaps the first: still one edge
    conn('a', NOW - 1 * H, null); // the current connection
    conn('b', NOW - 4.5 * H, NOW - 2 * H);
    const r = edgesOnline(edges, 'p', 6, 7, NOW);
    expect(r.points.map((p) => p.online)).toEqual([0, 1, 2, 1, 0, 1, 1]);
    expect(at(r, 4)).toBe(2);
    expect(r.to).toBe(new Date(NOW).toISOString());
    expect(r.stepSeconds).toBe(3600);
  });

  it('ends a connection the hub never closed (it stopped) at the edge’s last heartbeat', () => {
    edge('c', { lastSeen: NOW - 2 * H }); // not connected now
    conn('c', NOW - 5 * H, null);
    const r = edgesOnline(edges, 'p', 6, 7, NOW);
    // Points at -6h..now: opened at -5h, over at the last heartbeat (-2h).
    expect(r.points.map((p) => p.online)).toEqual([0, 1, 1, 1, 0, 0, 0]);
  });

  it('leaves out pending edges and other projects', () => {
    edge('pending', { approved: false, connectedSince: NOW - H, lastSeen: NOW });
    edge('elsewhere', { project: 'q', connectedSince: NOW - H, lastSeen: NOW });
    conn('pending', NOW - H, null);
    conn('elsewhere', NOW - H, null);
    expect(edgesOnline(edges, 'p', 2, 3, NOW).points.map((p) => p.online)).toEqual([0, 0, 0]);
    expect(edgesOnline(edges, 'q', 2, 3, NOW).points.map((p) => p.online)).toEqual([0, 1, 1]);
  });
});

describe('edgeCounts', () => {
  it('uses the same rule as the edge list: pending until approved, online while heartbeats arrive', () => {
    const now = Date.now();
    edge('on', { connectedSince: now - 1000, lastSeen: now - 1000 });
    edge('quiet', { connectedSince: now - H, lastSeen: now - OFFLINE_AFTER_MS - 1000 });
    edge('gone', { lastSeen: now - H });
    edge('new', { approved: false, connectedSince: now, lastSeen: now });
    edge('x', { project: 'q' });
    expect(edgeCounts(edges, 'p', now)).toEqual({ total: 4, Online: 1, Offline: 2, Pending: 1 });
  });
});
