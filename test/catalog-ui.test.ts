/**
 * The Catalog page (issue #21, test 5; issue #42, item 8) in Debian's Chromium (headless,
 * playwright-core) against a real hub (scanning off: `--scanner none`, the scan has its own test)
 * and two real edge agents running busybox through the process driver: upload a package archive
 * from the browser, fill the form generated from its parameters (a profile prefilled, a secret
 * masked), deploy it to a label selector with the live count of matching edges, and see READY 2/2
 * on the placement. Then a second version that depends on another package, with a Markdown readme
 * carrying script payloads and an image in the hub's cache, deployed by a prestaged placement at
 * a range: the catalog shows what each version depends on and where it runs, renders the readme
 * (and none of its scripts), and warns before the deploy form reuses a placement's name; the
 * placement page shows the package at its range resolved to a version with its profile, prestage
 * with its budget, and the staging progress.
 * OUTPOST_UPDATE_SCREENSHOTS=1 writes the screenshots to docs/screenshots/.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPackage } from '../cli/cmd-package.js';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, startProcessAgents, stopAgents } from './fixtures/in-process-fleet.js';
import { writeOciArchive } from './fixtures/oci-archive.js';
import { tempDir, waitFor } from './helpers.js';
import { buildUi, collectErrors, launch, screenshot, screenshotsTo, signIn } from './ui/browser.js';

let dir: string;
let hub: Hub | undefined;
let browser: BrowserContext | undefined;
let page: Page;
let errors: string[] = [];
const agents: EdgeAgent[] = [];
let archive: string;

const api = <T = any>(method: string, p: string, body?: unknown) => adminApi<T>(hub!, method, p, body);
/**
 * Chromium reports the Content-Security-Policy's refusal of an inline event handler as soon as
 * HTML carrying one is parsed, even into the inert document DOMPurify sanitises in (nothing runs
 * there, nothing is fetched): the readme's `onerror` payload makes this report. Any other error counts.
 */
const INLINE_HANDLER_REFUSED =
  /^console: Executing inline event handler violates the following Content Security Policy/;
const unexpectedErrors = () => errors.filter((e) => !INLINE_HANDLER_REFUSED.test(e));

/** Builds package hello at `version` (a readme, an image, optional dependencies); returns the archive. */
async function helloPackage(
  version: string,
  readme: string,
  o: { image: string; dependsOn?: { name: string; version: string }[] },
): Promise<string> {
  const pkg = path.join(dir, `hello-${version}`);
  fs.mkdirSync(pkg);
  fs.writeFileSync(path.join(pkg, 'README.md'), readme);
  fs.writeFileSync(
    path.join(pkg, 'package.yaml'),
    `kind: Package
metadata: { name: hello }
spec:
  version: ${version}
  description: says hello on every site
  parameters:
    - { name: greeting, type: string, required: true, description: what to say }
    - { name: size, type: string, enum: [small, large], default: large }
    - { name: token, type: string, secret: true }
  profiles:
    small: { size: small }
  dependsOn: ${JSON.stringify(o.dependsOn ?? [])}
  workloads:
    - name: app
      manifests:
        - apiVersion: v1
          kind: Pod
          metadata: { name: app }
          spec:
            terminationGracePeriodSeconds: 1
            containers:
              - name: main
                image: ${o.image}
                command: [/bin/busybox, sh, -c, 'echo "{{ params.greeting }} {{ params.size }} {{ edge.name }}" && exec /bin/busybox sleep 3600']
`,
  );
  return (await buildPackage(pkg, path.join(dir, `hello-${version}.tgz`))).file;
}

/** A package `db` 1.0.0 of one busybox workload, for hello 1.1.0 to depend on. */
async function dbPackage(): Promise<string> {
  const pkg = path.join(dir, 'db');
  fs.mkdirSync(pkg);
  fs.writeFileSync(
    path.join(pkg, 'package.yaml'),
    `kind: Package
metadata: { name: db }
spec:
  version: 1.0.0
  description: a database for hello
  workloads:
    - name: db
      manifests:
        - apiVersion: v1
          kind: Pod
          metadata: { name: db }
          spec:
            containers:
              - { name: main, image: busybox, command: [/bin/busybox, sleep, '3600'] }
`,
  );
  return (await buildPackage(pkg, path.join(dir, 'db-1.0.0.tgz'))).file;
}

beforeAll(async () => {
  dir = tempDir('outpost-catalog-ui-');
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
  archive = await helloPackage('1.0.0', '# hello\n\nSays hello on every site.\n', { image: 'busybox' });
  await startProcessAgents(hub, dir, ['shop-1', 'shop-2'], { region: 'eu' }, agents);
  page = await browser.newPage();
  errors = collectErrors(page);
  await signIn(page, hub.url, hub.adminToken);
}, 180_000);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await stopAgents(agents);
  await hub?.close().catch(() => undefined);
  delete process.env.OUTPOST_UI_DIR;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('the Catalog page', () => {
  it(
    'uploads a package, fills the generated form, deploys to a selector and shows READY 2/2',
    { timeout: 180_000 },
    async () => {
      await page.goto(hub!.url + '/catalog');
      await page.getByRole('heading', { name: 'Catalog' }).waitFor();
      await page.getByLabel('Upload a package').setInputFiles(archive);
      await page.getByRole('button', { name: 'Upload', exact: true }).click();
      await page.getByText('hello 1.0.0 published').waitFor({ timeout: 20_000 });
      // --scanner none: Clean at once, and the deploy form is offered.
      await page.getByRole('heading', { name: 'Deploy hello 1.0.0' }).waitFor({ timeout: 20_000 });
      expect(await page.getByRole('region', { name: 'readme of hello 1.0.0' }).innerText()).toContain(
        'Says hello on every site.',
      );
      // The profile's values are prefilled; a secret parameter is masked.
      expect(await page.getByLabel('Profile').inputValue()).toBe('small');
      expect(await page.locator('#d-param-size').inputValue()).toBe('small');
      expect(await page.locator('#d-param-token').getAttribute('type')).toBe('password');
      await page.locator('#d-param-greeting').fill('bonjour');
      await page.locator('#d-param-token').fill('t0ken-not-shown');
      await page.getByLabel('Deploy to').fill('region=eu');
      await page.getByText('2 matching edges').waitFor({ timeout: 20_000 });
      await page.getByLabel('Deploy to').fill('region=us');
      await page.getByText('0 matching edges').waitFor({ timeout: 20_000 });
      await page.getByLabel('Deploy to').fill('region=eu');
      await page.getByText('2 matching edges').waitFor({ timeout: 20_000 });
      await screenshot(page, 'catalog');
      await page.getByRole('button', { name: 'Deploy', exact: true }).click();
      await page.getByText('Placement hello applied.').waitFor({ timeout: 20_000 });
      // The form's own link: the versions table links the placement too, once the change feed says
      // where the version runs (the two were seen at once on a loaded machine).
      await page.getByRole('form', { name: 'Deploy' }).getByRole('link', { name: 'hello', exact: true }).click();
      await page.getByRole('progressbar', { name: 'placement hello: 2 of 2 ready' }).waitFor({ timeout: 90_000 });
      await screenshot(page, 'catalog-deployed');
      const p = await api<{
        spec: { package: { values: Record<string, string> } };
        status: { package: { version: string } };
      }>('GET', '/api/v1/projects/default/placements/hello');
      expect(p.status.package.version).toBe('1.0.0');
      expect(p.spec.package.values.greeting).toBe('bonjour');
      expect(JSON.stringify(p)).not.toContain('t0ken-not-shown');
      expect(errors).toEqual([]);
    },
  );

  it(
    'shows what each version depends on and where it runs, renders the readme as sanitised Markdown, and warns before reusing a placement name',
    { timeout: 180_000 },
    async () => {
      const host = new URL(hub!.url).host;
      const env = { OUTPOST_HUB: hub!.url, OUTPOST_TOKEN: hub!.adminToken, OUTPOST_CONFIG: path.join(dir, 'cli.json') };
      const image = await writeOciArchive(path.join(dir, 'hello-image.tar'), 96 * 1024);
      const pushed = await runCli(['image', 'push', image, 'team/hello:v1'], { env });
      expect(pushed.code, pushed.stderr).toBe(0);
      const readme = [
        '# Hello, sites',
        '',
        'Says hello on every site.',
        '',
        '- one greeting per site',
        '- profiles: `small`',
        '',
        'See [the docs](https://docs.example.com/hello) first.',
        '',
        "<script>window.__pwned = 'script'</script>",
        '<img src="x" onerror="window.__pwned = \'img\'">',
        '',
        "[a trap](javascript:window.__pwned='link')",
        '',
      ].join('\n');
      for (const file of [
        await dbPackage(),
        await helloPackage('1.1.0', readme, {
          image: `${host}/default/team/hello:v1`,
          dependsOn: [{ name: 'db', version: '^1.0' }],
        }),
      ]) {
        const r = await runCli(['package', 'push', file], { env });
        expect(r.code, r.stderr).toBe(0);
      }
      // A prestaged placement at a range: it resolves 1.1.0, whose edges wait for db Ready there
      // (nothing deploys db), while they stage its image.
      await api('POST', '/api/v1/apply', {
        objects: [
          {
            kind: 'Placement',
            metadata: { name: 'hello-range' },
            spec: {
              edgeSelector: { matchLabels: { region: 'eu' } },
              package: { name: 'hello', version: '^1.0', profile: 'small', values: { greeting: 'hi' } },
              rollout: { prestage: true, prestageBudget: '1MB' },
            },
          },
        ],
      });

      await page.goto(hub!.url + '/catalog');
      await page.getByRole('button', { name: 'hello', exact: true }).click();
      const versions = page.getByRole('table', { name: 'versions of hello' });
      const row = (v: string) => versions.locator(`tr[data-version="${v}"]`);
      await row('1.1.0').waitFor({ timeout: 20_000 });
      // What each version depends on.
      expect(await row('1.1.0').locator('td').nth(2).innerText()).toBe('db ^1.0');
      expect(await row('1.0.0').locator('td').nth(2).innerText()).toBe('nothing');
      // Where each version runs: the placement deploying it, and its edges there.
      await waitFor(
        async () =>
          (await row('1.0.0').locator('td').nth(3).innerText()) ===
          'hello (1.0.0, profile small): 2 edges: shop-1, shop-2',
        { timeout: 20_000, what: '1.0.0 running through placement hello on both edges' },
      );
      expect(await row('1.1.0').locator('td').nth(3).innerText()).toBe(
        'hello-range (^1.0, profile small): no edge yet',
      );
      expect(await row('1.0.0').getByRole('link', { name: 'shop-1' }).getAttribute('href')).toBe('/edges/shop-1');

      // The newest version's readme, as Markdown: a heading, a list, a link.
      const md = page.getByRole('region', { name: 'readme of hello 1.1.0' });
      await md.getByRole('heading', { name: 'Hello, sites' }).waitFor({ timeout: 20_000 });
      expect(await md.getByRole('listitem').allInnerTexts()).toEqual(['one greeting per site', 'profiles: small']);
      const link = md.getByRole('link', { name: 'the docs' });
      expect(await link.getAttribute('href')).toBe('https://docs.example.com/hello');
      expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
      // Its payloads: not run, and not in the DOM at all (not merely blocked by the CSP).
      expect(await page.evaluate(() => (globalThis as { __pwned?: string }).__pwned)).toBeUndefined();
      expect(await md.locator('script').count()).toBe(0);
      expect(await page.locator('[onerror]').count()).toBe(0);
      expect(await md.evaluate((el) => el.innerHTML)).not.toContain('__pwned');
      expect(await md.getByText('a trap').getAttribute('href')).toBeNull();

      // The deploy form of 1.1.0 proposes the name "hello", which placement hello holds: said at once.
      await page.getByRole('heading', { name: 'Deploy hello 1.1.0' }).waitFor();
      const exists = page.getByTestId('placement-exists');
      await exists.waitFor({ timeout: 20_000 });
      expect(await exists.innerText()).toContain(
        'Placement hello exists: it deploys package hello@1.0.0 (1.0.0) to region=eu, 2 edges.',
      );
      const replace = page.getByRole('button', { name: 'Replace hello' });
      expect(await replace.isDisabled()).toBe(true);
      await page.getByLabel('Placement name').fill('hello-b');
      await exists.waitFor({ state: 'detached' });
      expect(await page.getByRole('button', { name: 'Deploy', exact: true }).isEnabled()).toBe(true);
      // Typed back and submitted at once, before the check: still not applied, and said.
      await page.locator('#d-param-greeting').fill('hi');
      await page.getByLabel('Placement name').fill('hello');
      await page.getByLabel('Placement name').press('Enter');
      await exists.waitFor({ timeout: 20_000 });
      await page.getByLabel('Replace placement hello').check();
      expect(await replace.isEnabled()).toBe(true);
      await screenshot(page, 'catalog-package');
      const hello = await api('GET', '/api/v1/projects/default/placements/hello');
      expect(hello.spec.package.version).toBe('1.0.0');
      expect(hello.status.package.version).toBe('1.0.0');
      const all = await api<{ items: { metadata: { name: string } }[] }>('GET', '/api/v1/projects/default/placements');
      expect(all.items.map((x) => x.metadata.name).sort()).toEqual(['hello', 'hello-range']);
      expect(unexpectedErrors()).toEqual([]);
    },
  );

  it(
    'shows on the placement page the package at its range resolved with its profile, prestage with its budget, and the staging',
    { timeout: 120_000 },
    async () => {
      await page.goto(hub!.url + '/placements/hello-range');
      const pkg = page.getByTestId('placement-package');
      await pkg.waitFor({ timeout: 20_000 });
      expect(await pkg.innerText()).toMatch(/^hello@\^1\.0 → 1\.1\.0, profile small \(resolved .+\)$/);
      expect(await page.getByText(/maxUnavailable .*, prestage on, budget 1MB per edge/).count()).toBe(1);
      // Both edges staged the image (the process driver pulls nothing: Skipped), and wait for db.
      await page.getByRole('progressbar', { name: 'image staging: 2 of 2 edges staged' }).waitFor({ timeout: 60_000 });
      expect(await page.getByTestId('staging-summary').innerText()).toBe('images staged on 2/2 edges');
      await page.getByText(/waiting on shop-1 for package db \^1\.0 Ready on it/).waitFor({ timeout: 20_000 });
      await screenshot(page, 'placement-package');
      await page.goto(hub!.url + '/placements/hello');
      await pkg.waitFor({ timeout: 20_000 });
      expect(await pkg.innerText()).toMatch(/^hello@1\.0\.0 → 1\.0\.0, profile small \(resolved .+\)$/);
      expect(await page.getByText(/prestage off/).count()).toBe(1);
      expect(unexpectedErrors()).toEqual([]);
    },
  );
});
