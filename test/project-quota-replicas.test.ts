/**
 * A project's quota raced for on two hub replicas sharing one PostgreSQL (issue #47, docs/projects.md
 * "Quotas"): each quota is checked in the write's transaction under the project's advisory lock
 * (ProjectTables.lockQuota), so applies through both replicas at once for the last slot of the
 * workloads quota (and of the placements quota) leave exactly one applied and refuse the others with
 * 403 `over_quota`; and the project's count never passes the quota.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubApi } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { startReplicas } from './fixtures/replicas.js';
import { tempDir } from './helpers.js';
import type { HubProc } from './procs.js';

/** Applies racing per round: half through each replica. */
const AT_ONCE = 6;
const ROUNDS = 4;

const workload = (name: string) => ({
  kind: 'Workload',
  metadata: { name, project: 'race' },
  spec: { manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: '1' } }] },
});
const placement = (name: string) => ({
  kind: 'Placement',
  metadata: { name, project: 'race' },
  spec: { edgeSelector: {}, workloads: ['w'] },
});

describe('a project quota on two hub replicas (PostgreSQL)', () => {
  const pg = new TestPostgres();
  let dir: string;
  let hubs: HubProc[] = [];
  beforeAll(async () => {
    dir = tempDir('outpost-project-quota-pg-');
    await pg.start();
    hubs = await startReplicas(dir, 2, pg.createDatabase('hub'));
  }, 90_000);
  afterAll(async () => {
    for (const h of hubs) await h.proc.kill('SIGTERM');
    await pg.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('applies through both replicas at once for the last slot: exactly one wins', async () => {
    const [a, b] = hubs as [HubProc, HubProc];
    const made = await hubApi(a, 'POST', '/api/v1/apply', {
      objects: [{ kind: 'Project', metadata: { name: 'race' }, spec: { quotas: { workloads: 1, placements: 1 } } }],
    });
    expect(made.status, JSON.stringify(made.json)).toBe(200);
    for (const [kind, make, plural] of [
      ['workloads', workload, 'workloads'],
      ['placements', placement, 'placements'],
    ] as const) {
      // A placement names a workload that exists: the one slot of workloads, once they are done.
      if (kind === 'placements')
        expect((await hubApi(a, 'POST', '/api/v1/apply', { objects: [workload('w')] })).status).toBe(200);
      for (let round = 0; round < ROUNDS; round++) {
        const answers = await Promise.all(
          Array.from({ length: AT_ONCE }, (_, i) =>
            hubApi(i % 2 ? b : a, 'POST', '/api/v1/apply', { objects: [make(`r${round}-${i}`)] }),
          ),
        );
        const won = answers.filter((r) => r.status === 200);
        expect(won, `round ${round} of ${kind}: ${answers.map((r) => r.status).join(' ')}`).toHaveLength(1);
        for (const r of answers.filter((x) => x.status !== 200)) {
          expect(r.status).toBe(403);
          expect(r.json.error.code).toBe('over_quota');
          expect(r.json.error.message).toMatch(new RegExp(`has 1 of 1 ${kind} \\(quota ${kind}\\)`));
        }
        // Both replicas read the one that won, and only it.
        for (const h of hubs) {
          const items = (await hubApi(h, 'GET', `/api/v1/projects/race/${plural}`)).json.items as any[];
          expect(items.map((o) => o.metadata.name)).toHaveLength(1);
        }
        const [only] = (await hubApi(a, 'GET', `/api/v1/projects/race/${plural}`)).json.items as any[];
        expect((await hubApi(b, 'DELETE', `/api/v1/projects/race/${plural}/${only.metadata.name}`)).status).toBe(200);
      }
    }
  });
});
