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
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containersConf, createPodman, type Podman } from '../edge/drivers/podman/cli.js';
import { buildUniqueImage, SKIP_PODMAN } from '../edge/drivers/podman/harness.js';
import { LABEL_WORKLOAD } from '../edge/drivers/podman/plan.js';
import { hubApi } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { connectedTo, hubList } from './fixtures/replicas.js';
import { startTestRegistry, type TestRegistry } from './fixtures/registry.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

const EDGES = ['rp-1', 'rp-2'] as const;
type EdgeN = (typeof EDGES)[number];

const server = new TestPostgres();
let dir: string;
let hubs: HubProc[] = [];
let registry: TestRegistry;
const edges = new Map<EdgeN, Proc>();
const digests = new Map<string, string>();
const madeIds: string[] = [];

const storage = (e: EdgeN) => ({
  graph: path.join(dir, `${e}-storage`, 'graph'),
  // podman refuses a runroot longer than 50 characters: a short one of its own under /run.
  run: `/run/outpost-${path.basename(dir).slice(-6)}-${e}`,
  conf: path.join(dir, `${e}-storage.conf`),
});
const execP = promisify(execFile);
async function podmanOn(e: EdgeN, args: string[]): Promise<{ code: number; stdout: string }> {
  const conf = containersConf();
  try {
    const r = await execP('podman', args, {
      env: { ...process.env, CONTAINERS_STORAGE_CONF: storage(e).conf, ...(conf ? { CONTAINERS_CONF: conf } : {}) },
    });
    return { code: 0, stdout: r.stdout };
  } catch (err) {
    return { code: 1, stdout: String((err as { stdout?: string }).stdout ?? '') };
  }
}
const imageOf = (tag: string) => `${registry.host}/outpost-test/rprestage:${tag}`;
const pinnedOf = (tag: string) => `${registry.host}/outpost-test/rprestage@${digests.get(tag)}`;

const workload = (tag: string) => ({
  kind: 'Workload',
  metadata: { name: 'app' },
  spec: {
    manifests: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'app' },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: 'main', image: imageOf(tag), command: ['sh', '-c', `echo ${tag} > /tmp/v; exec sleep 600`] },
          ],
        },
      },
    ],
  },
});
const placement = (rollout: Record<string, unknown>) => ({
  kind: 'Placement',
  metadata: { name: 'p' },
  spec: { edges: [...EDGES], workloads: ['app'], rollout: { prestage: true, ...rollout } },
});
const apply = async (...objects: unknown[]) => {
  const r = await hubApi(hubs[0], 'POST', '/api/v1/apply', { objects });
  expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
};
const edgeStatusOn = async (h: HubProc, e: EdgeN): Promise<any> =>
  (await hubApi(h, 'GET', `/api/v1/projects/default/edges/${e}`)).json.status;
async function running(e: EdgeN): Promise<string[]> {
  const r = await podmanOn(e, ['ps', '--filter', `label=${LABEL_WORKLOAD}=app`, '--format', '{{.Image}}']);
  return [...new Set(r.stdout.split('\n').filter((l) => l && !l.includes('pause')))];
}
const appReady = async (e: EdgeN, tag: string) =>
  (await edgeStatusOn(hubs[0], e))?.workloads?.find((w: any) => w.name === 'app')?.state === 'Ready' &&
  (await running(e)).join() === pinnedOf(tag);
const stagedOn = async (h: HubProc, e: EdgeN, image: string): Promise<any> =>
  (await edgeStatusOn(h, e))?.imageStaging?.images?.find((i: any) => i.image === image);

beforeAll(async () => {
  if (SKIP_PODMAN) return;
  dir = tempDir();
  registry = await startTestRegistry(path.join(dir, 'registry'));
  const podman: Podman = createPodman();
  for (const tag of ['v1', 'v2']) {
    const u = await buildUniqueImage(podman, dir, `localhost/outpost-rprestage-src:${tag}-${Date.now().toString(36)}`);
    madeIds.push(u.id);
    digests.set(tag, await registry.push(u.ref, `outpost-test/rprestage:${tag}`));
    await podman.ok(['rmi', '-f', u.id], 'podman rmi');
  }
  for (const e of EDGES) {
    const s = storage(e);
    fs.mkdirSync(s.graph, { recursive: true });
    fs.mkdirSync(s.run, { recursive: true });
    fs.writeFileSync(s.conf, `[storage]\ndriver = "overlay"\ngraphroot = "${s.graph}"\nrunroot = "${s.run}"\n`);
  }
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
          CONTAINERS_STORAGE_CONF: storage(e).conf,
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
  for (const e of EDGES) {
    await podmanOn(e, ['pod', 'rm', '-af', '-t', '0']);
    await podmanOn(e, ['rm', '-af', '-t', '0']);
    await podmanOn(e, ['rmi', '-af']);
    fs.rmSync(storage(e).run, { recursive: true, force: true });
  }
  for (const id of madeIds) await createPodman().run(['rmi', '-f', id]);
  await registry?.stop();
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe.skipIf(SKIP_PODMAN)('image pre-staging across two hub replicas on one PostgreSQL', () => {
  it('the edges of both replicas are staged, then switched; each replica shows the staging', async () => {
    await apply(
      {
        kind: 'Registry',
        metadata: { name: 'private' },
        spec: {
          url: `https://${registry.host}`,
          credentials: { username: registry.username, password: registry.password },
          caBundle: registry.caPem,
        },
      },
      workload('v1'),
      placement({}),
    );
    for (const e of EDGES) await waitFor(() => appReady(e, 'v1'), { timeout: 120_000, what: `${e} Ready on v1` });
    // What each edge staged, through either replica (projected at report time).
    for (const h of hubs)
      for (const e of EDGES) expect(await stagedOn(h, e, pinnedOf('v1'))).toMatchObject({ state: 'Present' });

    await apply(placement({ paused: true }));
    await apply(workload('v2'));
    for (const e of EDGES)
      await waitFor(async () => (await stagedOn(hubs[1 - EDGES.indexOf(e)], e, pinnedOf('v2')))?.state === 'Present', {
        timeout: 120_000,
        what: `${e} to report v2 staged`,
      });
    for (const e of EDGES) expect(await running(e)).toEqual([pinnedOf('v1')]);
    for (const h of hubs)
      await waitFor(
        async () =>
          (await hubApi(h, 'GET', '/api/v1/projects/default/placements/p')).json.status?.imageStaging?.summary ===
          'images staged on 2/2 edges',
        { timeout: 30_000, what: `the placement to count 2/2 edges staged through ${h.url}` },
      );
    await apply(placement({ paused: false }));
    for (const e of EDGES) await waitFor(() => appReady(e, 'v2'), { timeout: 120_000, what: `${e} Ready on v2` });
  }, 300_000);
});
