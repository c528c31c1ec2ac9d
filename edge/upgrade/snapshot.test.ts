import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../sync/sqlite.js';
import { restoreIfMigrated, snapshotReplica } from './snapshot.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-snapshot-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A replica-like database at schema version `v` holding one row `value`. */
function replica(file: string, v: number, value: string) {
  const db = openDatabase(file);
  db.exec('CREATE TABLE IF NOT EXISTS t (v TEXT)');
  db.prepare('DELETE FROM t').run();
  db.prepare('INSERT INTO t (v) VALUES (?)').run(value);
  db.prepare(
    "INSERT INTO schema_versions (component, version) VALUES ('replica', ?) ON CONFLICT(component) DO UPDATE SET version = excluded.version",
  ).run(v);
  return db;
}
const valueIn = (file: string) => {
  const db = openDatabase(file);
  try {
    return (db.prepare('SELECT v FROM t').get() as { v: string }).v;
  } finally {
    db.close();
  }
};

describe('the replica snapshot of a switch', () => {
  it('is a consistent copy of the open database, written by rename', async () => {
    const file = path.join(dir, 'edge.db');
    const db = replica(file, 1, 'before');
    await snapshotReplica(db, path.join(dir, 'snap.db'));
    db.close();
    expect(valueIn(path.join(dir, 'snap.db'))).toBe('before');
    expect(fs.existsSync(path.join(dir, 'snap.db.tmp'))).toBe(false);
  });

  it('is put back on rollback when the new version migrated the replica, and only then', async () => {
    const file = path.join(dir, 'edge.db');
    const snap = path.join(dir, 'snap.db');
    let db = replica(file, 1, 'before');
    await snapshotReplica(db, snap);
    db.close();

    // The trial wrote, at the same schema: the replica is newer than the snapshot and is kept.
    replica(file, 1, 'during the trial').close();
    expect(restoreIfMigrated(file, snap)).toBe('kept');
    expect(valueIn(file)).toBe('during the trial');

    // The new version migrated it: the old binary would refuse it, so the snapshot comes back.
    db = replica(file, 2, 'migrated');
    db.close();
    expect(restoreIfMigrated(file, snap)).toBe('restored');
    expect(valueIn(file)).toBe('before');
    expect(restoreIfMigrated(file, path.join(dir, 'missing.db'))).toBe('no snapshot');
  });
});
