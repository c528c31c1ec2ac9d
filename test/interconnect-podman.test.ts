/**
 * Interconnect to a podman consumer (docs/interconnect.md): a hub process, an edge `icp-pod` on
 * the podman driver and an edge `icp-srv` on the process driver (real `outpost edge` processes).
 * A TCP echo server runs on icp-srv and is exported; icp-pod imports it, and its podman pod reaches
 * the import at its default gateway, the pods' bridge on the host (where the consuming edge listens
 * besides 127.0.0.1, which a pod's own loopback is not): the pod's `nc` gets its line echoed.
 * The other way too: a podman pod on icp-pod serves an echo on a declared port, exported; icp-srv
 * imports it, and a process-driver workload there connects to the import's local address
 * (127.0.0.1) and gets its line echoed by the pod, which the hub reached at the pod's address.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SKIP_PODMAN, TEST_IMAGE } from '../edge/drivers/podman/harness.js';
import { startJoinedEdge } from './fixtures/edge-procs.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { podWorkload, removeEdgePods } from './fixtures/podman-edge.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, startHubProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let www: string;
let hub: HubProc;
const running: Proc[] = [];
let echoPort: number;
let importPort: number;
let podImportPort: number;
/** The pod's echo port, inside its own network namespace. */
const POD_ECHO_PORT = 7007;

const importStatus = async () => (await hubApi(hub, 'GET', '/api/v1/projects/default/serviceimports/echo')).json.status;

beforeAll(async () => {
  if (SKIP_PODMAN) return;
  dir = tempDir('outpost-interconnect-podman-');
  www = path.join(dir, 'www');
  fs.mkdirSync(www);
  [echoPort, importPort, podImportPort] = [await freePort(), await freePort(), await freePort()];
  fs.writeFileSync(
    path.join(dir, 'echo.js'),
    `require('net').createServer({ allowHalfOpen: true }, (s) => { s.on('error', () => undefined); s.pipe(s); }).listen(${echoPort}, '127.0.0.1');\n`,
  );
  // The process-driver client: one line to the import of the pod's echo each second, the answers appended to a file.
  fs.writeFileSync(
    path.join(dir, 'client.js'),
    `const net = require('net'), fs = require('fs');
setInterval(() => {
  const s = net.connect(${podImportPort}, '127.0.0.1', () => s.write('hello-from-a-process\\n'));
  s.on('data', (d) => (fs.appendFileSync(${JSON.stringify(path.join(www, 'got-from-pod'))}, d), s.end()));
  s.on('error', () => undefined);
  s.setTimeout(2000, () => s.destroy());
}, 1000);
`,
  );
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http']);
  running.push(hub.proc);
  running.push(await startJoinedEdge(hub, path.join(dir, 'icp-srv'), 'icp-srv', { driver: 'process' }));
  running.push(await startJoinedEdge(hub, path.join(dir, 'icp-pod'), 'icp-pod', { driver: 'podman' }));
  const applied = await hubApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      hostPod('echo', `${process.execPath} ${path.join(dir, 'echo.js')}`, { pidDir: www, port: echoPort }),
      { kind: 'Placement', metadata: { name: 'echo' }, spec: { edges: ['icp-srv'], workloads: ['echo'] } },
      { kind: 'ServiceExport', metadata: { name: 'echo' }, spec: { workload: 'echo', port: echoPort } },
      {
        kind: 'ServiceImport',
        metadata: { name: 'echo' },
        spec: { export: 'echo', port: importPort, edges: ['icp-pod'] },
      },
      podWorkload('client', TEST_IMAGE, [
        'sh',
        '-c',
        // The pod's default gateway: the bridge's address on the host, where the edge listens too.
        `GW=\`ip route | awk '/^default/ {print $3}'\`; while true; do echo hello-from-the-pod | nc -w 2 $GW ${importPort} >> /tmp/got 2>&1; sleep 1; done`,
      ]),
      { kind: 'Placement', metadata: { name: 'client' }, spec: { edges: ['icp-pod'], workloads: ['client'] } },
      {
        kind: 'Workload',
        metadata: { name: 'pod-echo' },
        spec: {
          manifests: [
            {
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name: 'pod-echo' },
              spec: {
                terminationGracePeriodSeconds: 0,
                containers: [
                  {
                    name: 'main',
                    image: TEST_IMAGE,
                    command: ['sh', '-c', `while true; do nc -l -p ${POD_ECHO_PORT} -e cat; done`],
                    ports: [{ containerPort: POD_ECHO_PORT }],
                  },
                ],
              },
            },
          ],
        },
      },
      { kind: 'Placement', metadata: { name: 'pod-echo' }, spec: { edges: ['icp-pod'], workloads: ['pod-echo'] } },
      { kind: 'ServiceExport', metadata: { name: 'pod-echo' }, spec: { workload: 'pod-echo', port: POD_ECHO_PORT } },
      {
        kind: 'ServiceImport',
        metadata: { name: 'pod-echo' },
        spec: { export: 'pod-echo', port: podImportPort, edges: ['icp-srv'] },
      },
      hostPod('pclient', `${process.execPath} ${path.join(dir, 'client.js')}`, { pidDir: www }),
      { kind: 'Placement', metadata: { name: 'pclient' }, spec: { edges: ['icp-srv'], workloads: ['pclient'] } },
    ],
  });
  expect(applied.status, JSON.stringify(applied.json)).toBeLessThan(300);
}, 120_000);

afterAll(async () => {
  if (SKIP_PODMAN) return;
  for (const p of running) await p.kill('SIGTERM').catch(() => undefined);
  killHostWorkloads(www);
  await removeEdgePods(path.join(dir, 'icp-pod'));
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(SKIP_PODMAN)('interconnect to a podman workload', () => {
  it("reaches the export from a pod, at the podman network's gateway", async () => {
    await waitFor(async () => (await importStatus())?.listening === 1, {
      what: 'icp-pod listening on 127.0.0.1 and the gateway',
      timeout: 60_000,
    });
    const env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token, OUTPOST_CONFIG: path.join(dir, 'none.json') };
    await waitFor(
      async () =>
        (await cli(['exec', 'edge/icp-pod', 'client', '--', 'cat', '/tmp/got'], env)).stdout.includes(
          'hello-from-the-pod',
        ),
      { what: "the pod's line echoed through the hub", timeout: 90_000, interval: 1_000 },
    );
    const e = await waitFor(
      async () => {
        const x = (await importStatus()).edges[0];
        return x.total >= 1 && x.connectP50Ms !== undefined ? x : undefined;
      },
      { what: "icp-pod's report of the connection", timeout: 15_000 },
    );
    expect(e.edge).toBe('icp-pod');
  }, 180_000);

  it('a process-driver workload reaches a podman workload by its import, echoed by the pod', async () => {
    const got = path.join(www, 'got-from-pod');
    await waitFor(() => fs.existsSync(got) && fs.readFileSync(got, 'utf8').includes('hello-from-a-process'), {
      what: "the process client's line echoed by the pod through the hub",
      timeout: 120_000,
      interval: 1_000,
    });
    // The edge reports at most once a second: the line can be back before its report is.
    const status = await waitFor(
      async () => {
        const st = (await hubApi(hub, 'GET', '/api/v1/projects/default/serviceimports/pod-echo')).json.status;
        return st?.edges?.[0]?.total >= 1 ? st : undefined;
      },
      { what: "icp-srv's report of the connection", timeout: 15_000 },
    );
    expect(status.edges[0].edge).toBe('icp-srv');
  }, 180_000);
});
