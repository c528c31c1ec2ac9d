/**
 * An existing hub's implicit projects (named by its objects and tokens) become Project objects
 * without quotas when a binary with Projects opens its file (issue #47): the hub file is made by
 * this binary, then taken back to what a hub before Projects wrote (no `projects` table, no
 * `projects` schema version), and opened again.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { startHub } from '../hub/hub.js';
import { hubApi } from './fixtures/host-workloads.js';
import { startInProcessHub, stopInProcess } from './fixtures/in-process-fleet.js';

describe('the migration of implicit projects', () => {
  let dir = '';
  afterAll(() => stopInProcess({ dir }));

  it('makes a Project of every project an older hub knew, with no quotas, and default', async () => {
    const first = await startInProcessHub('outpost-projects-migration-');
    dir = first.dir;
    const admin = { url: first.hub.url, token: first.hub.adminToken };
    const w = {
      kind: 'Workload',
      metadata: { name: 'w', project: 'shop' },
      spec: { manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }] },
    };
    expect((await hubApi(admin, 'POST', '/api/v1/apply', { objects: [w] })).status).toBe(200);
    expect((await hubApi(admin, 'POST', '/api/v1/tokens/api', { role: 'viewer', project: 'ops' })).status).toBe(201);
    await first.hub.close();

    const file = path.join(dir, 'hub', 'hub.db');
    const db = new Database(file);
    db.exec(`DROP TABLE projects; DELETE FROM schema_versions WHERE component = 'projects'`);
    expect(db.prepare(`SELECT name FROM sqlite_master WHERE name = 'projects'`).get()).toBeUndefined();
    db.close();

    const hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0', insecureHttp: true });
    try {
      const again = { url: hub.url, token: hub.adminToken };
      const items = (await hubApi(again, 'GET', '/api/v1/projects')).json.items as any[];
      expect(items.map((p) => p.metadata.name)).toEqual(['default', 'ops', 'shop']);
      for (const p of items) {
        expect(p.spec.quotas).toEqual({});
        expect(p.status.phase).toBe('Active');
      }
      expect(items.find((p) => p.metadata.name === 'shop').status.usage.workloads).toBe(1);
      // Nothing changes for them: the workload is there, and more can be applied.
      const w2 = { ...w, metadata: { name: 'w2', project: 'shop' } };
      expect((await hubApi(again, 'POST', '/api/v1/apply', { objects: [w2] })).status).toBe(200);
    } finally {
      await hub.close();
    }
  });
});
