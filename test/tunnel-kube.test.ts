/**
 * The kube tunnel: an edge running the kubernetes driver against a real kube-apiserver
 * (test/kube/harness.ts), a TLS hub, and Debian's kubectl using the kubeconfig from `outpost edge
 * kubeconfig` to reach the edge's cluster through the hub with the user's own token.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import { HubClient } from '../cli/client.js';
import { startHub, type Hub } from '../hub/hub.js';
import { tempDir, waitFor } from './helpers.js';
import { kubectlBinary, startKubeApiServer, type KubeApiServer } from './kube/harness.js';
import { cli } from './procs.js';

const run = promisify(execFile);
let dir: string;
let kube: KubeApiServer;
let hub: Hub;
let edge: EdgeAgent;
let admin: HubClient;

async function kubeconfig(token: string, file: string): Promise<string> {
  const r = await cli(['edge', 'kubeconfig', 'site-k'], {
    OUTPOST_HUB: hub.url,
    OUTPOST_TOKEN: token,
    OUTPOST_CONFIG: path.join(dir, 'none.json'),
  });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  fs.writeFileSync(file, r.stdout, { mode: 0o600 });
  return r.stdout;
}

async function kubectl(kc: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(kubectlBinary(), ['--kubeconfig', kc, ...args], { timeout: 30_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

beforeAll(async () => {
  dir = tempDir();
  kube = await startKubeApiServer();
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0' });
  admin = new HubClient({ hub: hub.url, token: hub.adminToken, ca: hub.caPem });
  const join = await admin.post<{ token: string }>('/api/v1/tokens/join', { labels: {} });
  edge = await startEdgeAgent({
    dataDir: path.join(dir, 'edge'),
    hub: hub.url,
    joinToken: join.token,
    name: 'site-k',
    driver: 'kubernetes',
    kubeconfig: kube.kubeconfig,
    heartbeatMs: 500,
  });
  await waitFor(() => hub.sync.connection('site-k' as never), { what: 'edge connected' });
}, 180_000);

afterAll(async () => {
  await edge?.close();
  await hub?.close();
  await kube?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('kube tunnel (kubectl through the hub)', () => {
  it('kubectl gets objects of the edge cluster with the kubeconfig from `outpost edge kubeconfig`', async () => {
    const kc = path.join(dir, 'admin.yaml');
    const text = await kubeconfig(hub.adminToken, kc);
    expect(text).toContain(`server: ${hub.url}/api/v1/edges/site-k/kube`);
    expect(text).toContain('certificate-authority-data:');
    const ns = await kubectl(kc, 'get', 'namespaces', '-o', 'name');
    expect(ns.stderr).toBe('');
    expect(ns.stdout.split('\n')).toEqual(expect.arrayContaining(['namespace/default', 'namespace/kube-system']));
    const table = await kubectl(kc, 'get', 'namespaces');
    expect(table.stdout).toMatch(/^NAME\s+STATUS\s+AGE/);
    expect(table.stdout).toMatch(/kube-public\s+Active/);
  });

  it('a viewer may read but not change the cluster, and the request never reaches it', async () => {
    const viewer = (await admin.post<{ token: string }>('/api/v1/tokens/api', { role: 'viewer', project: 'default' }))
      .token;
    const kc = path.join(dir, 'viewer.yaml');
    await kubeconfig(viewer, kc);
    expect((await kubectl(kc, 'get', 'namespace', 'kube-public', '-o', 'name')).stdout.trim()).toBe(
      'namespace/kube-public',
    );
    const del = await kubectl(kc, 'delete', 'namespace', 'kube-public');
    expect(del.code).not.toBe(0);
    expect(del.stderr).toMatch(/viewer token may not use kube on edge site-k|Forbidden|forbidden/);
    expect((await kubectl(kube.kubeconfig, 'get', 'namespace', 'kube-public', '-o', 'name')).stdout.trim()).toBe(
      'namespace/kube-public',
    );
  });

  it('an offline edge answers 503 at once', async () => {
    await edge.sync.stop();
    await waitFor(() => !hub.sync.connection('site-k' as never), { what: 'hub to see the edge gone' });
    const kc = path.join(dir, 'admin.yaml');
    const r = await kubectl(kc, 'get', 'namespaces');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/edge site-k is offline since/);
  });
});
