/**
 * Registries with credentials (issue 19, part of test 1), with real processes and a real private
 * registry: Debian's docker-registry with htpasswd and TLS from a test CA, the image put there by
 * skopeo. A workload whose image lives only there fails on a podman edge until a Registry object
 * gives the hub its credentials; then the edge pulls it (authenticated, as the registry's access
 * log shows) and runs it. The password shows nowhere: not to a viewer token, not in describe or
 * get output, not in the hub's or the edge's logs, not in clear in the hub's database.
 *
 * Then the same through the hub's pull-through cache: the edge pulls HUB/PROJECT/REGISTRY/REPO:TAG
 * from the hub (a Registry with a viewer token), the hub pulls it from the private registry once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPodman } from '../edge/drivers/podman/cli.js';
import { buildUniqueImage, SKIP_PODMAN } from '../edge/drivers/podman/harness.js';
import { hubApi } from './fixtures/host-workloads.js';
import { podWorkload, removeEdgePods, runThroughHubCache, startPodmanEdge } from './fixtures/podman-edge.js';
import { registryObject, startTestRegistry, type TestRegistry } from './fixtures/registry.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, startHubProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let hub: HubProc;
let edge: Proc | undefined;
let registry: TestRegistry;
let image: string;
/** What the edge runs: the image pinned to the digest the hub resolved its tag to. */
let pinned: string | undefined;
/** Ids of the images this test made (each unique to it, so the edge really pulls them). */
const madeIds: string[] = [];

/** A unique image put into the private registry as `repoTag` and removed from this host; its digest. */
async function intoRegistry(repoTag: string): Promise<string> {
  const podman = createPodman();
  const u = await buildUniqueImage(podman, dir, `localhost/outpost-private-src:${repoTag.split(':')[1]}`);
  madeIds.push(u.id);
  const digest = await registry.push(u.ref, repoTag);
  await podman.ok(['rmi', '-f', u.id], 'podman rmi');
  return digest;
}

const workload = () => podWorkload('private-app', image, ['sh', '-c', 'echo from-private > /tmp/v; exec sleep 600']);
const edgeWorkload = async (): Promise<any> =>
  (await hubApi(hub, 'GET', '/api/v1/projects/default/edges/img-1')).json.status?.workloads?.find(
    (w: any) => w.name === 'private-app',
  );
const asCli = (token: string) => ({
  OUTPOST_HUB: hub.url,
  OUTPOST_TOKEN: token,
  OUTPOST_CONFIG: path.join(dir, 'none.json'),
});

beforeAll(async () => {
  if (SKIP_PODMAN) return;
  dir = tempDir();
  registry = await startTestRegistry(path.join(dir, 'registry'));
  const tag = `t${Date.now().toString(36)}`;
  image = `${registry.host}/outpost-test/private-app:${tag}`;
  const digest = await intoRegistry(`outpost-test/private-app:${tag}`);
  pinned = `${registry.host}/outpost-test/private-app@${digest}`;
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http']);
  edge = await startPodmanEdge(hub, path.join(dir, 'edge'), 'img-1');
}, 120_000);

afterAll(async () => {
  if (SKIP_PODMAN) return;
  await edge?.kill('SIGTERM');
  await hub?.proc.kill('SIGTERM');
  const podman = createPodman();
  await removeEdgePods(path.join(dir, 'edge'));
  // Only this test's name for the image: its layers are the shared test image's.
  for (const id of madeIds) await podman.run(['rmi', '-f', id]);
  await registry?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(SKIP_PODMAN)('a workload whose image is in a private registry', () => {
  it('fails without credentials, runs once a Registry gives them, and the password shows nowhere', async () => {
    const podman = createPodman();
    expect((await podman.run(['image', 'exists', image])).code).not.toBe(0);

    // Without a Registry the edge cannot pull: Failed, naming the image and the registry's refusal.
    const apply = await hubApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        workload(),
        { kind: 'Placement', metadata: { name: 'p' }, spec: { edges: ['img-1'], workloads: ['private-app'] } },
      ],
    });
    expect(apply.status).toBeLessThan(300);
    const failed = await waitFor(
      async () => {
        const w = await edgeWorkload();
        return w?.state === 'Failed' ? w : null;
      },
      { timeout: 60_000, what: 'Failed without credentials' },
    );
    expect(failed.reason).toContain(image);
    // No CA and no credentials: the pull is refused (unknown authority first).
    expect(failed.reason).toMatch(/unknown authority|unauthorized|authentication required/i);

    // The Registry: the hub adds its credentials to what this edge receives, and the pull succeeds.
    const reg = await hubApi(hub, 'POST', '/api/v1/apply', { objects: [registryObject(registry)] });
    expect(reg.status).toBeLessThan(300);
    await waitFor(async () => (await edgeWorkload())?.state === 'Ready', {
      timeout: 90_000,
      what: 'Ready with credentials',
    });
    // The hub resolved the tag to a digest (through its cache, with the Registry's credentials):
    // the edge pulled and runs the image by digest.
    expect((await podman.run(['image', 'exists', pinned!])).code).toBe(0);
    const out = await cli(['exec', 'edge/img-1', 'private-app', '--', 'cat', '/tmp/v'], asCli(hub.token));
    expect(out.stdout.trim()).toBe('from-private');
    // The registry authorized podman's (containers/image's) GET of the manifest: the pull carried the credentials.
    const digest = pinned!.slice(pinned!.indexOf('@') + 1);
    expect(registry.log()).toMatch(
      new RegExp(`msg="authorized request"[^\\n]*method=GET[^\\n]*manifests/${digest}[^\\n]*useragent="containers/`),
    );

    const pw = registry.password;
    const basic = Buffer.from(`${registry.username}:${pw}`).toString('base64');
    const leaks = (text: string) => text.includes(pw) || text.includes(basic);

    // A viewer sees the Registry with the password redacted and may not reveal it.
    const viewer = (await cli(['token', 'create', '--api', '--role', 'viewer'], asCli(hub.token))).stdout.trim();
    expect(viewer).not.toBe('');
    const seen = await hubApi(hub, 'GET', '/api/v1/projects/default/registries/private', undefined, viewer);
    expect(seen.status).toBe(200);
    expect(seen.json.spec.credentials).toEqual({ username: registry.username, password: '<redacted>' });
    expect(leaks(JSON.stringify(seen.json))).toBe(false);
    const reveal = await hubApi(
      hub,
      'GET',
      '/api/v1/projects/default/registries/private?secrets=reveal',
      undefined,
      viewer,
    );
    expect(reveal.status).toBe(403);
    // An operator who asks does get it (so a stored Registry can be checked).
    const admin = await hubApi(hub, 'GET', '/api/v1/projects/default/registries/private?secrets=reveal');
    expect(admin.json.spec.credentials.password).toBe(pw);

    // Nowhere in what the CLI shows, as admin or viewer.
    for (const token of [hub.token, viewer]) {
      for (const args of [
        ['describe', 'registry', 'private'],
        ['get', 'registries'],
        ['get', 'registry', 'private', '-o', 'yaml'],
        ['describe', 'edge', 'img-1'],
        ['describe', 'workload', 'private-app'],
        ['get', 'workload', 'private-app', '-o', 'json'],
      ]) {
        const r = await cli(args, asCli(token));
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
        expect(leaks(r.stdout + r.stderr), args.join(' ')).toBe(false);
      }
    }
    const described = await cli(['describe', 'registry', 'private'], asCli(viewer));
    expect(described.stdout).toContain(`user ${registry.username}, password set`);

    // Not in the logs, not in clear in the hub's database, not left on the edge's disk.
    expect(leaks(hub.proc.out + hub.proc.err)).toBe(false);
    expect(leaks(edge!.out + edge!.err)).toBe(false);
    for (const f of fs.readdirSync(path.join(dir, 'hub')).filter((f) => f.startsWith('hub.db')))
      expect(leaks(fs.readFileSync(path.join(dir, 'hub', f)).toString('latin1')), f).toBe(false);
    expect(fs.existsSync(path.join(dir, 'edge', 'runtime', 'podman', 'podman', 'pull', 'private-app'))).toBe(false);
  }, 240_000);

  it("runs through the hub's pull-through cache: the hub pulls from the registry once, with the Registry's credentials", async () => {
    const tag = `c${Date.now().toString(36)}`;
    const upstreamDigest = await intoRegistry(`outpost-test/private-app:${tag}`);
    const hubHost = new URL(hub.url).host;
    const viaHub = `${hubHost}/default/private/outpost-test/private-app:${tag}`;
    const viewer = (await cli(['token', 'create', '--api', '--role', 'viewer'], asCli(hub.token))).stdout.trim();
    // The edge's registry is the hub (a viewer token is enough to pull); the hub's is `private`.
    await runThroughHubCache(hub, {
      host: hubHost,
      viewer,
      edge: 'img-1',
      workload: 'cached-app',
      image: viaHub,
      placement: 'pc',
      what: 'Ready through the hub cache',
    });
    // The tag was resolved once, to the digest the registry had, and is now in the cache.
    const images = (await hubApi(hub, 'GET', '/api/v1/projects/default/images')).json.items;
    expect(images).toContainEqual(
      expect.objectContaining({ repository: 'private/outpost-test/private-app', tag, digest: upstreamDigest }),
    );
    // The edge pulled the image from the hub, by the digest the hub resolved the tag to (it was on
    // no host before: the image is unique to this test).
    expect(
      (
        await createPodman().run([
          'image',
          'exists',
          `${hubHost}/default/private/outpost-test/private-app@${upstreamDigest}`,
        ])
      ).code,
    ).toBe(0);
    expect(registry.log()).not.toMatch(new RegExp(`manifests/${upstreamDigest}[^\\n]*useragent="containers/`));
    // The registry served that manifest to the hub (node's client), authorized: the edge never reached it.
    const served = registry
      .log()
      .split('\n')
      .filter(
        (l) => l.includes('msg="authorized request"') && l.includes(`manifests/${tag}`) && l.includes('method=GET'),
      );
    expect(served.length).toBeGreaterThanOrEqual(1);
    expect(served.every((l) => !l.includes('useragent="containers/'))).toBe(true);
    // A second pull of the tag is answered from the cache.
    const before = served.length;
    const again = await fetch(`${hub.url}/v2/default/private/outpost-test/private-app/manifests/${tag}`, {
      headers: { authorization: `Bearer ${viewer}`, accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    expect(again.status).toBe(200);
    expect(again.headers.get('docker-content-digest')).toBe(upstreamDigest);
    expect(
      registry
        .log()
        .split('\n')
        .filter(
          (l) => l.includes('msg="authorized request"') && l.includes(`manifests/${tag}`) && l.includes('method=GET'),
        ),
    ).toHaveLength(before);
    // Neither the registry's password nor the viewer token shows in the logs.
    for (const secret of [registry.password, viewer]) {
      expect(hub.proc.out + hub.proc.err).not.toContain(secret);
      expect(edge!.out + edge!.err).not.toContain(secret);
    }
  }, 240_000);
});
