/**
 * A real single-node Kubernetes cluster made by the hub on an edge (docs/clusters.md), with the
 * real components of this machine (test/fixtures/cluster-artifacts.ts): the artifacts pushed and
 * signed through the CLI, a template and a Cluster applied, the edge agent (in-process: the
 * components are processes of their own either way) stages and verifies them, writes the PKI and
 * configs, starts containerd, etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
 * kubelet and reports; the hub shows the cluster Ready with its node and components. Through the
 * cluster's API (`kubectl`, with the admin kubeconfig the node wrote) the node is Ready and a
 * Deployment runs a real pod (its ReplicaSet made by the real controller-manager, the pod bound by
 * the real scheduler, run by containerd and runc, its network from the bridge CNI). Then the
 * Cluster is deleted: every component stopped, nothing of the node left running (processes and
 * ports checked), its directory gone.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { strays } from '../edge/clusters/processes.js';
import { tempDir, waitFor } from './helpers.js';
import { kubeBinary, nodePorts, podmanEnv, realArtifactDir, removeNodeRemains } from './fixtures/cluster-artifacts.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, startProcessAgents, stopAgents } from './fixtures/in-process-fleet.js';

const TEST_IMAGE = process.env.OUTPOST_TEST_IMAGE ?? 'localhost/outpost-busybox:latest';

describe('a real cluster at a site', () => {
  let dir: string;
  let hub: Hub;
  const agents: EdgeAgent[] = [];
  let kubectl: string;
  let ports: Record<string, number>;
  const nodeDir = () => path.join(dir, 'c1', 'clusters', 'site');
  const kube = (...args: string[]) =>
    execFileSync(kubectl, ['--kubeconfig', path.join(nodeDir(), 'etc', 'admin.kubeconfig'), ...args], {
      timeout: 60_000,
    }).toString();
  const status = async () => (await adminApi(hub, 'GET', '/api/v1/projects/default/clusters/site')).status;

  beforeAll(async () => {
    dir = tempDir('outpost-clusters-');
    kubectl = kubeBinary('kubectl');
    const artifacts = realArtifactDir(path.join(dir, 'artifacts'));
    hub = await startHub({
      dataDir: path.join(dir, 'hub'),
      listen: '127.0.0.1:0',
      insecureHttp: true,
      scanner: { kind: 'none' },
    });
    await startProcessAgents(hub, dir, ['c1'], { site: 'one' }, agents);
    const r = await runCli(['cluster', 'artifacts', 'push', artifacts, '--name', 'k8s', '-o', 'json'], {
      env: { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken },
    });
    if (r.code !== 0) throw new Error(`cluster artifacts push failed: ${r.stderr}`);
    const template = JSON.parse(r.stdout);
    expect(template.spec.kubernetesVersion).toMatch(/^v1\.\d+\.\d+$/);
    await adminApi(hub, 'POST', '/api/v1/apply', { objects: [template] });
    ports = await nodePorts();
  }, 900_000);

  afterAll(async () => {
    await stopAgents(agents);
    await hub?.close();
    // Whatever a failed run left of the node (a passing run left nothing: checked below).
    removeNodeRemains(dir);
  });

  it('creates a single-node cluster from a template: Ready on the hub, its node Ready in kubectl', async () => {
    await adminApi(hub, 'POST', '/api/v1/apply', {
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
    expect(st.summary).toBe('1/1 nodes Ready');
    expect(st.nodes[0]).toMatchObject({ edge: 'c1', role: 'control-plane', ready: true, phase: 'Ready' });
    expect(st.nodes[0].kubeletVersion).toMatch(/^v1\./);
    for (const c of ['containerd', 'etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet'])
      expect(st.components[c], c).toMatchObject({ running: true, healthy: true });
    // Each step is an event of the Cluster.
    const events = await adminApi<{ items: { reason: string; message: string }[] }>(
      hub,
      'GET',
      '/api/v1/projects/default/events?kind=Cluster&name=site',
    );
    expect(events.items.map((e) => e.reason)).toEqual(expect.arrayContaining(['Staged', 'Healthy', 'NodeReady']));
    const nodes = kube('get', 'nodes', '-o', 'json');
    const node = JSON.parse(nodes).items[0];
    expect(node.metadata.name).toBe('c1');
    expect(node.status.conditions.find((c: { type: string }) => c.type === 'Ready').status).toBe('True');
  }, 660_000);

  it('runs a Deployment through the cluster API: a ReplicaSet and a running pod', async () => {
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
    const manifest = path.join(dir, 'web.yaml');
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'default' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: {
              containers: [{ name: 'main', image: TEST_IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
            },
          },
        },
      }),
    );
    kube('apply', '-f', manifest);
    await waitFor(
      () => {
        const pods = JSON.parse(kube('get', 'pods', '-l', 'app=web', '-o', 'json')).items as {
          status: { phase: string; podIP?: string };
        }[];
        return pods.length === 1 && pods[0]!.status.phase === 'Running' && pods[0]!.status.podIP ? pods[0] : undefined;
      },
      { timeout: 300_000, interval: 2_000, what: 'the pod of Deployment web Running' },
    ).catch((err) => {
      throw new Error(`${(err as Error).message}\n${kube('get', 'pods,events', '-A', '-o', 'wide')}`);
    });
    const rs = JSON.parse(kube('get', 'replicasets', '-l', 'app=web', '-o', 'json')).items;
    expect(rs).toHaveLength(1);
    expect(rs[0].status.readyReplicas).toBe(1);
    const pod = JSON.parse(kube('get', 'pods', '-l', 'app=web', '-o', 'json')).items[0];
    expect(pod.spec.nodeName).toBe('c1');
    expect(pod.status.podIP).toMatch(/^10\.244\.0\./);
  }, 360_000);

  it('deletes the cluster: every component stopped, nothing left running, the host released', async () => {
    await adminApi(hub, 'DELETE', '/api/v1/projects/default/clusters/site');
    await waitFor(() => !fs.existsSync(nodeDir()), {
      timeout: 300_000,
      interval: 1_000,
      what: "the node's directory removed",
    });
    expect(strays(dir)).toEqual([]);
    for (const [name, port] of Object.entries(ports)) expect(await listening(port), `${name} port ${port}`).toBe(false);
    await waitFor(() => hub.state.clusters.nodeReport('c1') === undefined, {
      timeout: 30_000,
      what: 'the node report gone',
    });
    expect((await adminApi(hub, 'GET', '/api/v1/projects/default/edges/c1')).status.cluster).toBeUndefined();
    const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
    expect(mounts).not.toContain(dir);
  }, 330_000);
});

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
