/**
 * People from an OpenID Connect provider (issue #47; docs/security.md "People"), against a real
 * provider (oidc-provider on loopback: test/fixtures/oidc-provider.ts) and an in-process hub with
 * --oidc-issuer: the CLI's device flow end to end (the test is the person at the browser) and
 * logout; the code flow at the hub's routes; the role × project matrix for people by user and by
 * group (0 leaks of another project); and the attacks: an ID token of another issuer, for another
 * audience, expired; groups changed since sign-in (take effect at the refresh); a member removed
 * from the Project (cut at the next request) or at the provider (cut within the refresh interval).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { eventStream } from './fixtures/token-streams.js';
import { hubApi } from './fixtures/host-workloads.js';
import {
  actAsUser,
  browse,
  hubCodeFlow,
  idTokenFrom,
  startTestProvider,
  type TestProvider,
} from './fixtures/oidc-provider.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort } from './ports.js';

const REFRESH_MS = 1_000;
const FACTORY_SECRETS = ['the-factory-line', 'boss@factory.example', 'factory-ops'];

let dir: string;
let hub: Hub;
let idp: TestProvider;
let otherIdp: TestProvider;

type Answer = { status: number; json: any };
const call = (token: string, method: string, p: string, body?: unknown): Promise<Answer> =>
  hubApi({ url: hub.url, token: hub.adminToken }, method, p, body, token);
const project = (name: string, spec: object) => ({ kind: 'Project', metadata: { name }, spec });
const workload = (name: string) => ({
  kind: 'Workload',
  metadata: { name },
  spec: { manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: '1' } }] },
});

const SHOP_MEMBERS = [
  { group: 'shop-viewers', role: 'viewer' },
  { group: 'shop-devs', role: 'operator' },
  { group: 'shop-admins', role: 'admin' },
  { user: 'vic@example.com', role: 'viewer' },
  { user: 'otto', role: 'operator' },
  { user: 'ada@example.com', role: 'admin' },
];

beforeAll(async () => {
  dir = tempDir('outpost-oidc-');
  const port = await freePort();
  const accounts = {
    alice: { email: 'alice@example.com', groups: ['shop-devs'] },
    gina: { email: 'gina@example.com', groups: ['shop-viewers'] },
    adam: { email: 'adam@example.com', groups: ['shop-admins'] },
    vic: { email: 'vic@example.com', groups: [] },
    otto: { email: 'otto@example.com', groups: [] },
    ada: { email: 'ada@example.com', groups: [] },
    bob: { email: 'bob@example.com', groups: [] },
    dave: { email: 'dave@example.com', groups: ['shop-devs'] },
    nobody: { email: 'nobody@example.com', groups: ['strangers'] },
  };
  idp = await startTestProvider({
    redirectUris: [`http://127.0.0.1:${port}/auth/oidc/callback`],
    accounts,
    idTokenTtl: 5,
  });
  otherIdp = await startTestProvider({ accounts });
  fs.writeFileSync(path.join(dir, 'client-secret'), `${idp.clientSecret}\n`, { mode: 0o600 });
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: `127.0.0.1:${port}`,
    insecureHttp: true,
    oidc: {
      issuer: idp.issuer,
      clientId: idp.clientId,
      clientSecretFile: path.join(dir, 'client-secret'),
      refreshMs: REFRESH_MS,
    },
  });
  const admin = hub.adminToken;
  for (const p of [
    project('shop', { members: [...SHOP_MEMBERS, { user: 'bob@example.com', role: 'viewer' }] }),
    project('factory', {
      description: 'the-factory-line',
      members: [
        { user: 'boss@factory.example', role: 'admin' },
        { group: 'factory-ops', role: 'operator' },
      ],
    }),
  ]) {
    const r = await call(admin, 'POST', '/api/v1/projects', p);
    expect(r.status, JSON.stringify(r.json)).toBe(201);
  }
  const w = await call(admin, 'POST', '/api/v1/projects/factory/workloads', workload('factory-app'));
  expect(w.status, JSON.stringify(w.json)).toBeLessThan(300);
}, 60_000);

afterAll(async () => {
  await hub?.close();
  await idp?.close();
  await otherIdp?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function signIn(login: string, projectName?: string): Promise<string> {
  const r = await hubCodeFlow(hub.url, login, projectName);
  if (!r.token) throw new Error(`sign-in of ${login} failed: ${r.error}`);
  return r.token;
}

const whoami = (token: string) => call(token, 'GET', '/api/v1/whoami');

describe('people from an OpenID Connect provider', () => {
  it('the CLI signs in with the device flow end to end, names the person, and logs out', async () => {
    const env = { OUTPOST_CONFIG: path.join(dir, 'cli', 'config.json') };
    let printed = '';
    const login = runCli(['login', '--oidc', '--hub', hub.url], { env, onStdout: (t) => (printed += t) });
    const url = await waitFor(() => /open (http\S+) in a browser/.exec(printed)?.[1], {
      what: 'the verification URL',
      timeout: 20_000,
    }).catch((e: Error) => {
      throw new Error(`${e.message}; printed: ${printed}`);
    });
    expect(url).toContain(idp.issuer);
    expect(printed).toMatch(/code [A-Z]{4}-[A-Z]{4}/);
    await actAsUser(url, 'alice');
    const done = await login;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain('logged in to');
    expect(done.stdout).toContain('as alice@example.com (operator in project shop');
    const cfg = JSON.parse(fs.readFileSync(env.OUTPOST_CONFIG, 'utf8')) as { token: string; project: string };
    expect(cfg.project).toBe('shop');

    const who = await runCli(['whoami'], { env });
    expect(who.stdout).toContain('person:   alice@example.com');
    expect(who.stdout).toContain('role:     operator');

    // Acts under her name: the event of the change names the person, not a token.
    const made = await runCli(['apply', '-f', '-'], {
      env,
      stdin: JSON.stringify(workload('alice-app')),
    });
    expect(made.code, made.stderr).toBe(0);
    const events = await call(hub.adminToken, 'GET', '/api/v1/projects/shop/events');
    expect(JSON.stringify(events.json)).toContain('operator alice@example.com (session');

    // The Kubernetes API names her too (kubectl auth whoami).
    const review = await call(cfg.token, 'POST', '/k8s/apis/authentication.k8s.io/v1/selfsubjectreviews', {});
    expect(review.json.status.userInfo.username).toBe('outpost:person:alice@example.com');

    const out = await runCli(['logout'], { env });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('the session of alice@example.com');
    expect(fs.existsSync(env.OUTPOST_CONFIG)).toBe(false);
    expect((await whoami(cfg.token)).status).toBe(401);
  }, 90_000);

  it('the role × project matrix for people by user and by group: their project only, their role only, 0 leaks', async () => {
    const people: [string, 'viewer' | 'operator' | 'admin', string][] = [
      ['gina', 'viewer', 'group'],
      ['alice', 'operator', 'group'],
      ['adam', 'admin', 'group'],
      ['vic', 'viewer', 'user (email)'],
      ['otto', 'operator', 'user (subject)'],
      ['ada', 'admin', 'user (email)'],
    ];
    let leaks = 0;
    let asked = 0;
    let aboutFactory = 0;
    for (const [login, role, how] of people) {
      const t = await signIn(login);
      const answers: Answer[] = [];
      const ask = async (method: string, p: string, body?: unknown) => {
        const a = await call(t, method, p, body);
        answers.push(a);
        return a;
      };
      const who = await ask('GET', '/api/v1/whoami');
      expect(who.json, `${login} by ${how}`).toMatchObject({ role, project: 'shop' });
      const list = await ask('GET', '/api/v1/projects');
      expect(list.json.items.map((p: any) => p.metadata.name)).toEqual(['shop']);
      expect((await ask('GET', '/api/v1/projects/shop/workloads')).status).toBe(200);
      const write = await ask('POST', '/api/v1/projects/shop/workloads', workload(`w-${login}`));
      expect(write.status, `${login} (${role}) writes in shop`).toBe(role === 'viewer' ? 403 : 201);
      const token = await ask('POST', '/api/v1/tokens/api', { role: 'viewer', project: 'shop' });
      expect(token.status, `${login} (${role}) makes a token`).toBe(role === 'admin' ? 201 : 403);
      if (role === 'admin') {
        const listed = await ask('GET', '/api/v1/tokens');
        const made = listed.json.items.find((x: { id: string }) => x.id === token.json.id);
        expect(made.description).toMatch(new RegExp(`^created by admin ${login}@example.com \\(session [0-9a-f]+\\)$`));
      }
      for (const [m, p, b] of [
        ['GET', '/api/v1/projects/factory'],
        ['GET', '/api/v1/projects/factory/workloads'],
        ['GET', '/api/v1/projects/factory/workloads/factory-app'],
        ['GET', '/api/v1/projects/factory/events'],
        ['POST', '/api/v1/projects/factory/workloads', workload(`x-${login}`)],
        ['DELETE', '/api/v1/projects/factory/workloads/factory-app'],
        ['PUT', '/api/v1/projects/factory', project('factory', { description: 'taken' })],
        ['PATCH', '/api/v1/projects/factory', { spec: { description: 'patched' } }],
        ['POST', '/api/v1/apply', { objects: [project('factory', { description: 'applied' })] }],
        ['DELETE', '/api/v1/projects/factory'],
        ['POST', '/api/v1/tokens/api', { role: 'admin', project: 'factory' }],
      ] as [string, string, unknown?][]) {
        const a = await ask(m, p, b);
        aboutFactory++;
        expect([403, 404], `${login}: ${m} ${p} -> ${a.status}`).toContain(a.status);
      }
      asked += answers.length;
      for (const a of answers) if (FACTORY_SECRETS.some((s) => JSON.stringify(a.json).includes(s))) leaks++;
    }
    expect({ leaks, asked, aboutFactory }).toEqual({ leaks: 0, asked: 98, aboutFactory: 66 });
    // factory's workload is untouched.
    expect((await call(hub.adminToken, 'GET', '/api/v1/projects/factory/workloads/factory-app')).status).toBe(200);
  }, 120_000);

  it('refuses a code-flow callback in a browser that did not start the sign-in (login CSRF), and a code used twice', async () => {
    // The attacker signs in and stops at the hub's callback, code and state in hand.
    const attacker = await browse(`${hub.url}/auth/oidc/login`, 'alice', (u) => u.includes('/auth/oidc/callback'));
    expect(attacker.url).toContain('code=');
    // The victim's browser opens the link: no state cookie of its own.
    const res = await fetch(attacker.url, { redirect: 'manual' });
    const to = new URL(res.headers.get('location')!, hub.url);
    expect(new URLSearchParams(to.hash.slice(1)).get('signin-error')).toContain('the state does not match');
    expect(new URLSearchParams(to.hash.slice(1)).get('session')).toBeNull();
    // The state is spent: even with the cookie, the same callback does not make a session.
    const state = new URL(attacker.url).searchParams.get('state')!;
    const again = await fetch(attacker.url, { redirect: 'manual', headers: { cookie: `outpost_oidc_state=${state}` } });
    expect(new URL(again.headers.get('location')!, hub.url).hash).toContain('signin-error=');
  }, 60_000);

  it('refuses a sign-in of a person who is a member of no project, or not of the project asked for', async () => {
    expect((await hubCodeFlow(hub.url, 'nobody')).error).toContain('nobody@example.com is not a member of any project');
    expect((await hubCodeFlow(hub.url, 'alice', 'factory')).error).toContain('is not a member of project factory');
  }, 60_000);

  it('accepts an ID token of its issuer for its client, and refuses one of another issuer, another audience, or expired', async () => {
    const good = await idTokenFrom(idp, { id: idp.clientId, secret: idp.clientSecret }, 'alice');
    const ok = await call('', 'POST', '/api/v1/auth/oidc/token', { idToken: good });
    expect(ok.status, JSON.stringify(ok.json)).toBe(201);
    expect((await whoami(ok.json.token)).json).toMatchObject({ person: 'alice@example.com', role: 'operator' });

    const foreign = await idTokenFrom(otherIdp, { id: otherIdp.clientId, secret: otherIdp.clientSecret }, 'alice');
    const a = await call('', 'POST', '/api/v1/auth/oidc/token', { idToken: foreign });
    expect(a.status).toBe(401);
    expect(a.json.error.message).toContain('the ID token is not accepted');

    const otherAudience = await idTokenFrom(idp, { id: idp.otherClientId, secret: idp.otherClientSecret }, 'alice');
    const b = await call('', 'POST', '/api/v1/auth/oidc/token', { idToken: otherAudience });
    expect(b.status).toBe(401);
    expect(b.json.error.message).toContain('aud');

    const exp = (JSON.parse(Buffer.from(good.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp;
    await waitFor(() => Date.now() / 1000 > exp + 1, { timeout: 15_000, what: 'the ID token to expire' });
    const c = await call('', 'POST', '/api/v1/auth/oidc/token', { idToken: good });
    expect(c.status).toBe(401);
    expect(c.json.error.message).toContain('exp');

    const tampered = `${good.slice(0, -4)}AAAA`;
    expect((await call('', 'POST', '/api/v1/auth/oidc/token', { idToken: tampered })).status).toBe(401);
  }, 90_000);

  it('groups changed at the provider since sign-in take effect at the refresh; a member removed there is cut within the interval', async () => {
    idp.accounts.set('dave', { email: 'dave@example.com', groups: ['shop-devs'] });
    const t = await signIn('dave');
    expect((await whoami(t)).json.role).toBe('operator');
    idp.accounts.set('dave', { email: 'dave@example.com', groups: ['shop-viewers'] });
    const changedAt = Date.now();
    await waitFor(async () => (await whoami(t)).json.role === 'viewer', {
      timeout: 10 * REFRESH_MS,
      what: 'the refresh to bring the new groups',
    });
    const groupsS = (Date.now() - changedAt) / 1000;
    expect((await call(t, 'POST', '/api/v1/projects/shop/workloads', workload('dave-app'))).status).toBe(403);
    // Gone from the provider: the refresh is refused and the session ends, its open event stream too.
    const stream = eventStream(hub.url, 'shop', t);
    await stream.opened;
    idp.accounts.delete('dave');
    const deletedAt = Date.now();
    await waitFor(async () => (await whoami(t)).status === 401, {
      timeout: 10 * REFRESH_MS,
      what: 'the session of a person the provider no longer knows to end',
    });
    await waitFor(() => stream.endedAt(), { timeout: 5_000, what: "the person's event stream to end" });
    console.log(
      `people: with --oidc-refresh-interval ${REFRESH_MS / 1000} s, changed groups took effect after ${groupsS.toFixed(2)} s, a person deleted at the provider was cut after ${((Date.now() - deletedAt) / 1000).toFixed(2)} s (stream included)`,
    );
    stream.close();
  }, 60_000);

  it('a member removed from the Project is cut at the next request, while the session is open', async () => {
    const t = await signIn('bob');
    expect((await whoami(t)).json).toMatchObject({ person: 'bob@example.com', role: 'viewer', project: 'shop' });
    const r = await call(hub.adminToken, 'PUT', '/api/v1/projects/shop', project('shop', { members: SHOP_MEMBERS }));
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect((await whoami(t)).status).toBe(401);
  }, 60_000);
});
