/**
 * @module Helpers for the browser tests: build the UI into a temp directory, launch Debian's
 * Chromium through playwright-core (never a downloaded browser), collect page errors, sign in.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { ROOT } from '../helpers.js';

export const CHROMIUM = process.env.OUTPOST_CHROMIUM ?? '/usr/bin/chromium';
/**
 * Screenshots are always taken (a page that cannot render fails the test), but written over the
 * committed ones in docs/screenshots/ only with OUTPOST_UPDATE_SCREENSHOTS=1, so a test run never
 * leaves tracked files changed (that would mark the next build as -dirty).
 */
export const SCREENSHOTS = path.join(ROOT, 'docs', 'screenshots');
let screenshotDir = SCREENSHOTS;

/** Where screenshots go in this run: docs/screenshots/ when updating them, else `scratch`. */
export function screenshotsTo(scratch: string): string {
  screenshotDir = process.env.OUTPOST_UPDATE_SCREENSHOTS === '1' ? SCREENSHOTS : scratch;
  return screenshotDir;
}

/** Builds ui/ with Vite into `outDir`, so the test serves exactly the current sources. */
export function buildUi(outDir: string): void {
  const vite = path.join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
  const r = spawnSync(
    process.execPath,
    [vite, 'build', '--config', path.join(ROOT, 'ui', 'vite.config.ts'), '--outDir', outDir, '--emptyOutDir'],
    { cwd: ROOT, encoding: 'utf8', timeout: 120_000 },
  );
  if (r.status !== 0) throw new Error(`building the UI failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  if (!fs.existsSync(path.join(outDir, 'index.html')))
    throw new Error(`the UI build wrote no index.html into ${outDir}`);
}

/** Launches Chromium with a fresh profile in `profileDir`. Throws (the test fails) when Chromium is missing. */
export async function launch(profileDir: string): Promise<BrowserContext> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the browser tests drive Debian's Chromium. Install it with \`bash build/setup.sh\` (apt-get install chromium), or point OUTPOST_CHROMIUM at a Chromium binary`,
    );
  }
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 860 },
    timeout: 30_000,
  });
}

/** Console errors and uncaught exceptions of a page (CSP violations show up here too). */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // Failed fetches while the hub is deliberately stopped are expected; everything else is a bug.
    if (m.type() === 'error' && !/Failed to load resource|ERR_CONNECTION_REFUSED|net::ERR/.test(m.text()))
      errors.push(`console: ${m.text()}`);
  });
  return errors;
}

/** Signs `page` in to the web UI at `hubUrl` with the API token `token`; resolves on the Fleet overview. */
export async function signIn(page: Page, hubUrl: string, token: string): Promise<void> {
  await page.goto(hubUrl + '/');
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Fleet overview' }).waitFor();
}

export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: path.join(screenshotDir, `${name}.png`), fullPage: true });
}
