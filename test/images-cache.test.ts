/**
 * The hub's image cache (issue 19, part 2 without pull-through), with real processes: an image
 * saved by podman as an oci-archive is pushed with `outpost image push`, served by the hub's OCI
 * pull API to skopeo and podman with an API token (a viewer may pull, no token or another
 * project's token may not), pushed again without moving its layers, and run on a podman edge
 * whose workload names it on the hub, through a Registry object holding a viewer token.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPodman } from '../edge/drivers/podman/cli.js';
import { buildUniqueImage, dropImageName, SKIP_PODMAN, TEST_IMAGE } from '../edge/drivers/podman/harness.js';
import { hubApi } from './fixtures/host-workloads.js';
import { removeEdgePods, runThroughHubCache, startPodmanEdge } from './fixtures/podman-edge.js';
import { tempDir } from './helpers.js';
import { cli, freePort, startHubProc, type HubProc, type Proc } from './procs.js';

const run = promisify(execFile);

let dir: string;
let hub: HubProc;
let edge: Proc | undefined;
let host: string;
const pulled: string[] = [];
/** The image the edge runs: unique to this test, saved as edge.tar and removed from this host. */
let edgeImageId: string | undefined;

const asCli = (token: string) => ({
  OUTPOST_HUB: hub.url,
  OUTPOST_TOKEN: token,
  OUTPOST_CONFIG: path.join(dir, 'none.json'),
});
const skopeoInspect = (ref: string, creds?: string) =>
  run('skopeo', ['inspect', '--tls-verify=false', ...(creds ? ['--creds', creds] : ['--no-creds']), `docker://${ref}`]);

beforeAll(async () => {
  if (SKIP_PODMAN) return;
  dir = tempDir();
  const port = await freePort();
  host = `127.0.0.1:${port}`;
  hub = await startHubProc(path.join(dir, 'hub'), port, ['--insecure-http']);
  await createPodman().ok(
    ['save', '--format', 'oci-archive', '-o', path.join(dir, 'app.tar'), TEST_IMAGE],
    'podman save',
  );
  const podman = createPodman();
  const u = await buildUniqueImage(podman, dir, `localhost/outpost-cache-edge:t${Date.now().toString(36)}`);
  edgeImageId = u.id;
  await podman.ok(['save', '--format', 'oci-archive', '-o', path.join(dir, 'edge.tar'), u.ref], 'podman save');
  await podman.ok(['rmi', '-f', u.id], 'podman rmi');
}, 120_000);

afterAll(async () => {
  if (SKIP_PODMAN) return;
  await edge?.kill('SIGTERM');
  await hub?.proc.kill('SIGTERM');
  const podman = createPodman();
  await removeEdgePods(path.join(dir, 'edge'));
  // Only the names this test pulled: the layers are the shared test image's.
  for (const ref of pulled) await dropImageName(podman, ref);
  if (edgeImageId) await podman.run(['rmi', '-f', edgeImageId]);
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(SKIP_PODMAN)("the hub's image cache", () => {
  it('serves a pushed oci-archive to skopeo, podman and a podman edge, per project, without sending layers twice', async () => {
    const push = await cli(['image', 'push', path.join(dir, 'app.tar'), 'team/app:v1'], asCli(hub.token));
    expect(push.code, push.stderr).toBe(0);
    const m = /^team\/app:v1@(sha256:[0-9a-f]{64})$/.exec(push.stdout.trim());
    expect(m, push.stdout).not.toBeNull();
    const digest = m![1];
    const blobsAfterFirst = (await hubApi(hub, 'GET', '/api/v1/projects/default/blobs')).json.items;
    // Every blob the tag needs is held by it (garbage collection keeps them).
    expect(blobsAfterFirst.every((b: any) => b.references.includes('Image/team/app:v1'))).toBe(true);

    // The same image under another tag: nothing new is stored, the digest is the same.
    const again = await cli(['image', 'push', path.join(dir, 'app.tar'), 'team/app:v2'], asCli(hub.token));
    expect(again.stdout.trim()).toBe(`team/app:v2@${digest}`);
    const blobsAfterSecond = (await hubApi(hub, 'GET', '/api/v1/projects/default/blobs')).json.items;
    expect(blobsAfterSecond.map((b: any) => b.digest).sort()).toEqual(blobsAfterFirst.map((b: any) => b.digest).sort());
    const ls = await cli(['image', 'ls'], asCli(hub.token));
    expect(ls.stdout).toMatch(/team\/app\s+v1\s+sha256:/);
    expect(ls.stdout).toMatch(/team\/app\s+v2\s+sha256:/);

    // The pull API: a viewer's token as the password; the digest is the pushed manifest's.
    const viewer = (await cli(['token', 'create', '--api', '--role', 'viewer'], asCli(hub.token))).stdout.trim();
    const other = (
      await cli(['token', 'create', '--api', '--role', 'admin', '--project', 'other'], asCli(hub.token))
    ).stdout.trim();
    expect(viewer).not.toBe('');
    expect(other).not.toBe('');
    const inspected = JSON.parse((await skopeoInspect(`${host}/default/team/app:v1`, `outpost:${viewer}`)).stdout);
    expect(inspected.Digest).toBe(digest);
    expect(inspected.RepoTags.sort()).toEqual(['v1', 'v2']);
    await expect(skopeoInspect(`${host}/default/team/app:v1`)).rejects.toThrow(/unauthorized|authentication required/i);
    await expect(skopeoInspect(`${host}/default/team/app:v1`, `outpost:${other}`)).rejects.toThrow();
    await expect(skopeoInspect(`${host}/default/team/app:nope`, `outpost:${viewer}`)).rejects.toThrow(
      /manifest unknown|not found/i,
    );
    // The API is read-only: a push through it is refused.
    const put = await fetch(`${hub.url}/v2/default/team/app/manifests/v3`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${hub.token}`, 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
      body: '{}',
    });
    expect(put.status).toBe(400);
    expect(((await put.json()) as any).errors[0].code).toBe('UNSUPPORTED');

    // podman pulls it (layers checked by digest on the way).
    const podman = createPodman();
    const ref = `${host}/default/team/app:v1`;
    pulled.push(ref);
    await podman.ok(
      ['pull', '--quiet', '--tls-verify=false', '--creds', `outpost:${viewer}`, ref],
      'podman pull from the hub',
    );

    // A podman edge runs a workload whose image is on the hub, with a Registry holding a viewer token.
    // An image on no host yet; the hub pins its tag to the digest: the edge pulls and runs it by digest.
    const pushedEdge = await cli(['image', 'push', path.join(dir, 'edge.tar'), 'team/app:edge'], asCli(hub.token));
    expect(pushedEdge.code, pushedEdge.stderr).toBe(0);
    const edgeRef = `${host}/default/team/app@${pushedEdge.stdout.trim().split('@')[1]}`;
    expect((await podman.run(['image', 'exists', edgeRef])).code).not.toBe(0);
    edge = await startPodmanEdge(hub, path.join(dir, 'edge'), 'cache-1');
    await runThroughHubCache(hub, {
      host,
      viewer,
      edge: 'cache-1',
      workload: 'cached',
      image: `${host}/default/team/app:edge`,
      placement: 'p',
      what: 'the workload from the hub cache Ready',
    });
    expect((await podman.run(['image', 'exists', edgeRef])).code).toBe(0);
    expect(edge.out + edge.err).not.toContain(viewer);
  }, 240_000);
});
