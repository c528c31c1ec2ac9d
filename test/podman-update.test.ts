/**
 * A bad image in an update does not take a podman edge down (issue 15, item 2), with real hub and
 * edge processes and real pods: the edge reports the update Failed with the image named, the old
 * pod keeps running and answering, and a good version afterwards replaces it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SKIP_PODMAN, TEST_IMAGE } from '../edge/drivers/podman/harness.js';
import { hubApi } from './fixtures/host-workloads.js';
import { podWorkload, removeEdgePods, startPodmanEdge } from './fixtures/podman-edge.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, startHubProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let hub: HubProc;
let edge: Proc | undefined;

const site = (image: string, version: string) =>
  podWorkload('site', image, ['sh', '-c', `echo ${version} > /tmp/v; exec sleep 600`]);
const edgeWorkload = async (): Promise<any> =>
  (await hubApi(hub, 'GET', '/api/v1/projects/default/edges/pod-1')).json.status?.workloads?.find(
    (w: any) => w.name === 'site',
  );
const version = async (): Promise<string> =>
  (
    await cli(['exec', 'edge/pod-1', 'site', '--', 'cat', '/tmp/v'], {
      OUTPOST_HUB: hub.url,
      OUTPOST_TOKEN: hub.token,
      OUTPOST_CONFIG: path.join(dir, 'none.json'),
    })
  ).stdout.trim();

beforeAll(async () => {
  if (SKIP_PODMAN) return;
  dir = tempDir();
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http']);
  edge = await startPodmanEdge(hub, path.join(dir, 'edge'), 'pod-1');
  await hubApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      site(TEST_IMAGE, 'v1'),
      { kind: 'Placement', metadata: { name: 'p' }, spec: { edges: ['pod-1'], workloads: ['site'] } },
    ],
  });
  await waitFor(async () => (await edgeWorkload())?.state === 'Ready', { timeout: 60_000, what: 'v1 Ready' });
}, 120_000);

afterAll(async () => {
  if (SKIP_PODMAN) return;
  await edge?.kill('SIGTERM');
  await hub?.proc.kill('SIGTERM');
  await removeEdgePods(path.join(dir, 'edge'));
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(SKIP_PODMAN)('an update with a bad image on a podman edge', () => {
  it('is reported Failed while the old pod keeps running; a good version replaces it', async () => {
    expect(await version()).toBe('v1');
    const typo = 'localhost/outpost-busybxo:latest';
    expect((await hubApi(hub, 'POST', '/api/v1/apply', { objects: [site(typo, 'v2')] })).status).toBeLessThan(300);
    const failed = await waitFor(
      async () => {
        const w = await edgeWorkload();
        return w?.state === 'Failed' ? w : null;
      },
      { timeout: 60_000, what: 'the update reported Failed' },
    );
    expect(failed.reason).toContain(typo);
    expect(failed.reason).toContain('keeps running');
    expect(await version()).toBe('v1');

    expect((await hubApi(hub, 'POST', '/api/v1/apply', { objects: [site(TEST_IMAGE, 'v3')] })).status).toBeLessThan(
      300,
    );
    await waitFor(async () => (await edgeWorkload())?.state === 'Ready' && (await version()) === 'v3', {
      timeout: 60_000,
      what: 'v3 Ready',
    });
  });
});
