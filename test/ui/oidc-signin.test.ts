/**
 * The web UI signs a person in with the hub's identity provider (issue #47; docs/security.md
 * "People"): Chromium clicks the sign-in button, the hub runs the code flow with PKCE against a
 * real provider (oidc-provider on loopback: test/fixtures/oidc-provider.ts), the person types
 * their login on the provider's page, and the UI comes back signed in as them. The session token
 * lands in sessionStorage only (nothing in localStorage, nothing left in the address bar); Sign
 * out ends the session on the hub; a callback whose state the browser did not start is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../../hub/hub.js';
import { startTestProvider, type TestProvider } from '../fixtures/oidc-provider.js';
import { hubApi } from '../fixtures/host-workloads.js';
import { tempDir, waitFor } from '../helpers.js';
import { freePort } from '../ports.js';
import { buildUi, collectErrors, launch } from './browser.js';

let dir: string;
let hub: Hub;
let idp: TestProvider;
let browser: BrowserContext;
let page: Page;

beforeAll(async () => {
  dir = tempDir('outpost-ui-oidc-');
  const uiDir = path.join(dir, 'ui-dist');
  buildUi(uiDir);
  process.env.OUTPOST_UI_DIR = uiDir;
  const port = await freePort();
  idp = await startTestProvider({
    redirectUris: [`http://127.0.0.1:${port}/auth/oidc/callback`],
    accounts: { alice: { email: 'alice@example.com', groups: ['shop-devs'] } },
  });
  fs.writeFileSync(path.join(dir, 'client-secret'), idp.clientSecret, { mode: 0o600 });
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: `127.0.0.1:${port}`,
    insecureHttp: true,
    oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecretFile: path.join(dir, 'client-secret') },
  });
  const r = await hubApi({ url: hub.url, token: hub.adminToken }, 'POST', '/api/v1/projects', {
    kind: 'Project',
    metadata: { name: 'shop' },
    spec: { members: [{ group: 'shop-devs', role: 'operator' }] },
  });
  expect(r.status).toBe(201);
  browser = await launch(path.join(dir, 'chromium-profile'));
  page = browser.pages()[0] ?? (await browser.newPage());
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await hub?.close();
  await idp?.close();
  delete process.env.OUTPOST_UI_DIR;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('web UI sign-in with the identity provider', () => {
  it('signs a person in with the code flow, keeps the token in sessionStorage only, and signs out on the hub', async () => {
    const errors = collectErrors(page);
    await page.goto(hub.url + '/');
    await page.getByRole('button', { name: 'Sign in with the identity provider' }).click();
    // The provider's login page.
    await page.waitForURL((u) => u.href.startsWith(idp.issuer));
    await page.locator('#login').fill('alice');
    await page.locator('#sign-in').click();
    await page.getByRole('heading', { name: 'Fleet overview' }).waitFor({ timeout: 30_000 });
    expect(await page.locator('header .person').innerText()).toBe('alice@example.com');
    expect(await page.locator('header .role').innerText()).toContain('operator');
    expect(new URL(page.url()).hash).toBe('');
    const stored = await page.evaluate(() => ({
      session: { ...(globalThis as any).sessionStorage },
      local: { ...(globalThis as any).localStorage },
    }));
    const token = stored.session['outpost.token'] as string;
    expect(token).toMatch(/^opt1\./);
    expect(JSON.stringify(stored.local)).not.toContain(token);
    const who = await hubApi({ url: hub.url, token }, 'GET', '/api/v1/whoami');
    expect(who.json).toMatchObject({ person: 'alice@example.com', role: 'operator', project: 'shop' });

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in with the identity provider' }).waitFor();
    await waitFor(async () => (await hubApi({ url: hub.url, token }, 'GET', '/api/v1/whoami')).status === 401, {
      timeout: 10_000,
      what: 'the session to end on the hub',
    });
    expect(errors).toEqual([]);
  }, 90_000);

  it('refuses a callback with a state this browser did not start', async () => {
    await page.goto(`${hub.url}/auth/oidc/callback?code=stolen&state=forged`);
    await page.getByText('Sign-in with the identity provider failed').waitFor({ timeout: 15_000 });
    expect(await page.locator('.notice').innerText()).toContain('the state does not match');
  }, 60_000);
});
