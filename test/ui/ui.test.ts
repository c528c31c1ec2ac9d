/**
 * The web UI in Debian's Chromium against a real hub (in-process, plain HTTP on loopback, approval
 * required) with real edge agents running busybox through the process driver: sign in, the fleet
 * reaching READY live, approving a pending edge, the editor refusing an invalid change, a diff
 * between revisions and a rollback, pausing a rollout, a viewer seeing no buttons, and the banner
 * when the hub goes away. Screenshots of the main pages: OUTPOST_UPDATE_SCREENSHOTS=1 writes them
 * to docs/screenshots/.
 *
 * Chromium missing is a failure, not a skip: CI must have it (build/setup.sh installs it).
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../../edge/agent.js';
import type { BlobDigest } from '../../core/blobs.js';
import { EGRESS_ANNOTATION } from '../../core/data.js';
import { startHub, type Hub } from '../../hub/hub.js';
import { adminApi, startProcessAgent, stopAgents } from '../fixtures/in-process-fleet.js';
import { tempDir, waitFor } from '../helpers.js';
import { freePort } from '../ports.js';
import { buildUi, collectErrors, launch, screenshot, screenshotsTo } from './browser.js';
import { seedEdgeExtras } from './edge-extras.js';

let dir: string;
let hub: Hub | undefined;
let hubClosed = false;
let browser: BrowserContext | undefined;
let page: Page;
let errors: string[] = [];
const agents: EdgeAgent[] = [];

const api = <T = any>(method: string, p: string, body?: unknown) => adminApi<T>(hub!, method, p, body);

const workload = (greeting: string) => ({
  apiVersion: 'outpost.dev/v1alpha1',
  kind: 'Workload',
  metadata: { name: 'hello', project: 'default' },
  spec: {
    manifests: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'hello' },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: ['/bin/busybox', 'sleep', '3600'],
              env: [{ name: 'GREETING', value: greeting }],
            },
          ],
        },
      },
    ],
  },
});

async function startEdge(name: string, joinToken: string): Promise<EdgeAgent> {
  const a = await startProcessAgent(hub!, dir, name, joinToken);
  agents.push(a);
  return a;
}

/** Posts to an edge's local operator API (the unix socket a technician's `outpost edge local` uses). */
function localIntent(agent: EdgeAgent, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(
      {
        socketPath: agent.socketPath,
        path: '/intents',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** Waits until the locator's text contains `text` (Playwright's own expect is not in playwright-core). */
async function hasText(l: Locator, text: string): Promise<void> {
  await waitFor(async () => (await l.innerText({ timeout: 1_000 })).includes(text), {
    timeout: 15_000,
    what: `text "${text}" in ${l}`,
  });
}

async function hasCount(l: Locator, n: number): Promise<void> {
  await waitFor(async () => (await l.count()) === n, { timeout: 15_000, what: `${n} of ${l}` });
}

/** Text of the focused element. */
const focused = () =>
  page.evaluate(() =>
    (
      globalThis as unknown as { document: { activeElement: { textContent: string | null } | null } }
    ).document.activeElement?.textContent?.trim(),
  );

const placementStatus = async () => (await api('GET', '/api/v1/projects/default/placements/hello-eu')).status;

beforeAll(async () => {
  dir = tempDir('outpost-ui-test-');
  screenshotsTo(path.join(dir, 'screenshots'));
  const uiDir = path.join(dir, 'ui-dist');
  buildUi(uiDir);
  process.env.OUTPOST_UI_DIR = uiDir;
  browser = await launch(path.join(dir, 'chromium-profile'));
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    requireApproval: true,
    // `agent push` signs only scanned binaries: the suite's stand-in release is not worth a clamd.
    scanner: { kind: 'none' },
  });
  const join = await api<{ token: string }>('POST', '/api/v1/tokens/join', {
    project: 'default',
    labels: { region: 'eu' },
    uses: 2,
  });
  await api('POST', '/api/v1/apply', {
    objects: [
      workload('v1'),
      {
        kind: 'Placement',
        metadata: { name: 'hello-eu' },
        spec: { edgeSelector: { matchLabels: { region: 'eu' } }, workloads: ['hello'] },
      },
    ],
  });
  await startEdge('shop-berlin', join.token);
  await startEdge('shop-paris', join.token);
  // One edge approved before the browser arrives; the other waits for the click in the UI.
  await api('POST', '/api/v1/projects/default/edges/shop-berlin/approve');
  page = await browser.newPage();
  errors = collectErrors(page);
}, 90_000);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  // Workloads outlive their agent by design: stop reconciling, then remove them on each edge.
  await stopAgents(agents);
  if (!hubClosed) await hub?.close().catch(() => undefined);
  delete process.env.OUTPOST_UI_DIR;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('web UI in Chromium', () => {
  it('signs in with an API token and shows the fleet reaching READY', async () => {
    await page.goto(hub!.url + '/');
    await page.getByLabel('API token').waitFor();
    await screenshot(page, 'sign-in');
    await page.getByLabel('API token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The hub does not accept this token').waitFor();
    await page.getByLabel('API token').fill(hub!.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Fleet overview' }).waitFor();
    // The page's own global, evaluated in the browser.
    expect(
      await page.evaluate(() =>
        (globalThis as unknown as { sessionStorage: { getItem(k: string): string | null } }).sessionStorage.getItem(
          'outpost.token',
        ),
      ),
    ).toBe(hub!.adminToken);
    // Live: the page was loaded before the edge reported; READY comes in without a reload.
    await page.getByRole('progressbar', { name: 'placement hello-eu: 1 of 1 ready' }).waitFor({ timeout: 30_000 });
    await hasText(page.getByRole('link', { name: /pending approval/ }), '1');
    await hasText(page.getByRole('link', { name: /edges online/ }), '1');
    await page.getByText('Connected', { exact: true }).first().waitFor();
    await screenshot(page, 'overview');
  });

  it('approves a pending edge from the edges table and the placement goes to READY 2/2 live', async () => {
    // Keyboard only: the skip link comes first, the main navigation follows, Enter follows a link,
    // and focus lands on the new page's heading.
    await page.reload();
    await page.getByRole('heading', { name: 'Fleet overview' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to content');
    for (let i = 0; i < 6 && (await focused()) !== 'Edges'; i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe('Edges');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Edges', exact: true }).waitFor();
    await waitFor(
      async () =>
        (await focused()) === 'Edges' &&
        (await page.evaluate(
          () =>
            (globalThis as unknown as { document: { activeElement: { tagName: string } } }).document.activeElement
              .tagName,
        )) === 'H1',
      { what: 'focus on the Edges heading' },
    );
    const row = page.getByRole('row', { name: /shop-paris/ });
    await row.getByText('Pending', { exact: true }).waitFor();
    await screenshot(page, 'edges');
    await row.getByRole('button', { name: 'Approve' }).click();
    await row.getByRole('button', { name: 'Approve' }).click(); // the in-place confirmation
    await row.getByText('Online', { exact: true }).waitFor({ timeout: 20_000 });
    await waitFor(async () => (await placementStatus()).summary.ready === 2, {
      timeout: 30_000,
      what: 'both edges ready',
    });
    // Server-side filters, reflected in the URL.
    await page.getByLabel('Name contains').fill('berlin');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/q=berlin/);
    await hasCount(page.getByRole('row', { name: /shop-paris/ }), 0);
    await hasCount(page.getByRole('row', { name: /shop-berlin/ }), 1);
  });

  it('shows an edge with inventory, workloads, its agent release history, DataObjects, staged images, on-site overrides (time and origin), connection history and the AgentUpgrade events about it', async () => {
    agents[0] = await seedEdgeExtras(hub!, dir, agents[0]!);
    const berlin = agents[0]!;
    expect(
      await localIntent(berlin, {
        workload: 'hello',
        action: 'override',
        set: { 'Pod/hello:spec.containers.0.env.0.value': 'from-site' },
        origin: 'local:maria',
      }),
    ).toBe(200);
    await page.goto(hub!.url + '/edges/shop-berlin');
    await page.getByRole('heading', { name: /Edge shop-berlin/ }).waitFor();
    await page.getByText('local:maria').waitFor({ timeout: 20_000 });
    await page.getByText('Pod/hello:spec.containers.0.env.0.value', { exact: true }).waitFor();
    await page.getByRole('heading', { name: 'Inventory' }).waitFor();
    await page.locator('dd').getByText('process', { exact: true }).waitFor();
    // Hardware facts from /proc and /sys, and the labels placements can select on (docs/inventory.md).
    await page.locator('dt').getByText('Disks', { exact: true }).waitFor();
    await page.locator('dt').getByText('CPU model', { exact: true }).waitFor();
    await page.getByText('inventory.outpost.dev/runtime.process=true', { exact: true }).waitFor();
    await page.getByRole('heading', { name: 'Connection history' }).waitFor();
    // The hub replica its connection is on (a SQLite hub is its own only one), and in its history.
    const host = new URL(hub!.url).host;
    await hasText(page.locator('dt:has-text("Served by") + dd'), host);
    await page.getByRole('columnheader', { name: 'Hub replica' }).waitFor();
    await page.getByRole('columnheader', { name: 'Why it ended' }).waitFor();
    // Files its workloads exported (docs/data.md): none here, and the page says how they come.
    await page.getByRole('heading', { name: 'Exported files' }).waitFor();
    await page
      .getByText(/No exported files yet \(a workload exports with the data\.outpost\.dev\/egress annotation\)/)
      .waitFor();
    await page.getByRole('row', { name: /hello hello-eu Ready/ }).waitFor();
    // The release it switched to and rolled back: who ordered it, and why, ending with the new
    // binary's last lines on stderr.
    await page.getByRole('heading', { name: 'Agent releases' }).waitFor();
    const release = page.getByRole('row', { name: /9\.9\.7/ });
    await hasText(release, 'RolledBack');
    await release.getByRole('link', { name: 'agent-9-9-7' }).waitFor();
    await hasText(release, 'release 9.9.7: it exited (code 4) before it connected and reconciled');
    await hasText(release, '9.9.7 trial line 12: cannot start');
    // The DataObjects it holds and the images it staged.
    await hasText(page.getByRole('row', { name: /^prices/ }), 'Delivered v1');
    const image = page.getByRole('row', { name: /default\/team\/app/ });
    await hasText(image, 'Skipped');
    await hasText(image, 'the process driver runs no images');
    // Its events with the AgentUpgrade's about it, each naming its kind.
    const events = page.getByRole('region', { name: 'Events of this edge and its agent upgrades' });
    await hasText(events, 'AgentUpgrade agent-9-9-7: edge shop-berlin ordered to switch to 9.9.7');
    await hasText(events, 'AgentUpgrade agent-9-9-7: edge shop-berlin rolled back 9.9.7: release 9.9.7');
    await screenshot(page, 'edge-detail');
    // The upgrade's page says RolledBack once, then why.
    await page.goto(hub!.url + '/agentupgrades/agent-9-9-7');
    const row = page.getByRole('row', { name: /shop-berlin/ });
    await hasText(row, 'release 9.9.7: it exited (code 4)');
    expect((await row.innerText()).replace(/\s+/g, ' ')).toMatch(
      /^shop-berlin RolledBack release 9\.9\.7: it exited \(code 4\)/,
    );
    // Fleet-wide: the edges table names what is held on site, and filters on it.
    await page.goto(hub!.url + '/edges');
    await page.getByRole('columnheader', { name: 'Local' }).waitFor();
    await page.getByRole('row', { name: /shop-berlin .*hello: override/ }).waitFor({ timeout: 20_000 });
    await page.getByLabel('Held on site').check();
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/local=true/);
    await page.getByText(/1 match the filter/).waitFor();
    await hasCount(page.getByRole('row', { name: /shop-paris/ }), 0);
    await screenshot(page, 'edges-held-on-site');
  });

  it('refuses an invalid edit with the field named, then diffs two revisions and rolls back', async () => {
    await api('PUT', '/api/v1/projects/default/workloads/hello', workload('v2'));
    await page.goto(hub!.url + '/workloads/hello');
    await page.getByText('revision #2').waitFor();

    await page.getByRole('button', { name: 'Edit' }).click();
    const editor = page.getByLabel('Workload hello (YAML)');
    const original = await editor.inputValue();
    await editor.fill(original + '\n  bad: [');
    await page.getByText(/YAML error: YAML document 1/).waitFor();
    expect(await page.getByRole('button', { name: 'Validate and apply' }).isDisabled()).toBe(true);
    await editor.fill(original.replace('- apiVersion: v1', '- apiVersion: ""'));
    await page.getByText('YAML is well-formed: Workload hello').waitFor();
    await page.getByRole('button', { name: 'Validate and apply' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'nothing was changed' });
    await hasText(alert, 'spec.manifests[0].apiVersion');
    await page.getByRole('button', { name: 'Review changes' }).click();
    await screenshot(page, 'workload-editor');
    expect((await api('GET', '/api/v1/projects/default/workloads/hello')).status.revision).toBe(2);
    await page.getByRole('button', { name: 'Cancel' }).click();

    const diff = page.getByRole('region', { name: 'changes from revision 1 to 2' });
    await hasText(diff, 'value: v1');
    await hasText(diff, 'value: v2');
    await page.getByRole('button', { name: 'Roll back to #1' }).click();
    await page.getByRole('button', { name: 'Roll back', exact: true }).click();
    await page.getByText('revision #3').waitFor({ timeout: 10_000 });
    const w = await api('GET', '/api/v1/projects/default/workloads/hello');
    expect(w.spec.manifests[0].spec.containers[0].env[0].value).toBe('v1');
    await hasText(page.getByLabel('manifests of hello'), 'value: v1');
    await screenshot(page, 'workload');
  });

  it('pauses a rollout from the placement page', async () => {
    await page.goto(hub!.url + '/placements/hello-eu');
    await page.getByRole('heading', { name: 'Placement hello-eu' }).waitFor();
    await page.getByRole('progressbar', { name: 'placement hello-eu: 2 of 2 ready' }).waitFor({ timeout: 30_000 });
    await page.getByRole('row', { name: /shop-paris/ }).waitFor();
    await page.getByRole('button', { name: 'Pause rollout' }).click();
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await page.getByRole('button', { name: 'Resume rollout' }).waitFor();
    expect((await api('GET', '/api/v1/projects/default/placements/hello-eu')).spec.rollout.paused).toBe(true);
    await page.getByText('Paused', { exact: true }).first().waitFor();
    await screenshot(page, 'placement');
  });

  it('shows a viewer no button that would fail', async () => {
    const viewer = await api<{ token: string }>('POST', '/api/v1/tokens/api', { role: 'viewer', project: 'default' });
    const vp = await browser!.newPage();
    const vErrors = collectErrors(vp);
    try {
      await vp.goto(hub!.url + '/placements/hello-eu');
      await vp.getByLabel('API token').fill(viewer.token);
      await vp.getByRole('button', { name: 'Sign in' }).click();
      await vp.getByRole('heading', { name: 'Placement hello-eu' }).waitFor();
      await vp.getByText('viewer (read-only)').waitFor();
      await vp.getByRole('heading', { name: 'Matched edges' }).waitFor();
      const buttons = await vp.getByRole('button').allTextContents();
      expect(buttons.filter((b) => /Pause|Resume|Edit|Approve|Roll back|Drain|Clear/.test(b))).toEqual([]);
      await vp.goto(hub!.url + '/workloads/hello');
      await vp.getByRole('heading', { name: 'Revisions', exact: true }).waitFor();
      expect((await vp.getByRole('button').allTextContents()).filter((b) => /Edit|Roll back/.test(b))).toEqual([]);
      expect(vErrors).toEqual([]);
    } finally {
      await vp.close();
    }
  });

  it('lets an admin list tokens, create one (shown once) and revoke another on the Tokens page', async () => {
    const viewer = await api<{ token: string; id: string }>('POST', '/api/v1/tokens/api', {
      role: 'viewer',
      project: 'default',
      description: 'kiosk in the lobby',
    });
    await page.goto(hub!.url + '/tokens');
    await page.getByRole('heading', { name: 'Tokens', exact: true }).waitFor();
    const row = page.getByRole('row', { name: new RegExp(viewer.id) });
    await hasText(row, 'kiosk in the lobby');
    await hasText(row, 'Valid');

    await page.getByLabel('Labels (bind the edge)').fill('region=eu,site=lyon');
    await page.getByLabel('Valid for').fill('2h');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const shown = page.locator('.created-token code');
    await waitFor(
      async () =>
        (await shown.count()) === 1 ||
        ((await page.getByRole('alert').count()) > 0
          ? Promise.reject(new Error(await page.getByRole('alert').first().innerText()))
          : null),
      { timeout: 15_000, what: 'the new token' },
    );
    const created = (await shown.innerText()).trim();
    expect(created).toMatch(/^opj1\.none\.[0-9a-f]{16}\./);
    const joinRow = page.getByRole('row', { name: new RegExp(created.split('.')[2]) });
    await hasText(joinRow, 'region=eu, site=lyon');

    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('button', { name: 'Revoke now' }).click();
    await hasText(row, 'Revoked');
    const who = await fetch(`${hub!.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${viewer.token}` } });
    expect(who.status).toBe(401);
    await screenshot(page, 'tokens');
  });

  it('lists the blobs of the project with their size, uploader and references', async () => {
    const bytes = Buffer.alloc(3 * 1024 * 1024, 7);
    const res = await fetch(`${hub!.url}/api/v1/projects/default/blobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hub!.adminToken}`, 'content-type': 'application/x-test' },
      body: bytes,
    });
    expect(res.status).toBe(201);
    const blob = (await res.json()) as { digest: BlobDigest };
    // Many long references: the column wraps them instead of widening the table past the page.
    const names = Array.from({ length: 8 }, (_, i) => `agent-upgrade-of-a-long-name-${i}`);
    for (const n of names) hub!.blobs.setReferences('default', 'AgentUpgrade', n, [blob.digest]);
    // An agent binary's verdict, as `agent push` records it (hub/upgrades/releases.ts).
    hub!.blobs.recordScan('default', blob.digest, {
      state: 'Clean',
      engine: 'ClamAV 1.4.6/27480',
      scannedAt: new Date().toISOString(),
    });
    await page.goto(hub!.url + '/blobs');
    await page.getByRole('heading', { name: 'Blobs', exact: true }).waitFor();
    const row = page.getByRole('row', { name: new RegExp(blob.digest.slice(0, 19)) });
    await hasText(row, '3.0 MiB');
    await hasText(row, 'application/x-test');
    await hasText(row, 'AgentUpgrade/agent-upgrade-of-a-long-name-7');
    await hasText(row, 'Clean · ClamAV 1.4.6/27480');
    const overflow = await page
      .locator('.table-wrap')
      .first()
      .evaluate((el) => el.scrollWidth - el.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, 'blobs');
  });

  it('names the hub replica the page talks to in the header, and lists the replicas', async () => {
    await page.goto(hub!.url + '/');
    await page.getByRole('heading', { name: 'Fleet overview' }).waitFor();
    const host = new URL(hub!.url).host;
    const chip = page.getByRole('banner').getByRole('link', { name: `Replica ${host}` });
    await chip.waitFor();
    expect(await chip.getAttribute('title')).toContain(hub!.replicaId);
    await chip.click();
    await page.getByRole('heading', { name: 'Hub replicas' }).waitFor();
    // A SQLite hub is its one replica: alive, the leader, serving both edges.
    const row = page.getByRole('row', { name: new RegExp(hub!.replicaId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) });
    await hasText(row, 'this page talks to it');
    await hasText(row, 'Alive');
    await hasText(row, 'Leader');
    await hasText(row, hub!.url);
    await waitFor(async () => (await row.locator('td').nth(3).innerText()) === '2', {
      timeout: 15_000,
      what: 'the replica serving both edges',
    });
    await page.getByText('1 of 1 alive').waitFor();
    await screenshot(page, 'replicas');
  });

  it('lists data objects with delivered x/y and shows each edge delivering', async () => {
    const res = await fetch(`${hub!.url}/api/v1/projects/default/blobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hub!.adminToken}` },
      body: Buffer.alloc(1024 * 1024, 9),
    });
    expect(res.status).toBe(201);
    const blob = (await res.json()) as { digest: BlobDigest; size: number };
    await api('POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'DataObject',
          metadata: { name: 'model' },
          spec: {
            version: 'v1',
            digest: blob.digest,
            size: blob.size,
            path: 'models/m.bin',
            edgeSelector: { matchLabels: { region: 'eu' } },
          },
        },
      ],
    });
    await page.goto(hub!.url + '/dataobjects');
    await page.getByRole('heading', { name: 'Data objects', exact: true }).waitFor();
    const row = page.getByRole('row', { name: /model/ });
    await hasText(row, 'models/m.bin');
    await hasText(row, '1.0 MiB');
    // The list is read once: reload until the deliveries have finished.
    await waitFor(
      async () => {
        await page.reload();
        return (await page.getByRole('row', { name: /model/ }).innerText({ timeout: 5_000 })).includes('delivered 2/2');
      },
      { timeout: 30_000, what: 'delivered 2/2 in the list' },
    );
    await page.getByRole('link', { name: 'model', exact: true }).click();
    await page.getByRole('heading', { name: 'Data object model' }).waitFor();
    for (const edge of ['shop-berlin', 'shop-paris']) {
      const r = page.getByRole('row', { name: new RegExp(edge) });
      await hasText(r, 'Delivered');
      expect((await r.innerText()).replace(/\s+/g, ' ')).toMatch(/Delivered v1 .* Online/);
    }
    await screenshot(page, 'data-object');
  });

  it('shows a file name an edge exported with its control characters escaped, never obeyed', async () => {
    const name = 'a\u001b[2J\nb\u202e.txt';
    const w = workload('v1');
    const pod = w.spec.manifests[0];
    Object.assign(pod.metadata, {
      name: 'namer',
      annotations: { [EGRESS_ANNOTATION]: JSON.stringify([{ target: 'out' }]) },
    });
    pod.spec.containers[0]!.command = [
      '/bin/busybox',
      'sh',
      '-c',
      'printf x > "$OUTPOST_EXPORT_DIR/$F" && exec /bin/busybox sleep 3600',
    ];
    pod.spec.containers[0]!.env = [{ name: 'F', value: name }];
    await api('POST', '/api/v1/apply', {
      objects: [
        { ...w, metadata: { name: 'namer', project: 'default' } },
        { kind: 'Placement', metadata: { name: 'namer' }, spec: { edges: ['shop-berlin'], workloads: ['namer'] } },
      ],
    });
    await waitFor(
      async () =>
        (await api('GET', '/api/v1/projects/default/edges/shop-berlin/data-files')).items.some(
          (f: { path: string }) => f.path === `out/${name}`,
        ),
      { timeout: 30_000, what: 'the file on the hub' },
    );
    await page.goto(hub!.url + '/edges/shop-berlin');
    await page.getByRole('heading', { name: 'Exported files' }).waitFor();
    const cell = page.getByRole('rowheader', { name: /^out\/a/ });
    await cell.waitFor();
    expect(await cell.textContent()).toBe('out/a\\x1b[2J\\nb\\u202e.txt');
  });

  it('shows the interconnect: exports with their serving edges, imports with their consuming edges', async () => {
    const port = await freePort();
    await api('POST', '/api/v1/apply', {
      objects: [
        { kind: 'ServiceExport', metadata: { name: 'stock' }, spec: { workload: 'hello', port: 8080 } },
        { kind: 'ServiceImport', metadata: { name: 'stock' }, spec: { export: 'stock', port, edges: ['shop-berlin'] } },
      ],
    });
    await waitFor(
      async () => (await api('GET', '/api/v1/projects/default/serviceimports/stock')).status?.listening === 1,
      { timeout: 30_000, what: 'shop-berlin listening for the import' },
    );
    await page.goto(hub!.url + '/interconnect');
    await page.getByRole('heading', { name: 'Interconnect', exact: true }).waitFor();
    const exp = await api('GET', '/api/v1/projects/default/serviceexports/stock');
    await hasText(page.getByRole('table', { name: 'Exports' }).getByRole('row', { name: /stock/ }), exp.status.summary);
    const imports = page.getByRole('table', { name: 'Imports' }).getByRole('row', { name: /stock/ });
    await hasText(imports, 'default/stock');
    await hasText(imports, String(port));
    const consuming = page.getByRole('table', { name: 'Consuming edges' }).getByRole('row', { name: /shop-berlin/ });
    expect((await consuming.innerText()).replace(/\s+/g, ' ')).toMatch(/^stock shop-berlin yes yes 0 0 0 0 /);
    await screenshot(page, 'interconnect');
  });

  it('shows a clear banner when the hub connection is lost', async () => {
    await page.goto(hub!.url + '/');
    await page.getByRole('heading', { name: 'Fleet overview' }).waitFor();
    await page.getByRole('progressbar', { name: /placement hello-eu/ }).waitFor();
    hubClosed = true;
    await hub!.close();
    const banner = page.getByRole('alert').filter({ hasText: 'Connection to the hub lost' });
    await banner.waitFor({ timeout: 15_000 });
    await banner.getByRole('button', { name: 'Retry now' }).waitFor();
    await screenshot(page, 'connection-lost');
    expect(errors).toEqual([]);
  });
});
