/**
 * People from an OpenID Connect provider on a hub whose tables are in PostgreSQL (issue #47 with
 * issue #22): the people_sessions table migrated there, a sign-in at the code flow, a refresh that
 * brings changed groups, and logout, against a real provider (test/fixtures/oidc-provider.ts) and
 * a real PostgreSQL (test/fixtures/postgres.ts). The rules are test/people-oidc.test.ts's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../hub/hub.js';
import { hubApi } from './fixtures/host-workloads.js';
import { hubCodeFlow, startTestProvider, type TestProvider } from './fixtures/oidc-provider.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort } from './ports.js';

const server = new TestPostgres();
let dir: string;
let hub: Hub;
let idp: TestProvider;

beforeAll(async () => {
  dir = tempDir('outpost-oidc-pg-');
  await server.start();
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
    database: server.createDatabase('hub'),
    oidc: {
      issuer: idp.issuer,
      clientId: idp.clientId,
      clientSecretFile: path.join(dir, 'client-secret'),
      refreshMs: 1_000,
    },
  });
  const r = await hubApi({ url: hub.url, token: hub.adminToken }, 'POST', '/api/v1/projects', {
    kind: 'Project',
    metadata: { name: 'shop' },
    spec: {
      members: [
        { group: 'shop-devs', role: 'operator' },
        { group: 'shop-viewers', role: 'viewer' },
      ],
    },
  });
  expect(r.status).toBe(201);
}, 120_000);

afterAll(async () => {
  await hub?.close();
  await idp?.close();
  await server.remove();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('people on a hub with its tables in PostgreSQL', () => {
  it('signs in, refreshes changed groups, and logs out', async () => {
    const { token, error } = await hubCodeFlow(hub.url, 'alice');
    expect(error).toBeUndefined();
    const whoami = () => hubApi({ url: hub.url, token: token! }, 'GET', '/api/v1/whoami');
    expect((await whoami()).json).toMatchObject({ person: 'alice@example.com', role: 'operator', project: 'shop' });
    idp.accounts.set('alice', { email: 'alice@example.com', groups: ['shop-viewers'] });
    await waitFor(async () => (await whoami()).json.role === 'viewer', { timeout: 10_000, what: 'the refresh' });
    const out = await hubApi({ url: hub.url, token: token! }, 'POST', '/api/v1/auth/logout', {});
    expect(out.status).toBe(200);
    expect((await whoami()).status).toBe(401);
  }, 60_000);
});
