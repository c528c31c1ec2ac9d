/**
 * The web UI in Debian's Chromium against a hub holding 10,000 edges (issue 7: "pages stay usable
 * with 10,000 edges"). The fleet is written into the in-process hub's SQLite file the way the hub
 * stores enrolled edges (test/ui/scale-seed.ts says how and where it cuts corners), then a user
 * signs in, reads the overview, pages and filters the edge list, and opens a placement on 2,000
 * edges.
 *
 * Asserted: what a user would notice. The right counts and rows, at most one page of rows in the
 * DOM, and filters that run on the hub (the UI's requests carry labelSelector/q). Printed, never
 * asserted (the machine is shared): API response times and how long each page took to show its
 * content. OUTPOST_UPDATE_SCREENSHOTS=1 writes docs/screenshots/edges-10k.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../../hub/hub.js';
import { tempDir, waitFor } from '../helpers.js';
import { buildUi, collectErrors, launch, screenshot, screenshotsTo } from './browser.js';
import { PLACEMENT, seedFleet, type Fleet } from './scale-seed.js';

const EDGES = 10_000;
/** The edge list's default page size (ui/src/pages/edges.tsx) and the largest one it offers. */
const PAGE = 50;
const MAX_PAGE = 100;
/** Heartbeats every 10 s keep an edge online; the test's stand-in beats more often than needed. */
const TOUCH_MS = 5_000;

let dir: string;
let hub: Hub | undefined;
let browser: BrowserContext | undefined;
let page: Page;
let errors: string[] = [];
let fleet: Fleet;
let toucher: ReturnType<typeof setInterval> | undefined;
/** API requests the page made, with the time to the last byte of the answer. */
const requests: { path: string; ms: number }[] = [];
const figures: [string, string][] = [];

const record = (what: string, ms: number, extra = '') =>
  figures.push([what, `${Math.round(ms)} ms${extra ? ` (${extra})` : ''}`]);

async function api<T = any>(p: string): Promise<T> {
  const res = await fetch(`${hub!.url}${p}`, { headers: { authorization: `Bearer ${hub!.adminToken}` } });
  const json = (await res.json()) as T;
  if (!res.ok) throw new Error(`GET ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Median of `n` timed calls, after one call that warms caches (the page's first load pays that one). */
async function timeApi(p: string, n = 5): Promise<void> {
  const t0 = performance.now();
  await api(p);
  const cold = performance.now() - t0;
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await api(p);
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  record(`GET ${p}`, ms[Math.floor(n / 2)], `median of ${n}; first call ${Math.round(cold)} ms`);
}

/** Runs `act` and measures until `ready` holds: what the user waits for. */
async function timed(what: string, act: () => Promise<unknown>, ready: () => Promise<unknown>): Promise<void> {
  const t = performance.now();
  await act();
  await ready();
  record(what, performance.now() - t);
}

async function hasText(l: Locator, text: string | RegExp): Promise<void> {
  await waitFor(
    async () => {
      const s = await l.innerText({ timeout: 1_000 });
      return typeof text === 'string' ? s.includes(text) : text.test(s);
    },
    { timeout: 20_000, what: `text ${text} in ${l}` },
  );
}

const edgeRows = () => page.locator('table.table:not(.compact) tbody tr');
const rowNames = async (rows: Locator) => rows.locator('th[scope=row] a').allInnerTexts();
/** All table rows in the document: a page that rendered the whole fleet would have thousands. */
const domRows = () => page.locator('tr').count();
const requested = (re: RegExp) => requests.filter((r) => re.test(r.path));
/** Playwright reports a finished request a moment after the page may have rendered its answer. */
const sawRequest = (re: RegExp) =>
  waitFor(() => requested(re).length > 0, { timeout: 5_000, what: `a request matching ${re}` });

beforeAll(async () => {
  dir = tempDir('outpost-ui-scale-');
  screenshotsTo(path.join(dir, 'screenshots'));
  const uiDir = path.join(dir, 'ui-dist');
  buildUi(uiDir);
  process.env.OUTPOST_UI_DIR = uiDir;
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0', insecureHttp: true });
  const t = performance.now();
  fleet = await seedFleet(hub, EDGES);
  record(`seeding ${EDGES} edges, 2,000 with the workload`, performance.now() - t);
  toucher = setInterval(() => fleet.touch(), TOUCH_MS);
  browser = await launch(path.join(dir, 'chromium-profile'));
  page = await browser.newPage();
  errors = collectErrors(page);
  page.on('requestfinished', (req) => {
    const u = new URL(req.url());
    if (!u.pathname.startsWith('/api/') || u.pathname.endsWith('/stream')) return;
    requests.push({ path: u.pathname + u.search, ms: req.timing().responseEnd });
  });
}, 90_000);

afterAll(async () => {
  clearInterval(toucher);
  await browser?.close().catch(() => undefined);
  await hub?.close().catch(() => undefined);
  delete process.env.OUTPOST_UI_DIR;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  if (figures.length) {
    const w = Math.max(...figures.map(([k]) => k.length));
    console.log(
      `UI at ${EDGES} edges (this machine, now; not asserted):\n${figures.map(([k, v]) => `  ${k.padEnd(w)}  ${v}`).join('\n')}`,
    );
  }
  if (requests.length) {
    console.log(
      `API requests the browser made (time to the last byte):\n${requests.map((r) => `  ${String(Math.round(r.ms)).padStart(5)} ms  ${decodeURIComponent(r.path)}`).join('\n')}`,
    );
  }
}, 60_000);

describe(`web UI with ${EDGES} edges`, () => {
  it('the API answers a page at a time', async () => {
    const p = '/api/v1/projects/default';
    const first = await api(`${p}/edges?limit=${PAGE}`);
    expect(first.items).toHaveLength(PAGE);
    expect(first.total).toBe(EDGES);
    for (const path of [
      `${p}/fleet`,
      `${p}/edges?limit=${PAGE}`,
      `${p}/edges?limit=${PAGE}&continue=${first.continue}`,
      `${p}/edges?limit=${PAGE}&labelSelector=region%3Deu%2Ctier%3Dlarge`,
      `${p}/edges?limit=${PAGE}&q=edge-012`,
      `${p}/edges?limit=${PAGE}&state=Offline`,
      `${p}/placements?limit=50`,
      `${p}/placements/${PLACEMENT}`,
      `${p}/edges?limit=25&labelSelector=ring%3Dcanary`,
      `${p}/edges-online?hours=6`,
    ])
      await timeApi(path);
  });

  it('signs in and the overview counts the whole fleet', async () => {
    await page.goto(hub!.url + '/');
    await page.getByLabel('API token').fill(hub!.adminToken);
    const { counts } = fleet;
    await timed(
      'overview: sign in to counts and placement bar shown',
      () => page.getByRole('button', { name: 'Sign in' }).click(),
      async () => {
        await hasText(page.getByRole('link', { name: /edges in total/ }), String(EDGES));
        await page
          .getByRole('progressbar', { name: new RegExp(`placement ${PLACEMENT}: \\d+ of 2000 ready`) })
          .waitFor({ timeout: 20_000 });
      },
    );
    await hasText(page.getByRole('link', { name: /edges online/ }), String(counts.Online));
    await hasText(page.getByRole('link', { name: /^\d+ offline/ }), String(counts.Offline));
    await hasText(page.getByRole('link', { name: /pending approval/ }), String(counts.Pending));
    const ready = fleet.canary.filter((e) => e.phase === 'Online' && e.reports === 'Ready').length;
    await page.getByRole('progressbar', { name: `placement ${PLACEMENT}: ${ready} of 2000 ready` }).waitFor();
    await page.getByRole('heading', { name: 'Edges online' }).waitFor();
  });

  it("follows the overview's offline count to the edges the hub filtered by state", async () => {
    const offline = fleet.edges.filter((e) => e.phase === 'Offline').map((e) => e.name);
    await timed(
      'edges: state=Offline from the overview link',
      () => page.getByRole('link', { name: /^\d+ offline/ }).click(),
      () => hasText(page.locator('p[aria-live]').first(), `${offline.length} match the filter`),
    );
    expect(await rowNames(edgeRows())).toEqual(offline.slice(0, PAGE));
    expect(new Set(await edgeRows().locator('td:nth-child(3)').allInnerTexts())).toEqual(new Set(['Offline']));
    await sawRequest(/\/edges\?.*state=Offline/);
  });

  it('shows the first page of edges, pages forward, and never holds more than a page of rows', async () => {
    await timed(
      'edges: first page rendered (full page load)',
      () => page.goto(hub!.url + '/edges'),
      () => waitFor(async () => (await edgeRows().count()) === PAGE, { what: `${PAGE} edge rows` }),
    );
    const names = fleet.edges.map((e) => e.name);
    expect(await rowNames(edgeRows())).toEqual(names.slice(0, PAGE));
    await hasText(page.locator('p[aria-live]').first(), `${EDGES} edges in project default`);
    expect(await domRows()).toBeLessThanOrEqual(MAX_PAGE + 1);
    await screenshot(page, 'edges-10k');

    await timed(
      'edges: next page',
      () => page.getByRole('button', { name: 'Next →' }).click(),
      () => waitFor(async () => (await rowNames(edgeRows()))[0] === names[PAGE], { what: 'the second page' }),
    );
    expect(await rowNames(edgeRows())).toEqual(names.slice(PAGE, 2 * PAGE));
    await page.getByText(`Page 2 · ${PAGE} shown`).waitFor();
    await sawRequest(/\/edges\?.*continue=/);
    expect(await domRows()).toBeLessThanOrEqual(MAX_PAGE + 1);
  });

  it('filters by label selector on the hub and says how many match', async () => {
    const match = fleet.edges.filter((e) => e.labels.region === 'eu' && e.labels.tier === 'large').map((e) => e.name);
    await page.getByLabel('Label selector').fill('region=eu,tier=large');
    await timed(
      'edges: label selector region=eu,tier=large',
      () => page.getByRole('button', { name: 'Filter' }).click(),
      () => hasText(page.locator('p[aria-live]').first(), `${match.length} match the filter`),
    );
    await page.waitForURL(/labelSelector=region%3Deu%2Ctier%3Dlarge/);
    expect(await rowNames(edgeRows())).toEqual(match.slice(0, PAGE));
    await sawRequest(/\/edges\?.*labelSelector=region%3Deu%2Ctier%3Dlarge/);
    // The page asked the hub for one page of matches, never for the whole fleet to filter itself.
    expect(requested(/\/edges\?/).every((r) => /limit=(25|50|100)\b/.test(r.path))).toBe(true);
  });

  it('searches by name on the hub, pages through the matches, and stops at the last page', async () => {
    const match = fleet.edges.filter((e) => e.name.includes('edge-012')).map((e) => e.name);
    await page.getByRole('button', { name: 'Clear' }).click();
    await waitFor(async () => (await rowNames(edgeRows()))[0] === fleet.edges[0].name, { what: 'the unfiltered list' });
    await page.getByLabel('Name contains').fill('edge-012');
    await timed(
      'edges: name search "edge-012"',
      () => page.getByRole('button', { name: 'Filter' }).click(),
      () => hasText(page.locator('p[aria-live]').first(), `${match.length} match the filter`),
    );
    await page.waitForURL(/q=edge-012/);
    await sawRequest(/\/edges\?.*q=edge-012/);
    expect(await rowNames(edgeRows())).toEqual(match.slice(0, PAGE));
    await page.getByRole('button', { name: 'Next →' }).click();
    await waitFor(async () => (await rowNames(edgeRows()))[0] === match[PAGE], { what: 'the second page of matches' });
    expect(await rowNames(edgeRows())).toEqual(match.slice(PAGE, 2 * PAGE));
    await waitFor(() => page.getByRole('button', { name: 'Next →' }).isDisabled(), {
      what: 'Next disabled on the last page',
    });
  });

  it('opens the placement on 2,000 edges: status, the broken list and one page of matched edges', async () => {
    const canary = fleet.canary;
    const ready = canary.filter((e) => e.phase === 'Online' && e.reports === 'Ready').length;
    const failed = canary.find((e) => e.phase === 'Online' && e.reports === 'Failed')!;
    await timed(
      'placement: status and matched edges rendered (full page load)',
      () => page.goto(`${hub!.url}/placements/${PLACEMENT}`),
      async () => {
        await page
          .getByRole('progressbar', { name: `placement ${PLACEMENT}: ${ready} of 2000 ready` })
          .waitFor({ timeout: 20_000 });
        await waitFor(async () => (await page.locator('table.compact').last().locator('tbody tr').count()) === 25, {
          what: '25 matched edges',
        });
      },
    );
    const facts = page.locator('dl.facts');
    await hasText(facts, 'Selected edges\n2000');
    await page.getByRole('row', { name: new RegExp(`${failed.name} shop-app`) }).waitFor();
    const section = page.locator('section[aria-labelledby=matched-h]');
    await hasText(section, '2000 edges match');
    const matched = section.locator('tbody tr');
    expect(await rowNames(matched)).toEqual(canary.slice(0, 25).map((e) => e.name));
    await sawRequest(/\/edges\?.*labelSelector=ring%3Dcanary/);
    expect(await domRows()).toBeLessThanOrEqual(MAX_PAGE + 50);
    expect(errors).toEqual([]);
  });
});
