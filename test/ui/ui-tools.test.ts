/**
 * The web UI's operator tools in Debian's Chromium (headless, playwright-core) against a real hub
 * and a real edge agent running busybox through the process driver: a workload's logs, a command
 * run in it, a link that opens its service through the hub's proxy, Resume for a rollout the
 * planner paused at its failure threshold, Delete for an object, events of a decommissioned edge
 * shown without a dead link, and no page wider than a 390 px phone screen.
 * OUTPOST_UPDATE_SCREENSHOTS=1 writes the screenshots to docs/screenshots/.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../../edge/agent.js';
import { startHub, type Hub } from '../../hub/hub.js';
import { adminApi, startProcessAgents, stopAgents } from '../fixtures/in-process-fleet.js';
import { tempDir, waitFor } from '../helpers.js';
import { freePort } from '../ports.js';
import { buildUi, collectErrors, launch, screenshot, screenshotsTo, signIn } from './browser.js';

let dir: string;
let hub: Hub | undefined;
let browser: BrowserContext | undefined;
let page: Page;
let errors: string[] = [];
const agents: EdgeAgent[] = [];
let port = 0;

const api = <T = any>(method: string, p: string, body?: unknown) => adminApi<T>(hub!, method, p, body);

const pod = (name: string, command: string[], containerPort?: number) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: {
    terminationGracePeriodSeconds: 1,
    containers: [{ name: 'main', image: 'busybox', command, ...(containerPort ? { ports: [{ containerPort }] } : {}) }],
  },
});
const workload = (name: string, manifest: unknown) => ({
  kind: 'Workload',
  metadata: { name },
  spec: { manifests: [manifest] },
});
/** On both edges, one at a time: a failure on the first pauses the rollout before the second. */
const placement = (name: string, workloads: string[]) => ({
  kind: 'Placement',
  metadata: { name },
  spec: { edgeSelector: { matchLabels: { region: 'eu' } }, workloads, rollout: { maxUnavailable: 1 } },
});

/** Widest thing on the page, in CSS pixels, against the viewport. */
const overflow = () =>
  page.evaluate(() => {
    const d = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } })
      .document.documentElement;
    return { scroll: d.scrollWidth, client: d.clientWidth };
  });

/** The outermost elements that stick out on the right, for the failure message. */
const wideElements = () =>
  page.evaluate(() => {
    const doc = (globalThis as any).document;
    const w = doc.documentElement.clientWidth;
    const out: string[] = [];
    for (const el of doc.querySelectorAll('body *')) {
      const r = el.getBoundingClientRect();
      if (r.right > w + 1 && !(el.parentElement && el.parentElement.getBoundingClientRect().right > w + 1))
        out.push(`${el.tagName.toLowerCase()}.${String(el.className)} right=${Math.round(r.right)}`);
    }
    return out.slice(0, 8);
  });

beforeAll(async () => {
  dir = tempDir('outpost-ui-tools-');
  screenshotsTo(path.join(dir, 'screenshots'));
  const uiDir = path.join(dir, 'ui-dist');
  buildUi(uiDir);
  process.env.OUTPOST_UI_DIR = uiDir;
  browser = await launch(path.join(dir, 'chromium-profile'));
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0', insecureHttp: true });
  port = await freePort();
  const serve = `mkdir -p www && echo tools-page > www/index.html && echo hello-from-tools && exec /bin/busybox httpd -f -p 127.0.0.1:${port} -h www`;
  await api('POST', '/api/v1/apply', {
    objects: [
      workload('tools', pod('tools', ['/bin/busybox', 'sh', '-c', serve], port)),
      workload('flaky', pod('flaky', ['/bin/busybox', 'sleep', '3600'])),
      workload('extra', pod('extra', ['/bin/busybox', 'sleep', '3600'])),
      // One edge only: the service binds a fixed port.
      { kind: 'Placement', metadata: { name: 'tools-eu' }, spec: { edges: ['shop-1'], workloads: ['tools'] } },
      placement('flaky-eu', ['flaky']),
      placement('extra-eu', ['extra']),
    ],
  });
  await startProcessAgents(hub, dir, ['shop-1', 'shop-2'], { region: 'eu' }, agents);
  await waitFor(
    async () => {
      const [t, f] = await Promise.all(
        ['tools-eu', 'flaky-eu'].map((n) => api('GET', `/api/v1/projects/default/placements/${n}`)),
      );
      return t.status.summary.ready === 1 && f.status.summary.ready === 2;
    },
    { timeout: 90_000, what: 'tools ready on shop-1, flaky on both edges' },
  );
  page = await browser.newPage();
  errors = collectErrors(page);
  await signIn(page, hub.url, hub.adminToken);
}, 120_000);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await stopAgents(agents);
  await hub?.close().catch(() => undefined);
  delete process.env.OUTPOST_UI_DIR;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('operator tools in the web UI', () => {
  it('shows a workload’s logs, runs a command in it and links to its service', async () => {
    await page.goto(hub!.url + '/edges/shop-1');
    await page.getByRole('heading', { name: 'Logs, exec and service' }).waitFor({ timeout: 20_000 });
    await page.getByRole('combobox', { name: 'Workload' }).selectOption('tools');
    await page.getByRole('button', { name: 'Show logs' }).click();
    await waitFor(async () => (await page.getByLabel('logs of tools').innerText()).includes('hello-from-tools'), {
      what: 'the logs of tools',
    });
    await page.getByLabel('Command').fill('/bin/busybox echo "hi there"');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.getByText('exit code 0').waitFor();
    expect(await page.getByLabel('command output').innerText()).toContain('hi there');
    await page.getByRole('button', { name: 'Service link' }).click();
    const link = page.getByRole('link', { name: `Open tools port ${port} (one-time link)` });
    await link.waitFor();
    await screenshot(page, 'edge-tools');
    const href = await link.getAttribute('href');
    const tab = await browser!.newPage();
    await tab.goto(new URL(href!, hub!.url).toString());
    await waitFor(async () => (await tab.content()).includes('tools-page'), { what: 'the service through the proxy' });
    await tab.close();
  });

  it('offers Resume for a rollout paused by its failure threshold', { timeout: 120_000 }, async () => {
    await api('POST', '/api/v1/apply', {
      objects: [
        workload('flaky', {
          ...pod('flaky', ['/bin/busybox', 'sh', '-c', 'echo broken; exit 3']),
          spec: { ...pod('flaky', ['/bin/busybox', 'sh', '-c', 'echo broken; exit 3']).spec, restartPolicy: 'Never' },
        }),
      ],
    });
    let last: unknown;
    await waitFor(
      async () => {
        last = (await api('GET', '/api/v1/projects/default/placements/flaky-eu')).status;
        // Paused at the threshold while an edge waits, or Failed once every edge failed: both resume.
        return ['Paused', 'Failed'].includes((last as { rollout?: { phase?: string } }).rollout?.phase ?? '');
      },
      { timeout: 60_000, what: 'flaky-eu stopped by its failure threshold' },
    ).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(last)}`);
    });
    await page.goto(hub!.url + '/placements/flaky-eu');
    const resume = page.getByRole('button', { name: 'Resume rollout (accept the failures)' });
    await resume.waitFor();
    expect(await page.getByRole('button', { name: 'Pause rollout' }).count()).toBe(0);
    await screenshot(page, 'placement-paused-by-failures');
    const answered = page.waitForResponse((r) => r.url().endsWith('/placements/flaky-eu/resume'));
    await resume.click();
    expect((await answered).status()).toBe(200);
  });

  it('a rollout held on an edge (a remote stop) names why and offers Pause, not a Resume that accepts failures', async () => {
    // A remote stop needs the workload running on the edge: beforeAll waited for the others only.
    await waitFor(
      async () => (await api('GET', '/api/v1/projects/default/placements/extra-eu')).status.summary.ready === 2,
      { timeout: 60_000, what: 'extra Ready on both edges' },
    );
    expect(
      (
        await fetch(`${hub!.url}/api/v1/edges/shop-1/actions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${hub!.adminToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ action: 'stop', workload: 'extra' }),
        })
      ).status,
    ).toBe(200);
    await waitFor(
      async () => (await api('GET', '/api/v1/projects/default/placements/extra-eu')).status.rollout?.counts?.held === 1,
      { timeout: 30_000, what: 'extra-eu held on shop-1' },
    );
    await page.goto(hub!.url + '/placements/extra-eu');
    // The rollout's reason (the placement's events may say it too).
    await page
      .locator('.rollout .reason')
      .filter({
        hasText: 'held on shop-1 (stopped by a remote action: `outpost edge action shop-1 start extra` runs it again)',
      })
      .waitFor();
    await page.getByText('1 held on the edge (paused on site or stopped)').waitFor();
    expect(await page.getByRole('button', { name: 'Pause rollout' }).count()).toBe(1);
    expect(await page.getByRole('button', { name: /Resume rollout/ }).count()).toBe(0);
  });

  it('deletes a placement from its page, after asking', async () => {
    await page.goto(hub!.url + '/placements/extra-eu');
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('Delete placement extra-eu?').waitFor();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: 'Placements' }).waitFor();
    const r = await fetch(`${hub!.url}/api/v1/projects/default/placements/extra-eu`, {
      headers: { authorization: `Bearer ${hub!.adminToken}` },
    });
    expect(r.status).toBe(404);
  });

  it('events of a decommissioned edge name it without a link that would 404', async () => {
    const join = await api<{ token: string }>('POST', '/api/v1/tokens/join', { project: 'default', uses: 1 });
    await api('POST', '/api/v1/enroll', { joinToken: join.token, name: 'shop-gone' });
    await api('POST', '/api/v1/projects/default/edges/shop-gone/decommission');
    await page.goto(hub!.url + '/');
    const events = page.getByRole('region', { name: 'Latest events' });
    await waitFor(async () => (await events.innerText()).includes('shop-gone (decommissioned)'), {
      what: 'the decommissioned edge in the events',
    });
    expect(await events.getByRole('link', { name: 'shop-gone' }).count()).toBe(0);
    // Objects that still exist keep their links.
    expect(await events.getByRole('link').count()).toBeGreaterThan(0);
  });

  it('no page is wider than a 390 px phone screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const p of [
      '/',
      '/edges',
      '/edges/shop-1',
      '/workloads',
      '/workloads/tools',
      '/placements',
      '/placements/tools-eu',
      '/tokens',
      '/replicas',
    ]) {
      await page.goto(hub!.url + p);
      await page.locator('h1').first().waitFor();
      await page.waitForTimeout(300);
      const o = await overflow();
      const wide = o.scroll > o.client ? await wideElements() : [];
      expect({ page: p, ...o, wide }).toEqual({ page: p, scroll: o.client, client: o.client, wide: [] });
      if (p === '/' || p === '/edges/shop-1') await screenshot(page, p === '/' ? 'mobile-overview' : 'mobile-edge');
    }
    expect(errors).toEqual([]);
  });
});
