/**
 * The CLI's failover between a hub's replica URLs (issue #42; cli/failover.ts), the CLI in-process
 * against imitations of the hub's API on loopback (test/fixtures/cli.ts FakeHub, a test double)
 * and a port nobody listens on: a URL that cannot be reached is skipped for any request; a 503
 * answer is skipped for a GET but a POST that got one is never sent again; the CLI says which URL
 * answered; `login` takes the URLs comma-separated or with --hub again and stores them in order.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiToken, FakeHub, runCli } from './fixtures/cli.js';
import { tempDir } from './helpers.js';

let dir: string;
let busy: FakeHub;
let good: FakeHub;
/** A loopback URL where nothing listens: connections are refused. */
let down: string;

const unavailable = { status: 503, body: { error: { code: 'unavailable', message: 'the database is away' } } };

beforeAll(async () => {
  dir = tempDir('outpost-cli-failover-');
  busy = await FakeHub.start();
  good = await FakeHub.start();
  busy.on('GET /api/v1/projects/default/edges', unavailable);
  busy.on('POST /api/v1/projects/default/edges/e1/labels', unavailable);
  good.on('GET /api/v1/projects/default/edges', { body: { items: [], total: 0 } });
  good.on('POST /api/v1/projects/default/edges/e1/labels', { body: {} });
  for (const h of [busy, good]) h.on('GET /api/v1/whoami', { body: { role: 'admin', project: '*', tokenId: 't1' } });
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  down = `http://127.0.0.1:${(s.address() as net.AddressInfo).port}`;
  await new Promise<void>((r) => s.close(() => r()));
});

afterAll(async () => {
  await busy.close();
  await good.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const env = (hubs: string[]) => ({ OUTPOST_HUB: hubs.join(','), OUTPOST_TOKEN: apiToken() });

describe('several hub URLs', () => {
  it('a GET answered 503 goes to the next URL, and the CLI says which one answered', async () => {
    const r = await runCli(['get', 'edges'], { env: env([busy.url, good.url]) });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`note: hub ${busy.url} answered 503: answered by ${good.url}`);
    expect(good.find('GET', '/api/v1/projects/default/edges')).toBeDefined();
  });

  it('a POST answered 503 is never sent to the next URL: it may have taken effect', async () => {
    const before = good.requests.length;
    const r = await runCli(['edge', 'label', 'e1', 'x=y'], { env: env([busy.url, good.url]) });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the database is away/);
    expect(r.stderr).toMatch(/not sent to the next hub URL: a POST that may have reached a hub is never sent twice/);
    expect(good.requests.slice(before).filter((q) => q.method === 'POST')).toEqual([]);
  });

  it('a POST that could not connect goes to the next URL', async () => {
    const r = await runCli(['edge', 'label', 'e1', 'x=y'], { env: env([down, good.url]) });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`note: hub ${down} did not answer (ECONNREFUSED): answered by ${good.url}`);
    expect(good.find('POST', '/api/v1/projects/default/edges/e1/labels')?.body).toEqual({ labels: { x: 'y' } });
  });

  it('no URL answering names them all', async () => {
    const r = await runCli(['get', 'edges'], { env: env([down, `${down}/`]) });
    expect(r.code).toBe(1);
    // The same URL twice is tried once: one URL, its own message.
    expect(r.stderr).toMatch(/cannot reach the hub at http:\/\/127\.0\.0\.1:\d+: is it running\?/);
    const two = await runCli(['get', 'edges'], { env: env([down, down.replace('127.0.0.1', 'localhost')]) });
    expect(two.stderr).toMatch(/cannot reach the hub at any of its 2 URLs \(http:\/\/127\.0\.0\.1:\d+: did not answer/);
  });

  it('login takes the URLs with --hub again or comma-separated, stores them in order, and refuses a bad one', async () => {
    const config = path.join(dir, 'config.json');
    const r = await runCli(['login', '--hub', down, '--hub', good.url, '--token', apiToken()], {
      env: { OUTPOST_CONFIG: config },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`logged in to ${down}, ${good.url} (failing over in this order)`);
    expect(r.stderr).toContain(`answered by ${good.url}`);
    expect(JSON.parse(fs.readFileSync(config, 'utf8'))).toMatchObject({ hub: down, hubs: [down, good.url] });
    const who = await runCli(['whoami'], { env: { OUTPOST_CONFIG: config } });
    expect(who.stdout).toContain(`hub:      ${good.url}`);
    expect(who.stdout).toContain(`hub URLs: ${down}, ${good.url} (tried in this order)`);

    const bad = await runCli(['login', '--hub', `${good.url},hub-2:7443`, '--token', apiToken()], {
      env: { OUTPOST_CONFIG: path.join(dir, 'other.json') },
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--hub: "hub-2:7443" is not a hub URL: give https://HOST:PORT');
    expect(fs.existsSync(path.join(dir, 'other.json'))).toBe(false);
  });
});
