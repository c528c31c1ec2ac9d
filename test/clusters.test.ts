/**
 * A real single-node Kubernetes cluster made by the hub on an edge (docs/clusters.md), with the
 * real components of this machine (test/fixtures/cluster-artifacts.ts): the artifacts pushed and
 * signed through the CLI, a template and a Cluster applied, the edge agent (in-process: the
 * components are processes of their own either way) stages and verifies them, writes the PKI and
 * configs, starts containerd, etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
 * kubelet and reports; the hub shows the cluster Ready with its node and components. Through the
 * cluster's API (`kubectl`, with the admin kubeconfig the node wrote) the node is Ready;
 * `outpost cluster kubeconfig` reaches the same API through the hub's tunnel (kubectl get nodes, a
 * viewer refused a write). The edge runs the kubernetes driver enrolled without a kubeconfig: it
 * targets its cluster by itself, and a Deployment placed on the cluster (a Placement naming it) runs
 * a real pod (its ReplicaSet made by the real controller-manager, the pod bound by the real
 * scheduler, run by containerd and runc, its network from the bridge CNI). Then the
 * Cluster is deleted: every component stopped, nothing of the node left running (processes and
 * ports checked), its directory gone.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { removeCgroupRoot } from '../edge/clusters/cgroups.js';
import { nodeCgroupRoot } from '../edge/clusters/configs.js';
import { hostAddress } from '../edge/clusters/node-ip.js';
import { strays } from '../edge/clusters/processes.js';
import { tempDir, waitFor } from './helpers.js';
import { kubeBinary, nodePorts, podmanEnv, realArtifactDir, removeNodeRemains } from './fixtures/cluster-artifacts.js';
import { runCli } from './fixtures/cli.js';
import { freePort } from './ports.js';
import { stopAgents } from './fixtures/in-process-fleet.js';
import { HubClient, HubError } from '../cli/client.js';

/** kubectl through the hub: asynchronously, as the hub answers in this very process. */
const run = promisify(execFile);

const TEST_IMAGE = process.env.OUTPOST_TEST_IMAGE ?? 'localhost/outpost-busybox:latest';

describe('a real cluster at a site', () => {
  let dir: string;
  let hub: Hub;
  const agents: EdgeAgent[] = [];
  let kubectl: string;
  let ports: Record<string, number>;
  let workerPorts: { kubelet: number; kubeletHealthz: number };
  /** The cluster's uid (its nodes' cgroup roots are named by it). */
  let uid = '';
  const cgroup = (edge: string, role: 'control-plane' | 'worker') =>
    path.join('/sys/fs/cgroup/memory', nodeCgroupRoot({ uid, role }, edge));
  const nodeDir = () => path.join(dir, 'c1', 'clusters', 'site');
  const kube = (...args: string[]) =>
    execFileSync(kubectl, ['--kubeconfig', path.join(nodeDir(), 'etc', 'admin.kubeconfig'), ...args], {
      timeout: 60_000,
    }).toString();
  // A TLS hub: kubectl sends a bearer token over TLS only (client-go), as a site's operator would use it.
  const api = <T = any>(method: string, p: string, body?: unknown): Promise<T> =>
    new HubClient({ hub: hub.url, token: hub.adminToken, ca: hub.caPem }).request<T>(method, p, { body });
  const cliEnv = (token: string) => ({
    OUTPOST_HUB: hub.url,
    OUTPOST_TOKEN: token,
    OUTPOST_CA: path.join(dir, 'hub-ca.pem'),
  });
  const status = async () => (await api('GET', '/api/v1/projects/default/clusters/site')).status;

  beforeAll(async () => {
    dir = tempDir('outpost-clusters-');
    kubectl = kubeBinary('kubectl');
    const artifacts = realArtifactDir(path.join(dir, 'artifacts'));
    hub = await startHub({
      dataDir: path.join(dir, 'hub'),
      listen: '127.0.0.1:0',
      scanner: { kind: 'none' },
    });
    fs.writeFileSync(path.join(dir, 'hub-ca.pem'), hub.caPem!);
    // The edge runs the kubernetes driver enrolled without a kubeconfig: it targets its cluster once made.
    const join = await api<{ token: string }>('POST', '/api/v1/tokens/join', {
      project: 'default',
      labels: { site: 'one' },
      uses: 2,
    });
    agents.push(
      await startEdgeAgent({
        dataDir: path.join(dir, 'c1'),
        hub: hub.url,
        joinToken: join.token,
        name: 'c1',
        driver: 'kubernetes',
        heartbeatMs: 1_000,
      }),
    );
    // The worker-to-be: another edge on the same host (its own data dir, containerd, kubelet ports).
    agents.push(
      await startEdgeAgent({
        dataDir: path.join(dir, 'c2'),
        hub: hub.url,
        joinToken: join.token,
        name: 'c2',
        driver: 'process',
        heartbeatMs: 1_000,
      }),
    );
    const r = await runCli(['cluster', 'artifacts', 'push', artifacts, '--name', 'k8s', '-o', 'json'], {
      env: cliEnv(hub.adminToken),
    });
    if (r.code !== 0) throw new Error(`cluster artifacts push failed: ${r.stderr}`);
    const template = JSON.parse(r.stdout);
    expect(template.spec.kubernetesVersion).toMatch(/^v1\.\d+\.\d+$/);
    await api('POST', '/api/v1/apply', { objects: [template] });
    ports = await nodePorts();
    workerPorts = { kubelet: await freePort(), kubeletHealthz: await freePort() };
  }, 900_000);

  afterAll(async () => {
    await stopAgents(agents);
    await hub?.close();
    // Whatever a failed run left of the nodes (a passing run left nothing: checked below).
    removeNodeRemains(dir);
    if (uid) {
      removeCgroupRoot(nodeCgroupRoot({ uid, role: 'control-plane' }, 'c1'));
      removeCgroupRoot(nodeCgroupRoot({ uid, role: 'worker' }, 'c2'));
    }
  });

  it('creates a single-node cluster from a template: Ready on the hub, its node Ready in kubectl', async () => {
    await api('POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'Cluster',
          metadata: { name: 'site' },
          spec: { template: { name: 'k8s', version: '1' }, controlPlane: { edges: ['c1'] }, ports },
        },
      ],
    });
    await waitFor(async () => (await status()).phase === 'Ready', {
      timeout: 600_000,
      interval: 2_000,
      what: 'cluster site Ready',
    }).catch(async (err) => {
      throw new Error(`${(err as Error).message}\nstatus: ${JSON.stringify(await status(), null, 1)}`);
    });
    const st = await status();
    uid = (await api('GET', '/api/v1/projects/default/clusters/site')).metadata.uid;
    expect(fs.existsSync(cgroup('c1', 'control-plane'))).toBe(true);
    expect(st.summary).toBe('1/1 nodes Ready');
    expect(st.nodes[0]).toMatchObject({ edge: 'c1', role: 'control-plane', ready: true, phase: 'Ready' });
    expect(st.nodes[0].kubeletVersion).toMatch(/^v1\./);
    for (const c of ['containerd', 'etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet'])
      expect(st.components[c], c).toMatchObject({ running: true, healthy: true });
    // Each step is an event of the Cluster.
    const events = await api<{ items: { reason: string; message: string }[] }>(
      'GET',
      '/api/v1/projects/default/events?kind=Cluster&name=site',
    );
    expect(events.items.map((e) => e.reason)).toEqual(expect.arrayContaining(['Staged', 'Healthy', 'NodeReady']));
    const nodes = kube('get', 'nodes', '-o', 'json');
    const node = JSON.parse(nodes).items[0];
    expect(node.metadata.name).toBe('c1');
    expect(node.status.conditions.find((c: { type: string }) => c.type === 'Ready').status).toBe('True');
  }, 660_000);

  it("reaches the cluster's API through the hub's tunnel: outpost cluster kubeconfig, kubectl get nodes", async () => {
    const r = await runCli(['cluster', 'kubeconfig', 'site'], {
      env: cliEnv(hub.adminToken),
    });
    expect(r.code, r.stderr).toBe(0);
    const file = path.join(dir, 'site.kubeconfig');
    fs.writeFileSync(file, r.stdout);
    // The server is the hub's route to the control-plane edge, not the node's own address.
    expect(r.stdout).toContain(`${hub.url}/api/v1/edges/c1/kube`);
    expect(r.stdout).not.toContain(`127.0.0.1:${ports.apiServer}`);
    const nodes = JSON.parse((await run(kubectl, ['--kubeconfig', file, 'get', 'nodes', '-o', 'json'])).stdout);
    expect(nodes.items.map((n: { metadata: { name: string } }) => n.metadata.name)).toEqual(['c1']);
    // A token of the project that may only read reads nodes, and is refused a write.
    const viewer = await api<{ token: string }>('POST', '/api/v1/tokens/api', {
      project: 'default',
      role: 'viewer',
    });
    const v = await runCli(['cluster', 'kubeconfig', 'site'], {
      env: cliEnv(viewer.token),
    });
    expect(v.code, v.stderr).toBe(0);
    const vfile = path.join(dir, 'site-viewer.kubeconfig');
    fs.writeFileSync(vfile, v.stdout);
    expect((await run(kubectl, ['--kubeconfig', vfile, 'get', 'nodes', '-o', 'name'])).stdout).toBe('node/c1\n');
    const refused = await run(kubectl, ['--kubeconfig', vfile, 'create', 'namespace', 'nope']).then(
      () => '',
      (err: { stderr?: string }) => String(err.stderr),
    );
    expect(refused).toMatch(/forbidden|Forbidden/);
  }, 120_000);

  it("runs a Deployment placed on the cluster: the edge's kubernetes driver targets it, real ReplicaSet and pod", async () => {
    // The image comes the way a site gets images without a registry: imported into its containerd.
    const archive = path.join(dir, 'busybox.tar');
    execFileSync('podman', ['save', '--format', 'oci-archive', '-o', archive, TEST_IMAGE], { env: podmanEnv() });
    const ctr = fs.readdirSync(path.join(nodeDir(), 'bin')).find((d) => d.startsWith('containerd-'))!;
    execFileSync(path.join(nodeDir(), 'bin', ctr, 'ctr'), [
      '--address',
      path.join(nodeDir(), 'run', 'containerd.sock'),
      '--namespace',
      'k8s.io',
      'images',
      'import',
      archive,
    ]);
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            containers: [{ name: 'main', image: TEST_IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
            // `sleep` as pid 1 ignores SIGTERM: without this each stop waits out the default 30 s.
            terminationGracePeriodSeconds: 1,
          },
        },
      },
    };
    // The Placement names the cluster, not an edge: it stands for its control-plane edge.
    await api('POST', '/api/v1/apply', {
      objects: [
        { kind: 'Workload', metadata: { name: 'web' }, spec: { manifests: [deployment] } },
        { kind: 'Placement', metadata: { name: 'on-site' }, spec: { workloads: ['web'], clusters: ['site'] } },
      ],
    });
    const onEdge = async () =>
      ((await api('GET', '/api/v1/projects/default/edges/c1')).status?.workloads ?? []).find(
        (w: { name: string }) => w.name === 'web',
      );
    await waitFor(async () => (await onEdge())?.state === 'Ready', {
      timeout: 300_000,
      interval: 2_000,
      what: 'workload web Ready on edge c1',
    }).catch(async (err) => {
      throw new Error(
        `${(err as Error).message}\nworkload: ${JSON.stringify(await onEdge())}\n${kube('get', 'pods,events', '-A', '-o', 'wide')}`,
      );
    });
    const rs = JSON.parse(kube('get', 'replicasets', '-A', '-l', 'app=web', '-o', 'json')).items;
    expect(rs).toHaveLength(1);
    expect(rs[0].metadata.namespace).toBe('outpost-web');
    expect(rs[0].status.readyReplicas).toBe(1);
    const pod = JSON.parse(kube('get', 'pods', '-A', '-l', 'app=web', '-o', 'json')).items[0];
    expect(pod.status.phase).toBe('Running');
    expect(pod.spec.nodeName).toBe('c1');
    expect(pod.status.podIP).toMatch(/^10\.244\.0\./);
    // Through the hub's tunnel too, as the workload's own logs and exec go through the driver.
    const r = await runCli(['exec', 'edge/c1', 'web', '--', 'echo', 'from-the-pod'], {
      env: cliEnv(hub.adminToken),
    });
    expect(r.stdout.trim(), r.stderr).toBe('from-the-pod');
  }, 360_000);

  it("a pod reaches a ServiceImport of its edge at the Endpoints the driver keeps, echoed by another edge's workload through the hub", async () => {
    const [echoPort, importPort] = [await freePort(), await freePort()];
    const echo = `require('net').createServer({ allowHalfOpen: true }, (s) => { s.on('error', () => undefined); s.pipe(s); }).listen(${echoPort}, '127.0.0.1')`;
    const objects = [
      {
        kind: 'Workload',
        metadata: { name: 'echo' },
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
      { kind: 'Placement', metadata: { name: 'echo' }, spec: { workloads: ['echo'], edges: ['c2'] } },
      { kind: 'ServiceExport', metadata: { name: 'echo' }, spec: { workload: 'echo', port: echoPort } },
      { kind: 'ServiceImport', metadata: { name: 'echo' }, spec: { export: 'echo', port: importPort, edges: ['c1'] } },
    ];
    await api('POST', '/api/v1/apply', { objects });
    try {
      // The pods' bridge gateway of node c1 (the first address of its pod subnet): where they reach the host.
      const node = JSON.parse(kube('get', 'node', 'c1', '-o', 'json'));
      const gateway = String(node.spec.podCIDR).replace(/\.0\/24$/, '.1');
      // The replies to the pod go where the host routes its subnet: a bridge of another cluster
      // left on this host with the same subnet would take them (the connect then times out).
      const routes = execFileSync('ip', ['-4', 'route', 'show', String(node.spec.podCIDR)])
        .toString()
        .trim()
        .split('\n');
      if (routes.length > 1)
        throw new Error(
          `this host routes ${node.spec.podCIDR} to more than node c1's bridge (${routes.join('; ')}): a bridge left by another cluster? Remove it (ip link delete ob-...) and run again`,
        );
      const ep = await waitFor(
        () => {
          try {
            return JSON.parse(kube('get', 'endpoints', '-n', 'outpost', 'echo', '-o', 'json'));
          } catch {
            return undefined;
          }
        },
        { timeout: 30_000, interval: 500, what: 'the Endpoints of import echo' },
      );
      expect(ep.subsets).toEqual([
        { addresses: [{ ip: gateway }], ports: [{ name: 'tcp', port: importPort, protocol: 'TCP' }] },
      ]);
      await waitFor(
        async () => (await api('GET', '/api/v1/projects/default/placements/echo')).status?.summary?.ready === 1,
        { timeout: 60_000, what: 'the echo server ready on c2' },
      );
      // From the pod of the Deployment above: its default gateway and the import's port.
      const admin = ['--kubeconfig', path.join(nodeDir(), 'etc', 'admin.kubeconfig')];
      const got = await waitFor(
        async () => {
          const r = await run(kubectl, [
            ...admin,
            'exec',
            '-n',
            'outpost-web',
            'deploy/web',
            '--',
            'sh',
            '-c',
            `echo hello-from-a-pod | nc -w 2 ${gateway} ${importPort}`,
          ]);
          return r.stdout.includes('hello-from-a-pod') ? r.stdout : undefined;
        },
        { timeout: 30_000, interval: 1_000, what: 'the line echoed to the pod' },
      );
      expect(got.trim()).toBe('hello-from-a-pod');
    } finally {
      for (const o of [...objects].reverse())
        await api('DELETE', `/api/v1/projects/default/${o.kind.toLowerCase()}s/${o.metadata.name}`).catch(
          () => undefined,
        );
      // c2 stops the echo process before it becomes a worker (its node's strays are counted then).
      await waitFor(
        async () =>
          !((await api('GET', '/api/v1/projects/default/edges/c2')).status?.workloads ?? []).some(
            (w: { name: string }) => w.name === 'echo',
          ),
        { timeout: 30_000, what: 'the echo workload gone from c2' },
      );
    }
    await waitFor(() => kube('get', 'services,endpoints', '-n', 'outpost', '-o', 'name').trim() === '', {
      timeout: 30_000,
      interval: 500,
      what: 'the Service and Endpoints of echo gone with the import',
    });
  }, 120_000);

  it('adds a worker: a second kubelet on the same host joins, gets its pod subnet, runs a pod there', async () => {
    await api('POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'Cluster',
          metadata: { name: 'site' },
          spec: {
            template: { name: 'k8s', version: '1' },
            controlPlane: { edges: ['c1'] },
            workers: { edges: ['c2'], ports: workerPorts },
            ports,
          },
        },
      ],
    });
    await waitFor(async () => (await status()).summary === '2/2 nodes Ready', {
      timeout: 300_000,
      interval: 2_000,
      what: 'cluster site 2/2 nodes Ready',
    }).catch(async (err) => {
      throw new Error(`${(err as Error).message}\nstatus: ${JSON.stringify(await status(), null, 1)}`);
    });
    const st = await status();
    expect(st.phase).toBe('Ready');
    expect(st.nodes.find((n: { edge: string }) => n.edge === 'c2')).toMatchObject({ role: 'worker', ready: true });
    const nodes = JSON.parse(kube('get', 'nodes', '-o', 'json')).items as {
      metadata: { name: string };
      spec: { podCIDR?: string };
    }[];
    expect(nodes.map((n) => n.metadata.name).sort()).toEqual(['c1', 'c2']);
    const c2 = nodes.find((n) => n.metadata.name === 'c2')!;
    expect(c2.spec.podCIDR).toMatch(/^10\.244\.\d+\.0\/24$/);
    expect(c2.spec.podCIDR).not.toBe('10.244.0.0/24');
    // A pod bound to the worker runs there, with an address of the worker's subnet.
    const workerDir = path.join(dir, 'c2', 'clusters', 'site');
    const ctr = fs.readdirSync(path.join(workerDir, 'bin')).find((d) => d.startsWith('containerd-'))!;
    execFileSync(path.join(workerDir, 'bin', ctr, 'ctr'), [
      '--address',
      path.join(workerDir, 'run', 'containerd.sock'),
      '--namespace',
      'k8s.io',
      'images',
      'import',
      path.join(dir, 'busybox.tar'),
    ]);
    const manifest = path.join(dir, 'on-worker.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'on-worker', namespace: 'default', labels: { app: 'on-worker' } },
        spec: {
          nodeSelector: { 'kubernetes.io/hostname': 'c2' },
          containers: [{ name: 'main', image: TEST_IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
          // `sleep` as pid 1 ignores SIGTERM: its eviction would wait out the default 30 s.
          terminationGracePeriodSeconds: 1,
        },
      }),
    );
    kube('apply', '-f', manifest);
    const pod = await waitFor(
      () => {
        const p = JSON.parse(kube('get', 'pod', 'on-worker', '-o', 'json'));
        return p.status.phase === 'Running' && p.status.podIP ? p : undefined;
      },
      { timeout: 180_000, interval: 2_000, what: 'pod on-worker Running on c2' },
    ).catch((err) => {
      throw new Error(`${(err as Error).message}\n${kube('get', 'pods,events', '-A', '-o', 'wide')}`);
    });
    expect(pod.spec.nodeName).toBe('c2');
    const subnet = c2.spec.podCIDR!.replace(/0\/24$/, '');
    expect(pod.status.podIP.startsWith(subnet)).toBe(true);
    // The control plane's pods kept running beside the second kubelet (each its own cgroup root).
    const web = JSON.parse(kube('get', 'pods', '-A', '-l', 'app=web', '-o', 'json')).items;
    expect(web.map((p: { status: { phase: string } }) => p.status.phase)).toEqual(['Running']);
    expect(fs.existsSync(cgroup('c2', 'worker'))).toBe(true);
    // The hub's Prometheus series say the same.
    const text = await new Promise<string>((resolve, reject) =>
      https
        .get(`${hub.url}/metrics`, { ca: hub.caPem }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve(body));
        })
        .on('error', reject),
    );
    expect(text).toContain('outpost_hub_cluster_nodes{project="default",cluster="site",state="ready"} 2');
    expect(text).toContain('outpost_hub_clusters{phase="Ready"} 1');
    expect(text).toContain(
      'outpost_hub_cluster_component_healthy{project="default",cluster="site",component="kube-apiserver"} 1',
    );
  }, 540_000);

  it('removes the worker: cordoned, its drain waits on a PodDisruptionBudget, then node deleted, components stopped, edge released', async () => {
    const pdb = path.join(dir, 'pdb.json');
    fs.writeFileSync(
      pdb,
      JSON.stringify({
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'keep-one', namespace: 'default' },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'on-worker' } } },
      }),
    );
    kube('apply', '-f', pdb);
    await api('POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'Cluster',
          metadata: { name: 'site' },
          spec: { template: { name: 'k8s', version: '1' }, controlPlane: { edges: ['c1'] }, ports },
        },
      ],
    });
    // The budget holds the pod: the drain waits and says why; the node is cordoned meanwhile.
    const waiting = await waitFor(
      async () => {
        const st = await status();
        return /removing worker c2: .*disruption budget/.test(st.message ?? '') ? st : undefined;
      },
      { timeout: 120_000, interval: 1_000, what: 'the drain of c2 waiting on the PodDisruptionBudget' },
    ).catch(async (err) => {
      throw new Error(`${(err as Error).message}\nstatus: ${JSON.stringify(await status(), null, 1)}`);
    });
    expect(waiting.phase).toBe('Scaling');
    expect(JSON.parse(kube('get', 'node', 'c2', '-o', 'json')).spec.unschedulable).toBe(true);
    expect(JSON.parse(kube('get', 'pod', 'on-worker', '-o', 'json')).status.phase).toBe('Running');
    expect(fs.existsSync(path.join(dir, 'c2', 'clusters', 'site'))).toBe(true);
    // Without the budget the pod is evicted, the node deleted, the worker's node torn down.
    kube('delete', '-f', pdb);
    await waitFor(() => !fs.existsSync(path.join(dir, 'c2', 'clusters', 'site')), {
      timeout: 180_000,
      interval: 1_000,
      what: "the worker's node directory removed",
    });
    expect(strays(path.join(dir, 'c2'))).toEqual([]);
    expect(await listening(workerPorts.kubelet, hostAddress())).toBe(false);
    expect(fs.existsSync(cgroup('c2', 'worker'))).toBe(false);
    expect(JSON.parse(kube('get', 'nodes', '-o', 'json')).items.map((n: any) => n.metadata.name)).toEqual(['c1']);
    expect(kube('get', 'pods', '-n', 'default', '-o', 'name')).not.toContain('on-worker');
    await waitFor(async () => (await api('GET', '/api/v1/projects/default/edges/c2')).status.cluster === undefined, {
      timeout: 30_000,
      what: 'edge c2 released',
    });
    await waitFor(async () => (await status()).phase === 'Ready', { timeout: 60_000, what: 'cluster Ready again' });
    expect((await status()).summary).toBe('1/1 nodes Ready');
    const events = await api<{ items: { reason: string }[] }>(
      'GET',
      '/api/v1/projects/default/events?kind=Cluster&name=site',
    );
    expect(events.items.map((e) => e.reason)).toEqual(expect.arrayContaining(['Scaling', 'Draining', 'WorkerRemoved']));
  }, 420_000);

  it('deletes the cluster: every component stopped, nothing left running, the host released', async () => {
    // Not while a Placement targets it, unless forced (the placed workload then fails on c1).
    await expect(api('DELETE', '/api/v1/projects/default/clusters/site')).rejects.toThrow(
      'Cluster site is targeted by Placement on-site',
    );
    // Deleting: the Cluster stays, its hosts held, while its nodes tear down; it goes once they did.
    const del = await api('DELETE', '/api/v1/projects/default/clusters/site?force=true');
    expect(del.deleting).toEqual({ kind: 'Cluster', project: 'default', name: 'site' });
    expect(del.object.status).toMatchObject({ phase: 'Deleting', deletion: { forced: true } });
    expect((await api('GET', '/api/v1/projects/default/edges/c1')).status.cluster?.cluster).toBe('site');
    await waitFor(
      () =>
        api('GET', '/api/v1/projects/default/clusters/site').then(
          () => false,
          (err: unknown) => err instanceof HubError && err.status === 404,
        ),
      { timeout: 300_000, interval: 1_000, what: 'the Cluster gone once its node tore down' },
    );
    // Gone only after the node reported it had stopped everything and removed its data.
    expect(fs.existsSync(nodeDir())).toBe(false);
    const events = (
      await api<{ items: { reason: string; message: string }[] }>(
        'GET',
        '/api/v1/projects/default/events?kind=Cluster&name=site&limit=500',
      )
    ).items.map((e) => `${e.reason}: ${e.message}`);
    for (const step of [
      'Deleting: c1: ',
      "Deleted: c1: every component stopped and the node's data removed",
      'HostsReleased: ',
    ])
      expect(
        events.some((e) => e.startsWith(step)),
        step,
      ).toBe(true);
    await waitFor(() => !fs.existsSync(path.join(dir, 'c2', 'clusters', 'site')), {
      timeout: 300_000,
      interval: 1_000,
      what: "the nodes' directories removed",
    });
    expect(fs.existsSync(cgroup('c1', 'control-plane'))).toBe(false);
    expect(strays(dir)).toEqual([]);
    // The kubelet listens on the host's address (edge/clusters/node-ip.ts), the rest on loopback.
    for (const host of ['127.0.0.1', hostAddress()])
      for (const [name, port] of Object.entries({ ...ports, workerKubelet: workerPorts.kubelet }))
        expect(await listening(port, host), `${name} port ${host}:${port}`).toBe(false);
    await waitFor(() => hub.state.clusters.nodeReport('c1') === undefined, {
      timeout: 30_000,
      what: 'the node report gone',
    });
    expect((await api('GET', '/api/v1/projects/default/edges/c1')).status.cluster).toBeUndefined();
    const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
    expect(mounts).not.toContain(dir);
  }, 330_000);
});

function listening(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, host);
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
