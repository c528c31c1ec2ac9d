/**
 * The Catalog page (issue #21, test 5) in Debian's Chromium (headless, playwright-core) against a
 * real hub (scanning off: `--scanner none`, the scan has its own test) and two real edge agents
 * running busybox through the process driver: upload a package archive from the browser, fill the
 * form generated from its parameters (a profile prefilled, a secret masked), deploy it to a label
 * selector with the live count of matching edges, and see READY 2/2 on the placement.
 * OUTPOST_UPDATE_SCREENSHOTS=1 writes the screenshots to docs/screenshots/.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPackage } from '../cli/cmd-package.js';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { adminApi, startProcessAgents, stopAgents } from './fixtures/in-process-fleet.js';
import { tempDir } from './helpers.js';
import { buildUi, collectErrors, launch, screenshot, screenshotsTo, signIn } from './ui/browser.js';

let dir: string;
let hub: Hub | undefined;
let browser: BrowserContext | undefined;
let page: Page;
let errors: string[] = [];
const agents: EdgeAgent[] = [];
let archive: string;

const api = <T = any>(method: string, p: string, body?: unknown) => adminApi<T>(hub!, method, p, body);

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
  const pkg = path.join(dir, 'hello');
  fs.mkdirSync(pkg);
  fs.writeFileSync(path.join(pkg, 'README.md'), '# hello\n\nSays hello on every site.\n');
  fs.writeFileSync(
    path.join(pkg, 'package.yaml'),
    `kind: Package
metadata: { name: hello }
spec:
  version: 1.0.0
  description: says hello on every site
  parameters:
    - { name: greeting, type: string, required: true, description: what to say }
    - { name: size, type: string, enum: [small, large], default: large }
    - { name: token, type: string, secret: true }
  profiles:
    small: { size: small }
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
                image: busybox
                command: [/bin/busybox, sh, -c, 'echo "{{ params.greeting }} {{ params.size }} {{ edge.name }}" && exec /bin/busybox sleep 3600']
`,
  );
  archive = (await buildPackage(pkg, path.join(dir, 'hello-1.0.0.tgz'))).file;
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
      expect(await page.locator('pre.readme').innerText()).toContain('Says hello on every site.');
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
      await page.getByRole('link', { name: 'hello', exact: true }).click();
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
});
