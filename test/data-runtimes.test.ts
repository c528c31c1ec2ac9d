/**
 * docs/data.md's two examples (a Pod exporting `/export` with its egress annotation, a workload
 * reading DataObjects at `/objects`) on each driver, through an in-process hub and agents (issue
 * #42, item 2). On podman the egress annotation alone made `podman kube play` fail ("value length
 * exceeds Kubernetes max 63") and the rollout Failed: the outpost.dev annotations are the edge's
 * own and no driver hands them to its runtime (edge/drivers/outpost-annotations.ts).
 *
 * - podman (real pods of the test image): both Ready; the clip the camera writes to /export
 *   reaches the hub and leaves the edge (mode move); the reader reads the object at /objects; no
 *   container podman made carries an outpost.dev annotation.
 * - kubernetes (the real kube-apiserver, test/kube/harness.ts, with the node double): applied
 *   without error and Ready; no live object carries an outpost.dev annotation; not Modified.
 * - process: Ready, with a message that /export and /objects are not mounted and which variable
 *   the workload must use instead; a camera that uses it has its clip on the hub.
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EGRESS_ANNOTATION } from '../core/data.js';
import { OBJECTS_MOUNT_ANNOTATION } from '../core/delivery.js';
import type { EdgeWorkloadView } from '../core/api/views.js';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import { createPodman } from '../edge/drivers/podman/cli.js';
import { TEST_IMAGE } from '../edge/drivers/podman/harness.js';
import { LABEL_OWNER } from '../edge/drivers/podman/plan.js';
import { startHub, type Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, stopAgents } from './fixtures/in-process-fleet.js';
import { tempDir, waitFor } from './helpers.js';
import { kubectlBinary, startKubeApiServer, type KubeApiServer } from './kube/harness.js';
import { startNodeDouble, type NodeDouble } from './kube/node-double.js';

const run = promisify(execFile);

/** docs/data.md's declaration, as written there: 80 characters. */
const EGRESS = '[{"source": "/export", "target": "clips", "mode": "move", "maxBytes": "2GiB"}]';
const MODEL = 'detector v1\n';
const CLIP = 'clip-1\n';
const EDGES = { podman: 'site-podman', kubernetes: 'site-kube', process: 'site-process' } as const;
type Kind = keyof typeof EDGES;

let dir: string;
let hub: Hub;
let kube: KubeApiServer;
let node: NodeDouble;
const agents = new Map<Kind, EdgeAgent>();

const sha256 = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;
const isOutpost = (k: string) => /^([^/]+\.)?outpost\.dev\//.test(k);

/** The Pod of docs/data.md's egress example; `container` runs it here. */
function camera(name: string, container: Record<string, unknown>) {
  return {
    kind: 'Workload',
    metadata: { name },
    spec: {
      manifests: [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'camera', annotations: { [EGRESS_ANNOTATION]: EGRESS } },
          spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', ...container }] },
        },
      ],
    },
  };
}

/** A Deployment asking for the objects directory at /objects, as docs/data.md shows it. */
function reader(name: string, container: Record<string, unknown>) {
  return {
    kind: 'Workload',
    metadata: { name },
    spec: {
      manifests: [
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'reader', annotations: { [OBJECTS_MOUNT_ANNOTATION]: '/objects' } },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: 'reader' } },
            template: {
              metadata: { labels: { app: 'reader' } },
              spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', ...container }] },
            },
          },
        },
      ],
    },
  };
}

async function place(kind: Kind, workloads: Record<string, unknown>[]): Promise<void> {
  const names = workloads.map((w) => (w.metadata as { name: string }).name);
  await adminApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      ...workloads,
      { kind: 'Placement', metadata: { name: kind }, spec: { edges: [EDGES[kind]], workloads: names } },
    ],
  });
}

/** The workloads of an edge as the hub shows them, once each of `names` is Ready; a timeout names a Failed one's reason. */
async function readyOnHub(kind: Kind, names: string[]): Promise<Map<string, EdgeWorkloadView>> {
  return waitFor(
    async () => {
      const edge = await adminApi(hub, 'GET', `/api/v1/projects/default/edges/${EDGES[kind]}`);
      const ws = new Map<string, EdgeWorkloadView>(
        (edge.status.workloads as EdgeWorkloadView[]).map((w) => [w.name, w]),
      );
      for (const n of names) {
        const w = ws.get(n);
        if (w?.state === 'Failed' || w?.state === 'Error')
          throw new Error(`${n} on ${EDGES[kind]}: ${w.state}: ${w.reason}`);
        if (w?.state !== 'Ready') return undefined;
      }
      return ws;
    },
    { timeout: 90_000, what: `${names.join(', ')} Ready on ${EDGES[kind]}, as the hub shows it` },
  );
}

/** The clip the camera exported, once the hub lists it. */
async function clipOnHub(kind: Kind, workload: string): Promise<{ path: string; size: number; digest: string }> {
  return waitFor(
    async () => {
      const r = await adminApi(
        hub,
        'GET',
        `/api/v1/projects/default/edges/${EDGES[kind]}/data-files?workload=${workload}`,
      );
      return (r.items as { path: string; size: number; digest: string }[]).find((f) => f.path === 'clips/c1.txt');
    },
    { timeout: 60_000, what: `clips/c1.txt of ${workload} on the hub` },
  );
}

const exportFile = (kind: Kind, workload: string) =>
  path.join(dir, EDGES[kind], 'data', 'export', workload, 'clips', 'c1.txt');

beforeAll(async () => {
  dir = tempDir('outpost-data-runtimes-');
  kube = await startKubeApiServer();
  node = await startNodeDouble(kube);
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0', insecureHttp: true });
  const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', {
    project: 'default',
    labels: {},
    uses: 3,
  });
  for (const kind of Object.keys(EDGES) as Kind[])
    agents.set(
      kind,
      await startEdgeAgent({
        dataDir: path.join(dir, EDGES[kind]),
        hub: hub.url,
        joinToken: join.token,
        name: EDGES[kind],
        driver: kind,
        ...(kind === 'kubernetes' ? { kubeconfig: kube.kubeconfig } : {}),
        heartbeatMs: 1_000,
      }),
    );
  const model = path.join(dir, 'model.bin');
  fs.writeFileSync(model, MODEL);
  const env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken, OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  const published = await runCli(
    [
      'data',
      'publish',
      '-f',
      model,
      '--name',
      'model',
      '--edges',
      Object.values(EDGES).join(','),
      '--path',
      'models/m.bin',
    ],
    { env },
  );
  expect(published.code, published.stderr).toBe(0);
  for (const e of Object.values(EDGES))
    await waitFor(() => fs.existsSync(path.join(dir, e, 'data', 'objects', 'models', 'm.bin')), {
      timeout: 60_000,
      what: `the DataObject on ${e}`,
    });
}, 180_000);

afterAll(async () => {
  await stopAgents([...agents.values()]);
  await hub?.close();
  await node?.stop();
  await kube?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe("docs/data.md's examples on every driver", () => {
  it('podman: both Ready, the clip reaches the hub, the object is read at /objects, podman gets no outpost.dev annotation', async () => {
    await place('podman', [
      camera('camera-podman', {
        image: TEST_IMAGE,
        command: [
          'sh',
          '-c',
          `printf '${CLIP.trim()}\\n' > /export/.c1 && mv /export/.c1 /export/c1.txt && exec sleep 600`,
        ],
      }),
      reader('reader-podman', { image: TEST_IMAGE, command: ['sleep', '600'] }),
    ]);
    await readyOnHub('podman', ['camera-podman', 'reader-podman']);
    const clip = await clipOnHub('podman', 'camera-podman');
    expect(clip).toMatchObject({ size: CLIP.length, digest: sha256(CLIP) });
    await waitFor(() => !fs.existsSync(exportFile('podman', 'camera-podman')), {
      what: 'the clip moved off the edge (mode move)',
    });

    const agent = agents.get('podman')!;
    const read = await agent.driver.exec('reader-podman', ['cat', '/objects/models/m.bin'], {});
    expect(read).toMatchObject({ exitCode: 0, stdout: MODEL });
    const env = await agent.driver.exec('reader-podman', ['sh', '-c', 'echo $OUTPOST_DATA_OBJECTS_DIR'], {});
    expect(env.stdout).toBe('/objects\n');

    const owner = fs.readFileSync(path.join(dir, EDGES.podman, 'runtime', 'podman', 'podman', 'owner'), 'utf8').trim();
    const podman = createPodman();
    const ids = (await podman.ok(['ps', '-a', '-q', '--filter', `label=${LABEL_OWNER}=${owner}`], 'podman ps'))
      .split('\n')
      .filter(Boolean);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    for (const id of ids) {
      const annotations = JSON.parse(
        await podman.ok(['container', 'inspect', '--format', '{{json .Config.Annotations}}', id], 'inspect'),
      ) as Record<string, string>;
      expect(Object.keys(annotations).filter(isOutpost), `container ${id}`).toEqual([]);
    }
  }, 150_000);

  it('kubernetes: applied without error, Ready, no outpost.dev annotation on the live objects, not Modified', async () => {
    // As docs/data.md writes them: the node double simulates a container without a command.
    await place('kubernetes', [
      camera('camera-kube', { image: 'localhost/camera:1' }),
      reader('reader-kube', { image: 'localhost/reader:1' }),
    ]);
    await readyOnHub('kubernetes', ['camera-kube', 'reader-kube']);
    const { stdout } = await run(
      kubectlBinary(),
      [
        '--kubeconfig',
        kube.kubeconfig,
        'get',
        'pods,deployments',
        '-A',
        '-l',
        'outpost.dev/workload in (camera-kube,reader-kube)',
        '-o',
        'json',
      ],
      { timeout: 30_000 },
    );
    const items = JSON.parse(stdout).items as Record<string, any>[];
    expect(items.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      expect.arrayContaining(['Deployment/reader', 'Pod/camera']),
    );
    for (const o of items) {
      const keys = [
        ...Object.keys(o.metadata.annotations ?? {}),
        ...Object.keys(o.spec?.template?.metadata?.annotations ?? {}),
      ];
      expect(keys.filter(isOutpost), `${o.kind}/${o.metadata.name}`).toEqual([]);
    }
    // The decorators' mounts did reach the cluster: only the annotations were held back.
    const pod = items.find((o) => o.kind === 'Pod' && o.metadata.name === 'camera')!;
    expect(pod.spec.containers[0].volumeMounts).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'outpost-export-clips', mountPath: '/export' })]),
    );
    // Drift is read against what the driver applies: the annotations it held back are not drift.
    const observed = (await agents.get('kubernetes')!.driver.list()).filter((w) => w.name.endsWith('-kube'));
    expect(observed.map((w) => [w.name, w.phase, w.modified])).toEqual(
      expect.arrayContaining([
        ['camera-kube', 'Ready', undefined],
        ['reader-kube', 'Ready', undefined],
      ]),
    );
  }, 120_000);

  it('process: Ready with a message naming the variable to use instead of /export and /objects', async () => {
    await place('process', [
      camera('camera-process', {
        command: [
          '/bin/sh',
          '-c',
          `printf '${CLIP.trim()}\\n' > "$OUTPOST_EXPORT_DIR/.c1" && mv "$OUTPOST_EXPORT_DIR/.c1" "$OUTPOST_EXPORT_DIR/c1.txt" && exec sleep 600`,
        ],
      }),
      reader('reader-process', { command: ['/bin/sh', '-c', 'exec sleep 600'] }),
    ]);
    const ws = await readyOnHub('process', ['camera-process', 'reader-process']);
    expect(ws.get('camera-process')!.reason).toBe(
      'data.outpost.dev/egress: the process driver mounts nothing at /export; the workload must write its export files to the directory in $OUTPOST_EXPORT_DIR',
    );
    expect(ws.get('reader-process')!.reason).toBe(
      'data.outpost.dev/objects: the process driver mounts nothing at /objects; the workload must read the delivered objects from the directory in $OUTPOST_DATA_OBJECTS_DIR',
    );
    expect(await clipOnHub('process', 'camera-process')).toMatchObject({ digest: sha256(CLIP) });
  }, 120_000);
});
