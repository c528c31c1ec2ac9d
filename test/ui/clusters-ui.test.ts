/**
 * The Clusters page in Debian's Chromium against a real in-process hub (docs/ui.md, docs/clusters.md):
 * the list (phase, template, Kubernetes version, nodes Ready, endpoint) and a cluster's detail
 * (progress of its upgrade with the node and step under way, each node, the control plane's
 * health, its events), and the cluster named on its hosts' pages.
 *
 * A real cluster takes a minute and a built distribution to start (test/clusters.test.ts), so the
 * nodes here are seeded: the template's artifacts are test doubles pushed and signed through the
 * CLI and applied with the Clusters through the API (the hub's own rules reserve the hosts), the
 * edges are written as enrollment and heartbeats write them (as test/ui/scale-seed.ts does), and
 * the nodes' reports go through the hub's projection of an edge's report (hub/clusters/node-reports.ts
 * `projectNodeReport`, the same function the order engine calls), which also records each reported
 * step as an event of the Cluster. The status the page shows is then the hub's own computation.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterNodeReport } from '../../core/cluster.js';
import { API_VERSION, type Edge } from '../../core/resources.js';
import { projectNodeReport } from '../../hub/clusters/node-reports.js';
import { startHub, type Hub } from '../../hub/hub.js';
import { pushFakeArtifacts } from '../fixtures/cluster-artifacts.js';
import { adminApi } from '../fixtures/in-process-fleet.js';
import { tempDir, waitFor } from '../helpers.js';
import { buildUi, collectErrors, launch, screenshot, screenshotsTo, signIn } from './browser.js';

let dir: string;
let hub: Hub | undefined;
let browser: BrowserContext | undefined;
let page: Page;
let errors: string[] = [];

const api = <T = any>(method: string, p: string, body?: unknown) => adminApi<T>(hub!, method, p, body);
const apply = (...objects: unknown[]) => api('POST', '/api/v1/apply', { objects });

async function hasText(l: Locator, text: string): Promise<void> {
  await waitFor(async () => (await l.innerText({ timeout: 1_000 })).includes(text), {
    timeout: 15_000,
    what: `text "${text}" in ${l}`,
  });
}

/** Edges as enrollment writes them; `online` ones connected with a fresh heartbeat. */
function seedEdges(h: Hub, edges: { name: string; online: boolean }[]): void {
  const now = Date.now();
  h.state.transaction(() => {
    for (const e of edges) {
      h.objects.apply(
        {
          apiVersion: API_VERSION,
          kind: 'Edge',
          metadata: { name: e.name, project: 'default', labels: { site: 'store-17' }, annotations: {} },
          spec: { unschedulable: false },
        } as Edge,
        { update: false, actor: 'enrollment' },
      );
      h.state.edges.enroll({ name: e.name, project: 'default', approved: true, at: now - 3_600_000 });
      if (!e.online) continue;
      h.state.edges.connected(e.name, {
        at: now - 600_000,
        agentVersion: '0.1.0',
        remoteAddress: '10.0.0.1',
        replica: h.replicaId,
        connection: `c-${e.name}`,
      });
      h.state.edges.touch([[e.name, now]]);
    }
  });
}

/** What a node reports of itself, through the hub's projection of an edge's report. */
function report(h: Hub, edge: string, r: Record<string, unknown>): void {
  const parsed = ClusterNodeReport.parse({ at: Date.now(), ...r });
  h.state.transaction(() => {
    if (!projectNodeReport(h.state, edge, parsed, () => undefined))
      throw new Error(`the hub dropped ${edge}'s node report (is the edge reserved for ${parsed.cluster}?)`);
  });
}

beforeAll(async () => {
  dir = tempDir('outpost-clusters-ui-');
  screenshotsTo(path.join(dir, 'screenshots'));
  const uiDir = path.join(dir, 'ui-dist');
  buildUi(uiDir);
  process.env.OUTPOST_UI_DIR = uiDir;
  browser = await launch(path.join(dir, 'chromium-profile'));
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    scanner: { kind: 'none' },
  });
  const { template: v1 } = await pushFakeArtifacts(hub, path.join(dir, 'artifacts'), { name: 'small' });
  const v2 = { ...v1, spec: { ...v1.spec, version: '2', kubelet: { maxPods: 100 } } };
  await apply(v1, v2);

  seedEdges(hub, [
    { name: 'store-17-a', online: true },
    { name: 'store-17-b', online: true },
    { name: 'store-17-c', online: false },
    { name: 'lab-1', online: true },
  ]);
  const cluster = (name: string, version: string, cp: string, workers: string[] = []) => ({
    apiVersion: API_VERSION,
    kind: 'Cluster',
    metadata: { name },
    spec: {
      template: { name: 'small', version },
      controlPlane: { edges: [cp] },
      ...(workers.length ? { workers: { edges: workers } } : {}),
    },
  });
  await apply(cluster('store-17', '1', 'store-17-a', ['store-17-b', 'store-17-c']), cluster('lab', '1', 'lab-1'));
  // Then upgraded to version 2: the control plane runs it, the first worker swaps its kubelet.
  await apply(cluster('store-17', '2', 'store-17-a', ['store-17-b', 'store-17-c']));
  const uid = async (name: string) =>
    (await api('GET', `/api/v1/projects/default/clusters/${name}`)).metadata.uid as string;
  const store = await uid('store-17');
  const t0 = Date.now() - 120_000;
  const healthy = { running: true, healthy: true, restarts: 0 };
  report(hub, 'store-17-a', {
    cluster: 'store-17',
    uid: store,
    role: 'control-plane',
    template: 'small@2',
    runs: 'small@2',
    phase: 'Ready',
    step: 'supervise',
    address: '10.0.0.17',
    components: {
      containerd: healthy,
      etcd: healthy,
      'kube-apiserver': healthy,
      'kube-controller-manager': healthy,
      'kube-scheduler': {
        running: true,
        healthy: false,
        restarts: 2,
        message: 'GET https://127.0.0.1:10259/healthz: connection refused',
      },
      kubelet: healthy,
    },
    node: { ready: true, kubeletVersion: 'v1.33.13-outpost.1' },
    events: [
      { at: t0, step: 'Staged', message: 'artifacts of small@2 verified and installed' },
      { at: t0 + 1000, step: 'Upgraded', message: 'runs small@2: kube-apiserver, kubelet swapped' },
    ],
  });
  report(hub, 'store-17-b', {
    cluster: 'store-17',
    uid: store,
    role: 'worker',
    template: 'small@2',
    runs: 'small@1',
    phase: 'Upgrading',
    step: 'swap kubelet',
    message: 'waiting for the kubelet health gate',
    components: { containerd: healthy, kubelet: { running: true, healthy: false, restarts: 0 } },
    node: { ready: false, kubeletVersion: 'v1.33.13', reason: 'KubeletNotReady: PLEG is not healthy' },
    events: [{ at: t0 + 2000, step: 'Upgrading', message: 'swapping kubelet to small@2' }],
  });
  report(hub, 'store-17-c', {
    cluster: 'store-17',
    uid: store,
    role: 'worker',
    template: 'small@1',
    runs: 'small@1',
    phase: 'Ready',
    step: 'supervise',
    node: { ready: true, kubeletVersion: 'v1.33.13' },
  });
  report(hub, 'lab-1', {
    cluster: 'lab',
    uid: await uid('lab'),
    role: 'control-plane',
    template: 'small@1',
    phase: 'Starting',
    step: 'start kube-apiserver',
    components: { containerd: healthy, etcd: healthy },
  });

  const ctx = browser;
  page = ctx.pages()[0] ?? (await ctx.newPage());
  errors = collectErrors(page);
  await signIn(page, hub.url, hub.adminToken);
}, 180_000);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await hub?.close().catch(() => undefined);
  delete process.env.OUTPOST_UI_DIR;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('Clusters page', () => {
  it('lists the clusters with phase, template, version, nodes Ready and the endpoint through the hub', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Clusters' }).click();
    await page.getByRole('heading', { name: 'Clusters', level: 1 }).waitFor();
    const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'store-17' }) });
    await hasText(row, 'Upgrading');
    const text = await row.innerText();
    expect(text).toContain('small@2');
    expect(text).toContain('v1.33.13');
    expect(text).toContain('1/3');
    expect(text).toContain(`${hub!.url}/api/v1/edges/store-17-a/kube`);
    const lab = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'lab' }) });
    await hasText(lab, 'Provisioning');
    expect(await lab.innerText()).toContain('0/1');
    await screenshot(page, 'clusters');
  });

  it("shows a cluster's upgrade under way, its nodes, its control plane's health and its events", async () => {
    await page.getByRole('link', { name: 'store-17', exact: true }).click();
    await page.getByRole('heading', { name: 'Cluster store-17' }).waitFor();
    // Progress: the phase, how many nodes run the new version, and the node and step under way.
    const progress = page.getByRole('region', { name: 'Progress' });
    await hasText(progress, '1/3 nodes Ready');
    await hasText(progress, '1/3 nodes run small@2');
    const busy = page.getByRole('list', { name: 'Nodes under way' });
    await hasText(busy, 'store-17-b (worker): Upgrading step swap kubelet');
    await hasText(busy, 'runs small@1');
    await hasText(busy, 'waiting for the kubelet health gate');
    // store-17-c is Ready but still on version 1: the upgrade has yet to reach it.
    await hasText(busy, 'store-17-c (worker): Ready step supervise · runs small@1 · not on small@2 yet');
    expect(await busy.innerText()).not.toContain('store-17-a');

    const nodes = page.getByRole('table', { name: 'Nodes' });
    const node = (edge: string) => nodes.getByRole('row').filter({ has: page.getByRole('rowheader', { name: edge }) });
    await hasText(node('store-17-a'), 'control-plane');
    const a = await node('store-17-a').innerText();
    expect(a).toMatch(/Ready\s+supervise/);
    expect(a).toContain('v1.33.13-outpost.1');
    const b = await node('store-17-b').innerText();
    expect(b).toContain('worker');
    expect(b).toContain('Upgrading');
    expect(b).toContain('KubeletNotReady: PLEG is not healthy');
    // Ready no, the edge online yes.
    expect(b).toMatch(/\bno\b[\s\S]*\byes\b/);
    // store-17-c's edge is offline.
    expect(await node('store-17-c').innerText()).toMatch(/\byes\b[\s\S]*\bno\s*$/);

    const health = page.getByRole('table', { name: 'Components' });
    const comp = (c: string) => health.getByRole('row').filter({ has: page.getByRole('rowheader', { name: c }) });
    await hasText(comp('etcd /health'), 'Healthy');
    await hasText(comp('kube-apiserver /readyz'), 'Healthy');
    await hasText(comp('kube-controller-manager /healthz'), 'Healthy');
    const sched = await comp('kube-scheduler /healthz').innerText();
    expect(sched).toContain('Unhealthy');
    expect(sched).toContain('2');
    expect(sched).toContain('connection refused');

    const events = page.getByRole('region', { name: 'Events of this cluster' });
    await hasText(events, 'from small@1 to small@2');
    await hasText(events, 'store-17-b: swapping kubelet to small@2');
    await hasText(events, 'store-17-a: runs small@2: kube-apiserver, kubelet swapped');
    await screenshot(page, 'cluster');
  });

  it("names the cluster on its hosts' pages, linked to it", async () => {
    await page.goto(`${hub!.url}/edges/store-17-b`);
    await page.getByRole('heading', { name: 'store-17-b' }).first().waitFor();
    const link = page.getByRole('link', { name: 'store-17', exact: true });
    await link.waitFor();
    expect(await link.locator('xpath=..').innerText()).toBe('store-17 (worker)');
    await link.click();
    await page.getByRole('heading', { name: 'Cluster store-17' }).waitFor();
  });

  it('shows a cluster being provisioned with the step its control plane is at', async () => {
    await page.goto(`${hub!.url}/clusters/lab`);
    await page.getByRole('heading', { name: 'Cluster lab' }).waitFor();
    const busy = page.getByRole('list', { name: 'Nodes under way' });
    await hasText(busy, 'lab-1 (control-plane): Starting step start kube-apiserver');
    const health = page.getByRole('table', { name: 'Components' });
    await hasText(
      health.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'etcd /health' }) }),
      'Healthy',
    );
    await hasText(
      health.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'kube-scheduler /healthz' }) }),
      'Pending',
    );
    expect(errors).toEqual([]);
  });

  it('is no wider than a 390 px phone screen (tables scroll inside their frame)', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const p of ['/clusters', '/clusters/store-17']) {
      await page.goto(hub!.url + p);
      await page.getByRole('table').first().waitFor();
      const o = await page.evaluate(() => {
        const d = (
          globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }
        ).document.documentElement;
        return { scroll: d.scrollWidth, client: d.clientWidth };
      });
      expect({ page: p, scroll: o.scroll }).toEqual({ page: p, scroll: o.client });
    }
    await page.setViewportSize({ width: 1280, height: 860 });
    expect(errors).toEqual([]);
  });
});
