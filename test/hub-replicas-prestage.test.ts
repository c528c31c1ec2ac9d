/**
 * Image pre-staging across hub replicas (issue #22): two `outpost hub` processes on one PostgreSQL
 * with one identity (--identity-key: the Registry's credentials open on both) and one blob
 * directory (--blob-dir), a private registry (as test/images-prestage.test.ts), two podman edges
 * each with its own image storage, one served by each replica. The images gate runs in the
 * planning replica's pass; the edge the other replica serves must get its staging order too (the
 * orders are recorded in a table; the replica serving an edge writes them into its spec), and the
 * planner must see what that edge reports staged (projected at report time).
 *
 * v1 with `prestage: true`: both edges are staged, then switched. v2 while paused: both report it
 * staged, and the placement counts `images staged on 2/2 edges` through each replica; resumed,
 * both switch.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SKIP_PODMAN } from '../edge/drivers/podman/harness.js';
import { hubApi } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { connectedTo, hubList } from './fixtures/replicas.js';
import { PrestageSites } from './fixtures/prestage.js';
import { registryObject } from './fixtures/registry.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

const EDGES = ['rp-1', 'rp-2'] as const;
type EdgeN = (typeof EDGES)[number];

const server = new TestPostgres();
let dir: string;
let hubs: HubProc[] = [];
let sites: PrestageSites<EdgeN>;
const edges = new Map<EdgeN, Proc>();

const apply = async (...objects: unknown[]) => {
  const r = await hubApi(hubs[0], 'POST', '/api/v1/apply', { objects });
  expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
};
const edgeStatusOn = async (h: HubProc, e: EdgeN): Promise<any> =>
  (await hubApi(h, 'GET', `/api/v1/projects/default/edges/${e}`)).json.status;
const appReady = async (e: EdgeN, tag: string) =>
  (await edgeStatusOn(hubs[0], e))?.workloads?.find((w: any) => w.name === 'app')?.state === 'Ready' &&
  (await sites.running(e)).join() === sites.pinnedOf(tag);
const stagedOn = async (h: HubProc, e: EdgeN, image: string): Promise<any> =>
  (await edgeStatusOn(h, e))?.imageStaging?.images?.find((i: any) => i.image === image);

beforeAll(async () => {
  if (SKIP_PODMAN) return;
  dir = tempDir();
  sites = new PrestageSites(dir, 'rprestage', EDGES);
  await sites.start(['v1', 'v2']);
  await server.start();
  const url = server.createDatabase('hub');
  const keyFile = path.join(dir, 'identity.key');
  fs.writeFileSync(keyFile, (await cli(['hub', 'identity-key'])).stdout, { mode: 0o600 });
  // One at a time: the first puts the shared identity, the other reads it.
  for (const i of [1, 2])
    hubs.push(
      await startHubProc(path.join(dir, `hub-${i}`), await freePort(), [
        '--insecure-http',
        '--database',
        url,
        '--identity-key',
        keyFile,
        '--blob-dir',
        path.join(dir, 'blobs'),
      ]),
    );
  const join = (await hubApi(hubs[0], 'POST', '/api/v1/tokens/join', { uses: 2 })).json.token as string;
  for (const [i, e] of EDGES.entries()) {
    edges.set(
      e,
      await startEdgeProc(
        path.join(dir, e),
        ['--hub', hubList(hubs, i), '--join-token', join, '--name', e, '--driver', 'podman'],
        {
          CONTAINERS_STORAGE_CONF: sites.storage(e).conf,
        },
      ),
    );
  }
  for (const [i, e] of EDGES.entries())
    await connectedTo(path.join(dir, e), hubs[i]!, `${e} connected to replica ${i + 1}`);
}, 240_000);

afterAll(async () => {
  if (SKIP_PODMAN) return;
  for (const p of edges.values()) await p.kill('SIGTERM');
  for (const h of hubs) await h.proc.kill('SIGTERM').catch(() => undefined);
  await sites?.stop();
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe.skipIf(SKIP_PODMAN)('image pre-staging across two hub replicas on one PostgreSQL', () => {
  it('the edges of both replicas are staged, then switched; each replica shows the staging', async () => {
    await apply(registryObject(sites.registry), sites.workload('v1'), sites.placement({}));
    for (const e of EDGES) await waitFor(() => appReady(e, 'v1'), { timeout: 120_000, what: `${e} Ready on v1` });
    // What each edge staged, through either replica (projected at report time).
    for (const h of hubs)
      for (const e of EDGES) expect(await stagedOn(h, e, sites.pinnedOf('v1'))).toMatchObject({ state: 'Present' });

    await apply(sites.placement({ paused: true }));
    await apply(sites.workload('v2'));
    for (const e of EDGES)
      await waitFor(
        async () => (await stagedOn(hubs[1 - EDGES.indexOf(e)], e, sites.pinnedOf('v2')))?.state === 'Present',
        { timeout: 120_000, what: `${e} to report v2 staged` },
      );
    for (const e of EDGES) expect(await sites.running(e)).toEqual([sites.pinnedOf('v1')]);
    for (const h of hubs)
      await waitFor(
        async () =>
          /^images staged on 2\/2 edges, [\d.]+ MB of [\d.]+ MB$/.test(
            (await hubApi(h, 'GET', '/api/v1/projects/default/placements/p')).json.status?.imageStaging?.summary,
          ),
        { timeout: 30_000, what: `the placement to count 2/2 edges staged through ${h.url}` },
      );
    await apply(sites.placement({ paused: false }));
    for (const e of EDGES) await waitFor(() => appReady(e, 'v2'), { timeout: 120_000, what: `${e} Ready on v2` });
  }, 300_000);
});
