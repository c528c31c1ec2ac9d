/**
 * Upgrading a real single-node cluster to another template version (docs/clusters.md,
 * "Upgrade"). The next release is the same pinned sources linked again with another
 * `gitVersion` (test/kube/build.sh RELEASE: a link, not a compile): different binaries, a different
 * version reported, the same code. Version 3 of the template carries a kube-scheduler that exits at
 * start (a test double): its health gate fails, the node rolls back to version 1's binaries (the
 * API server it had already swapped included) and says so, and does not try again. Version 2 then
 * upgrades it: the API server and the kubelet swapped, the node Ready again with the new kubelet
 * version. The cluster has a worker (a second kubelet on the same host): it is upgraded only once
 * the control plane runs the new version Ready (it never gets version 3, which the control plane
 * rolled back), one at a time (hub/clusters/upgrade-plan.ts). Then it is deleted, leaving nothing
 * running.
 */
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterNodeReport } from '../core/cluster.js';
import type { EdgeAgent } from '../edge/agent.js';
import { removeCgroupRoot } from '../edge/clusters/cgroups.js';
import { nodeCgroupRoot } from '../edge/clusters/configs.js';
import { strays } from '../edge/clusters/processes.js';
import { startHub, type Hub } from '../hub/hub.js';
import { tempDir, waitFor } from './helpers.js';
import { kubeBinary, nodePorts, realArtifactDir, removeNodeRemains } from './fixtures/cluster-artifacts.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, startProcessAgents, stopAgents } from './fixtures/in-process-fleet.js';
import { freePort } from './ports.js';

const NEXT = 'v1.33.13-outpost.1';

describe('a cluster upgraded to another template version, with a rollback', () => {
  let dir: string;
  let hub: Hub;
  const agents: EdgeAgent[] = [];
  let ports: Record<string, number>;
  let workerPorts: { kubelet: number; kubeletHealthz: number };
  /** The cluster's uid (its nodes' cgroup roots are named by it). */
  let uid = '';
  const nodeDir = () => path.join(dir, 'u1', 'clusters', 'up');
  const report = () => ClusterNodeReport.parse(JSON.parse(hub.state.clusters.nodeReport('u1')!.report));
  const workerReport = () => ClusterNodeReport.parse(JSON.parse(hub.state.clusters.nodeReport('u2')!.report));
  const status = async () => (await adminApi(hub, 'GET', '/api/v1/projects/default/clusters/up')).status;
  const push = async (artifacts: string, version: string) => {
    const r = await runCli(
      ['cluster', 'artifacts', 'push', artifacts, '--name', 'k8s', '--template-version', version, '-o', 'json'],
      { env: { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken } },
    );
    if (r.code !== 0) throw new Error(`cluster artifacts push failed: ${r.stderr}`);
    await adminApi(hub, 'POST', '/api/v1/apply', { objects: [JSON.parse(r.stdout)] });
  };
  const useVersion = (version: string) =>
    adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'Cluster',
          metadata: { name: 'up' },
          spec: {
            template: { name: 'k8s', version },
            controlPlane: { edges: ['u1'] },
            workers: { edges: ['u2'], ports: workerPorts },
            ports,
          },
        },
      ],
    });
  /** What the API server reports as its version (as the cluster's admin). */
  const apiServerVersion = () =>
    new Promise<string>((resolve, reject) => {
      const pki = (f: string) => fs.readFileSync(path.join(nodeDir(), 'pki', f));
      https
        .get(
          `https://127.0.0.1:${ports.apiServer}/version`,
          { ca: pki('ca.crt'), cert: pki('admin.crt'), key: pki('admin.key') },
          (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve((JSON.parse(body) as { gitVersion: string }).gitVersion));
          },
        )
        .on('error', reject);
    });

  beforeAll(async () => {
    dir = tempDir('outpost-clusters-upgrade-');
    const v1 = realArtifactDir(path.join(dir, 'v1'));
    // Version 2: the API server and the kubelet of the next release, the rest as version 1.
    const v2 = realArtifactDir(path.join(dir, 'v2'));
    for (const c of ['kube-apiserver', 'kubelet']) {
      fs.rmSync(path.join(v2, c));
      fs.symlinkSync(kubeBinary(c, NEXT), path.join(v2, c));
    }
    // Version 3: as version 2, with a kube-scheduler that exits at start.
    const v3 = realArtifactDir(path.join(dir, 'v3'));
    for (const c of ['kube-apiserver', 'kubelet']) {
      fs.rmSync(path.join(v3, c));
      fs.symlinkSync(kubeBinary(c, NEXT), path.join(v3, c));
    }
    fs.rmSync(path.join(v3, 'kube-scheduler'));
    fs.writeFileSync(
      path.join(v3, 'kube-scheduler'),
      '#!/bin/sh\necho "a broken scheduler (a test double)" >&2\nexit 3\n',
      {
        mode: 0o755,
      },
    );
    hub = await startHub({
      dataDir: path.join(dir, 'hub'),
      listen: '127.0.0.1:0',
      insecureHttp: true,
      scanner: { kind: 'none' },
    });
    await startProcessAgents(hub, dir, ['u1', 'u2'], { site: 'up' }, agents);
    await push(v1, '1');
    await push(v2, '2');
    await push(v3, '3');
    ports = await nodePorts();
    workerPorts = { kubelet: await freePort(), kubeletHealthz: await freePort() };
  }, 900_000);

  afterAll(async () => {
    await stopAgents(agents);
    await hub?.close();
    removeNodeRemains(dir);
    if (uid) {
      removeCgroupRoot(nodeCgroupRoot({ uid, role: 'control-plane' }, 'u1'));
      removeCgroupRoot(nodeCgroupRoot({ uid, role: 'worker' }, 'u2'));
    }
  });

  it('is created at version 1', async () => {
    await useVersion('1');
    await waitFor(async () => (await status()).phase === 'Ready', {
      timeout: 600_000,
      interval: 2_000,
      what: 'up Ready',
    });
    const st = await status();
    uid = (await adminApi(hub, 'GET', '/api/v1/projects/default/clusters/up')).metadata.uid;
    expect(st.summary).toBe('2/2 nodes Ready');
    for (const n of st.nodes) expect(n).toMatchObject({ kubeletVersion: 'v1.33.13', runs: 'k8s@1' });
  }, 660_000);

  it('rolls back an upgrade whose component fails its health gate, and says so', async () => {
    const before = report();
    await useVersion('3');
    const st = await waitFor(
      async () => {
        const s = await status();
        return s.nodes[0].phase === 'RolledBack' ? s : undefined;
      },
      { timeout: 600_000, interval: 1_000, what: 'the upgrade to version 3 rolled back' },
    );
    expect(st.phase).toBe('Degraded');
    expect(st.message).toContain('the upgrade to k8s@3 was rolled back to k8s@1');
    expect(st.message).toContain('kube-scheduler exited at start');
    expect(st.message).toContain('a broken scheduler');
    expect(st.nodes[0]).toMatchObject({ runs: 'k8s@1', ready: true, kubeletVersion: 'v1.33.13' });
    // The worker was never given version 3: the control plane did not run it.
    expect(workerReport().template).toBe('k8s@1');
    expect(st.nodes[1]).toMatchObject({ edge: 'u2', runs: 'k8s@1', phase: 'Ready' });
    // Version 1's binaries run again: the API server it had swapped included.
    expect(await apiServerVersion()).toBe('v1.33.13');
    // The restored components pass their checks again (the report that says RolledBack may come
    // before the next supervision pass has seen the restored scheduler healthy).
    const restored = ['kube-apiserver', 'kube-scheduler', 'kubelet', 'etcd'];
    const healthy = await waitFor(
      async () => {
        const s = await status();
        return restored.every((c) => s.components[c]?.running && s.components[c]?.healthy) ? s : undefined;
      },
      { timeout: 120_000, interval: 1_000, what: "version 1's components healthy again after the rollback" },
    );
    for (const c of restored) expect(healthy.components[c], c).toMatchObject({ running: true, healthy: true });
    // Not swapped at all: etcd and the kubelet kept running; the API server was swapped and put back.
    const after = report();
    expect(after.components.etcd?.pid).toBe(before.components.etcd?.pid);
    expect(after.components.kubelet?.pid).toBe(before.components.kubelet?.pid);
    expect(after.components['kube-apiserver']?.pid).not.toBe(before.components['kube-apiserver']?.pid);
    const events = await adminApi<{ items: { reason: string }[] }>(
      hub,
      'GET',
      '/api/v1/projects/default/events?kind=Cluster&name=up&limit=100',
    );
    expect(events.items.map((e) => e.reason)).toEqual(expect.arrayContaining(['Upgrading', 'Swapped', 'RolledBack']));
  }, 660_000);

  it('upgrades to version 2: the API server and kubelet swapped, Ready with the new kubelet', async () => {
    await useVersion('2');
    await waitFor(
      async () => {
        const s = await status();
        return (
          s.phase === 'Ready' &&
          s.nodes.every(
            (n: { kubeletVersion?: string; runs?: string }) => n.kubeletVersion === NEXT && n.runs === 'k8s@2',
          )
        );
      },
      { timeout: 600_000, interval: 2_000, what: `up Ready on k8s@2 with kubelet ${NEXT} on both nodes` },
    );
    // Control plane first: the worker's kubelet was swapped after the control plane was upgraded.
    const events = (
      await adminApi<{ items: { reason: string; message: string }[] }>(
        hub,
        'GET',
        '/api/v1/projects/default/events?kind=Cluster&name=up&limit=200',
      )
    ).items;
    const upgraded = events.findIndex((e) => e.reason === 'Upgraded' && e.message.startsWith('u1:'));
    const workerSwapped = events.findIndex((e) => e.reason === 'Swapped' && e.message.startsWith('u2:'));
    expect(upgraded).toBeGreaterThanOrEqual(0);
    expect(workerSwapped).toBeGreaterThanOrEqual(0);
    // Newest first: the control plane's Upgraded is older than the worker's Swapped.
    expect(upgraded).toBeGreaterThan(workerSwapped);
    expect(await apiServerVersion()).toBe(NEXT);
    // The artifacts of version 1 that version 2 does not use are gone from the node.
    const bins = fs.readdirSync(path.join(nodeDir(), 'bin'));
    expect(bins.filter((b) => b.startsWith('kube-apiserver-'))).toHaveLength(1);
  }, 660_000);

  it('is deleted leaving nothing running', async () => {
    await adminApi(hub, 'DELETE', '/api/v1/projects/default/clusters/up');
    await waitFor(() => !fs.existsSync(nodeDir()) && !fs.existsSync(path.join(dir, 'u2', 'clusters', 'up')), {
      timeout: 300_000,
      interval: 1_000,
      what: "the nodes' directories removed",
    });
    expect(strays(dir)).toEqual([]);
    for (const [edge, role] of [
      ['u1', 'control-plane'],
      ['u2', 'worker'],
    ] as const)
      expect(fs.existsSync(path.join('/sys/fs/cgroup/memory', nodeCgroupRoot({ uid, role }, edge))), edge).toBe(false);
  }, 330_000);
});
