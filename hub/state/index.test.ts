/** HubState on a SQLite file: what building it migrates, and what only using it does. */
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../sync/sqlite.js';
import { sqliteHubState } from './index.js';
import { migrateHub } from './schema/index.js';

const tables = (db: ReturnType<typeof openDatabase>) =>
  (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name);

describe('sqliteHubState', () => {
  it('migrates the table groups a hub uses, and the replicas’ identity table only when first used', () => {
    const db = openDatabase(':memory:');
    try {
      migrateHub(db);
      const state = sqliteHubState(db);
      const made = tables(db);
      for (const t of [
        'api_tokens',
        'blobs',
        'packages',
        'data_files',
        'tunnel_proxy_sessions',
        'people_sessions',
        'image_tags',
        'image_pins',
        'interconnect_reports',
      ])
        expect(made).toContain(t);
      // A SQLite hub never shares an identity: its file does not get the table by being opened.
      expect(made).not.toContain('hub_identity');
      expect(state.identity.all()).toEqual([]);
      expect(tables(db)).toContain('hub_identity');
    } finally {
      db.close();
    }
  });
});
