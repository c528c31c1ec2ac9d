/**
 * A kill -9 of the edge agent in the middle of a cluster's creation (docs/clusters.md, "Resuming"):
 * the agent is a process of its own here (the kill must not take the test with it). The
 * components it started keep running without it; the next agent finds them by their pid files and
 * command lines (the same pids: nothing started twice), starts what is missing, and the cluster
 * becomes Ready. Then it is deleted, leaving nothing running. The cluster is of project `site` on a
 * global template whose artifacts were pushed in `default` (docs/clusters.md, "Global templates"):
 * the edge fetches them from the hub-wide scope.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterNodeReport } from '../core/cluster.js';
import { alive, strays } from '../edge/clusters/processes.js';
import { startHub, type Hub } from '../hub/hub.js';
import { tempDir, waitFor } from './helpers.js';
import { startEdgeProc, type Proc } from './procs.js';
import { nodePorts, realArtifactDir, removeNodeRemains } from './fixtures/cluster-artifacts.js';
import { runCli } from './fixtures/cli.js';
import { adminApi } from './fixtures/in-process-fleet.js';

describe('a cluster created across a kill -9 of its edge agent', () => {
  let dir: string;
  let hub: Hub;
  let edge: Proc | undefined;
  let join: string;
  const nodeDir = () => path.join(dir, 'c2', 'clusters', 'resume');
  const report = () => {
    const r = hub.state.clusters.nodeReport('c2');
    return r ? ClusterNodeReport.parse(JSON.parse(r.report)) : undefined;
  };
  const startEdge = async () =>
    (edge = await startEdgeProc(path.join(dir, 'c2'), [
      '--hub',
      hub.url,
      '--join-token',
      join,
      '--name',
      'c2',
      '--driver',
      'process',
    ]));

  beforeAll(async () => {
    dir = tempDir('outpost-clusters-resume-');
    const artifacts = realArtifactDir(path.join(dir, 'artifacts'));
    hub = await startHub({
      dataDir: path.join(dir, 'hub'),
      listen: '127.0.0.1:0',
      insecureHttp: true,
      scanner: { kind: 'none' },
    });
    const r = await runCli(['cluster', 'artifacts', 'push', artifacts, '--name', 'k8s', '--global', '-o', 'json'], {
      env: { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken },
    });
    if (r.code !== 0) throw new Error(`cluster artifacts push failed: ${r.stderr}`);
    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [JSON.parse(r.stdout), { kind: 'Project', metadata: { name: 'site' }, spec: {} }],
    });
    join = (await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', { project: 'site' })).token;
    await startEdge();
    await waitFor(async () => (await adminApi(hub, 'GET', '/api/v1/projects/site/edges/c2')).metadata, {
      what: 'edge c2 enrolled',
    });
  }, 900_000);

  afterAll(async () => {
    await edge?.kill('SIGKILL');
    await hub?.close();
    removeNodeRemains(dir);
  });

  it('resumes where the node was: the running components adopted, the rest started, Ready', async () => {
    const ports = await nodePorts();
    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'Cluster',
          metadata: { name: 'resume', project: 'site' },
          spec: { template: { name: 'k8s', version: '1', scope: 'Global' }, controlPlane: { edges: ['c2'] }, ports },
        },
      ],
    });
    // Mid-create: etcd healthy, the node not Ready yet.
    const before = await waitFor(
      () => {
        const r = report();
        return r?.components.etcd?.healthy && r.phase !== 'Ready' ? r : undefined;
      },
      { timeout: 600_000, interval: 100, what: 'etcd healthy on c2, the node not Ready yet' },
    );
    await edge!.kill('SIGKILL');
    const pids = Object.fromEntries(Object.entries(before.components).map(([name, c]) => [name, c.pid!] as const));
    // Without their agent, the components run on.
    for (const [name, pid] of Object.entries(pids))
      expect(alive(pid), `${name} (pid ${pid}) after the kill`).toBe(true);
    await startEdge();
    await waitFor(
      async () => (await adminApi(hub, 'GET', '/api/v1/projects/site/clusters/resume')).status.phase === 'Ready',
      {
        timeout: 600_000,
        interval: 2_000,
        what: 'cluster resume Ready after the agent came back',
      },
    );
    const after = report()!;
    // Found again, not started twice.
    for (const [name, pid] of Object.entries(pids)) {
      expect(after.components[name as keyof typeof after.components]?.pid, name).toBe(pid);
      expect(after.components[name as keyof typeof after.components]?.restarts, name).toBe(0);
    }
    expect(after.node?.ready).toBe(true);
  }, 1_260_000);

  it('is deleted leaving nothing running', async () => {
    await adminApi(hub, 'DELETE', '/api/v1/projects/site/clusters/resume');
    await waitFor(() => !fs.existsSync(nodeDir()), {
      timeout: 300_000,
      interval: 1_000,
      what: "the node's directory removed",
    });
    // (The agent's own command line names its data directory: only the node's count.)
    expect(strays(path.join(dir, 'c2', 'clusters'))).toEqual([]);
  }, 330_000);
});
