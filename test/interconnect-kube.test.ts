/**
 * Interconnect to Kubernetes consumers (docs/interconnect.md, "Kubernetes consumers"): an
 * in-process hub, a process-driver edge `ick-srv` serving a TCP echo (exported), and an edge
 * `ick-kube` on the kubernetes driver against a real kube-apiserver (test/kube/harness.ts, no
 * kubelet: the objects are what is tested) consuming it.
 *
 * Until the cluster has a Node whose InternalIP is an address of this host, the import's status
 * says no address the pods reach is known and how to give one; once it has, the edge listens there
 * too and the cluster holds a selector-less Service `echo` in namespace `outpost` (ClusterIP, the
 * import's port) and its Endpoints at that address and port; a connection to that address and port
 * (where a pod would connect) is echoed by the workload on the other edge through the hub. Someone
 * changing or deleting them is put back; a Service of another owner with an import's name is left
 * alone and named in the import's status; deleting the import deletes both objects.
 */
import net from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import type { Hub } from '../hub/hub.js';
import { KubeApi, type Obj } from './kube/api.js';
import { startKubeApiServer, type KubeApiServer } from './kube/harness.js';
import { adminApi, startInProcessHub, startProcessAgents, stopInProcess } from './fixtures/in-process-fleet.js';
import { freePort } from './ports.js';
import { waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
let kube: KubeApiServer;
let api: KubeApi;
const agents: EdgeAgent[] = [];
let echoPort: number;
let importPort: number;
let otherPort: number;
/** An address of this host that is not loopback: the Node's InternalIP, where the pods would connect. */
let hostIp: string;

const NS = '/api/v1/namespaces/outpost';
const apply = (objects: unknown[]) => adminApi(hub, 'POST', '/api/v1/apply', { objects });
const meta = (name: string) => ({ name, project: 'default' });
const kubeEdge = async (name: string) =>
  (await adminApi(hub, 'GET', `/api/v1/projects/default/serviceimports/${name}`)).status?.edges?.find(
    (e: Obj) => e.edge === 'ick-kube',
  );
const get = async (p: string): Promise<Obj | undefined> => {
  const r = await api.req('GET', p);
  return r.status === 404 ? undefined : r.body;
};

/** Connects to host:port, writes `data`, half-closes, and reads until the peer ends or resets. */
function exchange(host: string, port: number, data: Buffer): Promise<{ got: Buffer; error?: string }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const sock = net.connect({ host, port, allowHalfOpen: true });
    let error: string | undefined;
    sock.on('connect', () => sock.end(data));
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', (err) => (error = (err as NodeJS.ErrnoException).code ?? err.message));
    sock.on('close', () => resolve({ got: Buffer.concat(chunks), ...(error ? { error } : {}) }));
  });
}

beforeAll(async () => {
  const ip = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal);
  if (!ip) throw new Error('this test needs a non-loopback IPv4 address on this host (the Node InternalIP)');
  hostIp = ip.address;
  [kube, { dir, hub }] = await Promise.all([startKubeApiServer(), startInProcessHub('outpost-ic-kube-')]);
  api = new KubeApi(kube.url, kube.caPem, kube.token);
  [echoPort, importPort, otherPort] = [await freePort(), await freePort(), await freePort()];
  await startProcessAgents(hub, dir, ['ick-srv'], { role: 'server' }, agents);
  const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', {
    project: 'default',
    labels: { role: 'consumer' },
    uses: 1,
  });
  agents.push(
    await startEdgeAgent({
      dataDir: path.join(dir, 'ick-kube'),
      hub: hub.url,
      joinToken: join.token,
      name: 'ick-kube',
      driver: 'kubernetes',
      kubeconfig: kube.kubeconfig,
      heartbeatMs: 1_000,
      // The address retried and the objects checked every second, not every 10 s.
      interconnectRetryMs: 1_000,
    }),
  );
  const echo = `require('net').createServer({ allowHalfOpen: true }, (s) => { s.on('error', () => undefined); s.pipe(s); }).listen(${echoPort}, '127.0.0.1')`;
  await apply([
    {
      kind: 'Workload',
      metadata: meta('echo'),
      spec: {
        manifests: [
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'echo' },
            spec: {
              containers: [
                {
                  name: 'echo',
                  command: [process.execPath, '-e', echo],
                  ports: [{ containerPort: echoPort }],
                  readinessProbe: { tcpSocket: { port: echoPort }, periodSeconds: 1 },
                },
              ],
            },
          },
        ],
      },
    },
    {
      kind: 'Placement',
      metadata: meta('echo'),
      spec: { edgeSelector: { matchLabels: { role: 'server' } }, workloads: ['echo'] },
    },
    { kind: 'ServiceExport', metadata: meta('echo'), spec: { workload: 'echo', port: echoPort } },
    {
      kind: 'ServiceImport',
      metadata: meta('echo'),
      spec: { export: 'echo', port: importPort, edgeSelector: { matchLabels: { role: 'consumer' } } },
    },
  ]);
}, 120_000);

afterAll(async () => {
  await stopInProcess({ agents, hub, dir });
  await kube?.stop();
});

describe('interconnect: a ServiceImport on a kubernetes edge', () => {
  it('says no address the pods reach is known while no Node has one of this host', async () => {
    const e = await waitFor(
      async () => {
        const x = await kubeEdge('echo');
        return x?.listening && /pods reach is known/.test(x.error ?? '') ? x : undefined;
      },
      { what: 'the import listening on 127.0.0.1 with the missing address in its status', timeout: 30_000 },
    );
    expect(e.error).toMatch(
      /no address of this host that the cluster's pods reach is known: the cluster lists no node with an InternalIP; start the agent with --interconnect-address IP/,
    );
    expect(await get(`${NS}/services/echo`)).toBeUndefined();
  });

  it('makes a Service and Endpoints at the Node address, and a connection there reaches the workload through the hub', async () => {
    await api.ok('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'ick-node' } });
    await api.ok(
      'PATCH',
      '/api/v1/nodes/ick-node/status',
      { status: { addresses: [{ type: 'InternalIP', address: hostIp }] } },
      'application/merge-patch+json',
    );
    const ep = await waitFor(() => get(`${NS}/endpoints/echo`), { what: 'the Endpoints of echo', timeout: 30_000 });
    expect(ep.subsets).toEqual([
      { addresses: [{ ip: hostIp }], ports: [{ name: 'tcp', port: importPort, protocol: 'TCP' }] },
    ]);
    const svc = (await get(`${NS}/services/echo`))!;
    expect(svc.spec.type).toBe('ClusterIP');
    expect(svc.spec.clusterIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(svc.spec.selector).toBeUndefined();
    expect(svc.spec.ports).toEqual([{ name: 'tcp', protocol: 'TCP', port: importPort, targetPort: importPort }]);
    expect(svc.metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'outpost',
      'outpost.dev/edge': 'ick-kube',
      'outpost.dev/import': 'echo',
    });
    // The driver reports no workload for them.
    expect((await agents[1]!.driver.list()).map((w) => w.name)).toEqual([]);

    await waitFor(
      async () => (await adminApi(hub, 'GET', '/api/v1/projects/default/placements/echo')).status?.summary?.ready === 1,
      { what: 'the echo server ready on ick-srv', timeout: 60_000 },
    );
    const got = await exchange(hostIp, importPort, Buffer.from('hello from a pod\n'));
    expect(got).toEqual({ got: Buffer.from('hello from a pod\n') });
    const e = await waitFor(
      async () => {
        const x = await kubeEdge('echo');
        return x?.total >= 1 && !x.error ? x : undefined;
      },
      { what: 'the import counting the connection, its error gone', timeout: 15_000 },
    );
    expect(e.refused).toBe(0);
  });

  it('puts back a Service someone changed and Endpoints someone deleted, keeping the ClusterIP', async () => {
    const before = (await get(`${NS}/services/echo`))!;
    await api.ok(
      'PATCH',
      `${NS}/services/echo`,
      { spec: { selector: { app: 'someone' }, ports: [{ name: 'tcp', port: 1234, targetPort: 1234 }] } },
      'application/merge-patch+json',
    );
    await api.ok('DELETE', `${NS}/endpoints/echo`);
    const svc = await waitFor(
      async () => {
        const s = await get(`${NS}/services/echo`);
        return s && !s.spec.selector && s.spec.ports?.[0]?.port === importPort ? s : undefined;
      },
      { what: 'the Service put back', timeout: 15_000 },
    );
    expect(svc.spec.ports).toEqual([{ name: 'tcp', protocol: 'TCP', port: importPort, targetPort: importPort }]);
    expect(svc.spec.clusterIP).toBe(before.spec.clusterIP);
    const ep = await waitFor(() => get(`${NS}/endpoints/echo`), { what: 'the Endpoints made again', timeout: 15_000 });
    expect(ep.subsets[0].addresses).toEqual([{ ip: hostIp }]);
  });

  it("leaves another owner's Service of the import's name alone and says so in the import's status", async () => {
    const foreign = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'other', namespace: 'outpost', labels: { app: 'theirs' } },
      spec: { selector: { app: 'theirs' }, ports: [{ port: 80 }] },
    };
    await api.ok('POST', `${NS}/services`, foreign);
    await apply([
      {
        kind: 'ServiceImport',
        metadata: meta('other'),
        spec: { export: 'echo', port: otherPort, edges: ['ick-kube'] },
      },
    ]);
    const e = await waitFor(
      async () => {
        const x = await kubeEdge('other');
        return x?.error ? x : undefined;
      },
      { what: "the conflict in the import's status", timeout: 30_000 },
    );
    expect(e.error).toMatch(
      new RegExp(
        `Service outpost/other exists and is not this edge's: left alone; pods reach the import at ${hostIp.replace(/\./g, '\\.')}:${otherPort} only`,
      ),
    );
    const svc = (await get(`${NS}/services/other`))!;
    expect(svc.metadata.labels).toEqual({ app: 'theirs' });
    expect(svc.spec.selector).toEqual({ app: 'theirs' });
    expect(svc.spec.ports[0].port).toBe(80);
    expect(await get(`${NS}/endpoints/other`)).toBeUndefined();
  });

  it('deletes the Service and Endpoints when the import is deleted, not the other owner’s', async () => {
    await adminApi(hub, 'DELETE', '/api/v1/projects/default/serviceimports/echo');
    await adminApi(hub, 'DELETE', '/api/v1/projects/default/serviceimports/other');
    await waitFor(async () => !(await get(`${NS}/services/echo`)) && !(await get(`${NS}/endpoints/echo`)), {
      what: 'the Service and Endpoints of echo gone',
      timeout: 30_000,
    });
    expect((await get(`${NS}/services/other`))?.metadata.labels).toEqual({ app: 'theirs' });
    // The namespace is shared: never deleted.
    expect(await get(NS)).toBeDefined();
  });
});
