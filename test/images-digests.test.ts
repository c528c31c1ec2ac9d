/**
 * Images pinned to digests per workload revision (issue 19), with real processes: a hub, a podman
 * edge, and two real images pushed to the hub's cache under one tag. The edge runs the digest the
 * tag had when the revision was resolved; pushing another image under the same tag does not move
 * the running revision (not even when its targets are computed again: the edge is relabeled, the
 * hub restarted), while a new revision of the workload takes the new digest, and a rollback to the
 * first revision runs the first digest again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPodman } from '../edge/drivers/podman/cli.js';
import { dropImageName, SKIP_PODMAN, TEST_IMAGE } from '../edge/drivers/podman/harness.js';
import { LABEL_OWNER, LABEL_WORKLOAD } from '../edge/drivers/podman/plan.js';
import { hubApi } from './fixtures/host-workloads.js';
import { podWorkload, removeEdgePods, startPodmanEdge } from './fixtures/podman-edge.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, startHubProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let hub: HubProc;
let port: number;
let edge: Proc | undefined;
let host: string;
const built = `localhost/outpost-digest-b:t${Date.now().toString(36)}`;
const pulled: string[] = [];
let builtId: string | undefined;

const asCli = () => ({ OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token, OUTPOST_CONFIG: path.join(dir, 'none.json') });
const ownerOf = () => fs.readFileSync(path.join(dir, 'edge', 'runtime', 'podman', 'podman', 'owner'), 'utf8').trim();
/** The image references the edge's running containers of workload `app` were created from. */
async function runningImages(): Promise<string[]> {
  const r = await createPodman().run([
    'ps',
    '--filter',
    `label=${LABEL_OWNER}=${ownerOf()}`,
    '--filter',
    `label=${LABEL_WORKLOAD}=app`,
    '--format',
    '{{.Image}}',
  ]);
  return [...new Set(r.stdout.split('\n').filter((l) => l && !l.includes('pause')))].sort();
}
const workload = (command: string) => podWorkload('app', `${host}/default/team/app:v1`, ['sh', '-c', command]);
const appState = async (): Promise<any> =>
  (await hubApi(hub, 'GET', '/api/v1/projects/default/edges/dig-1')).json.status?.workloads?.find(
    (w: any) => w.name === 'app',
  );

beforeAll(async () => {
  if (SKIP_PODMAN) return;
  dir = tempDir();
  port = await freePort();
  host = `127.0.0.1:${port}`;
  hub = await startHubProc(path.join(dir, 'hub'), port, ['--insecure-http']);
  const podman = createPodman();
  await podman.ok(['save', '--format', 'oci-archive', '-o', path.join(dir, 'a.tar'), TEST_IMAGE], 'podman save a');
  // A second image: the test image and one more file (no registry needed to build it).
  fs.mkdirSync(path.join(dir, 'b'));
  fs.writeFileSync(path.join(dir, 'b', 'b.txt'), 'b\n');
  fs.writeFileSync(path.join(dir, 'b', 'Containerfile'), `FROM ${TEST_IMAGE}\nCOPY b.txt /b.txt\n`);
  await podman.ok(['build', '-q', '-t', built, path.join(dir, 'b')], 'podman build b');
  builtId = (await podman.ok(['image', 'inspect', built, '--format', '{{.Id}}'], 'inspect b')).trim();
  await podman.ok(['save', '--format', 'oci-archive', '-o', path.join(dir, 'b.tar'), built], 'podman save b');
}, 120_000);

afterAll(async () => {
  if (SKIP_PODMAN) return;
  await edge?.kill('SIGTERM');
  await hub?.proc.kill('SIGTERM');
  const podman = createPodman();
  await removeEdgePods(path.join(dir, 'edge'));
  for (const ref of pulled) await dropImageName(podman, ref);
  // Image b is this test's own: gone with every name it got (the edge pulled it by digest too).
  if (builtId) await podman.run(['rmi', '-f', builtId]);
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(SKIP_PODMAN)('images pinned to digests per revision', () => {
  it('keeps the running revision on the digest it resolved when the tag moves; a new revision takes the new one', async () => {
    const push = async (archive: string): Promise<string> => {
      const r = await cli(['image', 'push', path.join(dir, archive), 'team/app:v1'], asCli());
      expect(r.code, r.stderr).toBe(0);
      return /@(sha256:[0-9a-f]{64})$/.exec(r.stdout.trim())![1];
    };
    const digestA = await push('a.tar');
    const viewer = (await cli(['token', 'create', '--api', '--role', 'viewer'], asCli())).stdout.trim();
    edge = await startPodmanEdge(hub, path.join(dir, 'edge'), 'dig-1');
    const applied = await hubApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'Registry',
          metadata: { name: 'hub-cache' },
          spec: { url: `http://${host}`, credentials: { username: 'outpost', password: viewer } },
        },
        workload('exec sleep 600'),
        { kind: 'Placement', metadata: { name: 'p' }, spec: { edges: ['dig-1'], workloads: ['app'] } },
      ],
    });
    expect(applied.status, JSON.stringify(applied.json)).toBeLessThan(300);
    await waitFor(async () => (await appState())?.state === 'Ready', { timeout: 90_000, what: 'app Ready on A' });
    const pinnedA = `${host}/default/team/app@${digestA}`;
    pulled.push(pinnedA);
    expect(await runningImages()).toEqual([pinnedA]);

    // The tag moves to another image.
    const digestB = await push('b.tar');
    expect(digestB).not.toBe(digestA);
    // The same revision's targets computed again (the edge relabeled, then the hub restarted): still A.
    expect((await cli(['edge', 'label', 'dig-1', 'moved=yes'], asCli())).code).toBe(0);
    await hub.proc.kill('SIGTERM');
    hub = await startHubProc(path.join(dir, 'hub'), port, ['--insecure-http']);
    await waitFor(
      async () => (await hubApi(hub, 'GET', '/api/v1/projects/default/edges/dig-1')).json.status?.connectedSince,
      {
        timeout: 30_000,
        what: 'edge back on the restarted hub',
      },
    );
    await waitFor(
      async () =>
        (await hubApi(hub, 'GET', '/api/v1/projects/default/placements/p')).json.status?.rollout?.phase === 'Complete',
      { timeout: 30_000, what: 'placement Complete after the restart' },
    );
    expect(await runningImages()).toEqual([pinnedA]);
    // The pinned manifest stays pullable by digest from the hub (a new edge of this revision gets A).
    const byDigest = await fetch(`${hub.url}/v2/default/team/app/manifests/${digestA}`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${viewer}` },
    });
    expect(byDigest.status).toBe(200);

    // A new revision resolves the tag again: B.
    expect((await hubApi(hub, 'POST', '/api/v1/apply', { objects: [workload('exec sleep 601')] })).status).toBeLessThan(
      300,
    );
    const pinnedB = `${host}/default/team/app@${digestB}`;
    pulled.push(pinnedB);
    await waitFor(async () => ((await runningImages()).join() === pinnedB ? true : null), {
      timeout: 90_000,
      what: 'the new revision running B',
    });
    await waitFor(async () => (await appState())?.state === 'Ready', { timeout: 60_000, what: 'app Ready on B' });
    const out = await cli(['exec', 'edge/dig-1', 'app', '--', 'cat', '/b.txt'], asCli());
    expect(out.stdout.trim()).toBe('b');

    // A rollback runs what the revision it goes back to ran: A, though the tag now names B.
    const undo = await cli(['rollout', 'undo', 'workload', 'app'], asCli());
    expect(undo.code, undo.stderr).toBe(0);
    await waitFor(async () => ((await runningImages()).join() === pinnedA ? true : null), {
      timeout: 90_000,
      what: 'the rolled-back revision running A again',
    });
    await waitFor(async () => (await appState())?.state === 'Ready', { timeout: 60_000, what: 'app Ready on A again' });
  }, 300_000);
});
