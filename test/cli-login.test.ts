// login and the trust it sets up, against an HTTPS server with the hub's real certificates
// (hub/tls.ts): the CA is pinned by the token, written to the config file, and used (with
// verification) by every later command.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureHubTls, type HubTls } from '../hub/tls.js';
import { tempDir } from './helpers.js';
import { apiToken, FakeHub, runCli } from './fixtures/cli.js';

let tls: HubTls;
let other: HubTls;
let hub: FakeHub;
let dir: string;
let config: string;

beforeAll(async () => {
  dir = tempDir('outpost-cli-login-');
  tls = await ensureHubTls(path.join(dir, 'hub'), { hosts: [] });
  other = await ensureHubTls(path.join(dir, 'other'), { hosts: [] });
  hub = await FakeHub.start({ cert: tls.certPem, key: tls.keyPem });
  hub.on('GET /api/v1/whoami', { body: { role: 'operator', project: 'shop', tokenId: '0123456789abcdef' } });
  hub.on('GET /api/v1/projects/shop/workloads', { body: { items: [] } });
});
afterAll(async () => {
  await hub.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  config = path.join(dir, `cfg-${Math.random().toString(36).slice(2)}`, 'config.json');
  hub.requests.length = 0;
});

describe('login', () => {
  it('pins the CA from the token, checks the token, writes a 0600 config that later commands use', async () => {
    const token = apiToken(tls.caFingerprint);
    const r = await runCli(['login', '--hub', hub.url, '--token', token], { env: { OUTPOST_CONFIG: config } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`logged in to ${hub.url} as operator (project shop); config written to ${config}\n`);
    expect(fs.statSync(config).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(fs.readFileSync(config, 'utf8'));
    expect(saved).toEqual({ hub: hub.url, token, ca: expect.stringContaining('BEGIN CERTIFICATE'), project: 'shop' });
    expect(hub.find('GET', '/api/v1/whoami')!.headers.authorization).toBe(`Bearer ${token}`);

    // A later command: the config's hub, token, CA and project, no environment needed.
    const g = await runCli(['get', 'workloads'], { env: { OUTPOST_CONFIG: config } });
    expect(g.code).toBe(0);
    expect(g.stderr).toBe('No workloads found in project shop.\n');
  });

  it('refuses a hub whose CA is not the one the token pins, and writes nothing', async () => {
    const r = await runCli(['login', '--hub', hub.url, '--token', apiToken(other.caFingerprint)], {
      env: { OUTPOST_CONFIG: config },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /presented a CA with fingerprint [0-9a-f]{64}, but the token pins [0-9a-f]{64}: the token is for another hub, or someone is intercepting the connection/,
    );
    expect(fs.existsSync(config)).toBe(false);
  });

  it('--ca FILE must hold the pinned CA', async () => {
    const wrong = path.join(dir, 'other-ca.pem');
    fs.writeFileSync(wrong, other.caPem);
    const r = await runCli(['login', '--hub', hub.url, '--token', apiToken(tls.caFingerprint), '--ca', wrong], {
      env: { OUTPOST_CONFIG: config },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`the CA file ${wrong} does not contain the CA the token pins`);
    const right = path.join(dir, 'ca.pem');
    fs.writeFileSync(right, tls.caPem);
    const ok = await runCli(['login', '--hub', hub.url, '--token', apiToken(tls.caFingerprint), '--ca', right], {
      env: { OUTPOST_CONFIG: config },
    });
    expect(ok.code).toBe(0);
  });

  it('a token without a pin against a hub with a private CA fails verification: never trusts blindly', async () => {
    const r = await runCli(['login', '--hub', hub.url, '--token', apiToken('none')], {
      env: { OUTPOST_CONFIG: config },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/presented a certificate the pinned CA does not vouch for/);
    expect(fs.existsSync(config)).toBe(false);
  });

  it('a config whose CA belongs to another hub fails verification on later commands', async () => {
    fs.mkdirSync(path.dirname(config), { recursive: true });
    fs.writeFileSync(
      config,
      JSON.stringify({ hub: hub.url, token: apiToken('none'), ca: other.caPem, project: 'shop' }),
    );
    const r = await runCli(['get', 'workloads'], { env: { OUTPOST_CONFIG: config } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /certificate the pinned CA does not vouch for .*run `outpost login --hub URL --token T` again/,
    );
  });

  it('OUTPOST_HUB/OUTPOST_TOKEN work without a config: the pin is fetched for the run', async () => {
    const r = await runCli(['get', 'wl'], {
      env: { OUTPOST_CONFIG: config, OUTPOST_HUB: hub.url, OUTPOST_TOKEN: apiToken(tls.caFingerprint) },
    });
    expect(r.code).toBe(0);
    // The token's project came from whoami.
    expect(r.stderr).toBe('No workloads found in project shop.\n');
    expect(fs.existsSync(config)).toBe(false);
  });

  it('an unreadable config says how to fix it', async () => {
    fs.mkdirSync(path.dirname(config), { recursive: true });
    fs.writeFileSync(config, '{not json');
    const r = await runCli(['get', 'wl'], { env: { OUTPOST_CONFIG: config } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `the CLI config ${config} is not valid JSON: run \`outpost login --hub URL --token T\` to write it again`,
    );
  });
});
