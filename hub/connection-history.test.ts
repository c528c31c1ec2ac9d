/** Retention and coalescing of an edge's connection history, on a real SQLite file. */
import { afterAll, describe, expect, it } from 'vitest';
import { testDbs } from './auth/test-db.js';
import {
  CONNECTIONS_PER_EDGE,
  EVENTS_MAX_AGE_MS,
  pruneHistory,
  recordConnect,
  recordDisconnect,
  RECONNECT_COALESCE_MS,
} from './connection-history.js';
import { migrateHub, recordEvent } from './db.js';

const dbs = testDbs();
afterAll(() => dbs.cleanup());

function hubDb() {
  const { db } = dbs.open();
  migrateHub(db);
  db.prepare("INSERT INTO edge_runtime (name, project, approved, enrolled_at) VALUES ('e1', 'default', 1, 0)").run();
  return db;
}

describe('connection history', () => {
  it('reconnects within a minute update one event; a later one adds a new event', () => {
    const db = hubDb();
    const conn = { edge: 'e1', remoteAddress: '10.0.0.1', agentVersion: 't' };
    let t = 1_000_000;
    recordConnect(db, conn, t);
    for (let i = 0; i < 50; i++) {
      recordDisconnect(db, 'e1', 1006, '', (t += 100));
      recordConnect(db, conn, (t += 100));
    }
    const events = db.prepare('SELECT reason, message FROM events ORDER BY id').all() as {
      reason: string;
      message: string;
    }[];
    expect(events.map((e) => e.reason)).toEqual(['Connected', 'Reconnected']);
    expect(events[1].message).toMatch(/50 reconnects since/);
    recordDisconnect(db, 'e1', 1006, '', (t += RECONNECT_COALESCE_MS + 1));
    recordConnect(db, conn, (t += RECONNECT_COALESCE_MS + 1));
    expect(
      (db.prepare('SELECT reason FROM events ORDER BY id').all() as { reason: string }[]).map((e) => e.reason),
    ).toEqual(['Connected', 'Reconnected', 'Disconnected', 'Connected']);
  });

  it('prunes events past their age and connection rows past the per-edge count', () => {
    const db = hubDb();
    const now = 10 * EVENTS_MAX_AGE_MS;
    recordEvent(db, {
      project: 'default',
      kind: 'Edge',
      name: 'e1',
      reason: 'Old',
      message: 'old',
      at: now - EVENTS_MAX_AGE_MS - 1,
    });
    recordEvent(db, { project: 'default', kind: 'Edge', name: 'e1', reason: 'New', message: 'new', at: now - 1 });
    const ins = db.prepare('INSERT INTO connections (edge, connected_at, disconnected_at) VALUES (?, ?, ?)');
    for (let i = 0; i < CONNECTIONS_PER_EDGE + 20; i++) ins.run('e1', now - 1000 + i, now - 999 + i);
    const n = pruneHistory(db, now);
    expect(n).toEqual({ events: 1, connections: 20 });
    expect(db.prepare('SELECT reason FROM events').all()).toEqual([{ reason: 'New' }]);
    expect((db.prepare('SELECT MIN(connected_at) m FROM connections').get() as { m: number }).m).toBe(now - 1000 + 20);
  });
});
