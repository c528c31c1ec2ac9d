/**
 * Tokens as an operator meets them (issue 14, items 5 and 6): a real `outpost hub` process with
 * TLS, the real CLI and real edge agents. Join tokens are admin-only, expire by default and their
 * labels bind; the agent takes its join token from a file or the environment, never leaving it in
 * `ps`; API and join tokens are listed and revoked; the first-start admin token rotates.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOIN_TOKEN_DEFAULT_TTL_MS } from '../core/durations.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startEdgeProc, startHubProc, type HubProc } from './procs.js';

let dir: string;
let hub: HubProc;
let env: Record<string, string>;
const procs: Proc[] = [];

interface TokenRow {
  id: string;
  kind: 'api' | 'join';
  project: string;
  role?: string;
  labels?: Record<string, string>;
  expiresAt: string | null;
  revokedAt: string | null;
}

async function tokens(e = env): Promise<TokenRow[]> {
  const r = await cli(['token', 'list', '-o', 'json'], e);
  expect(r.stderr).toBe('');
  return (JSON.parse(r.stdout) as { items: TokenRow[] }).items;
}

const as = (token: string) => ({
  OUTPOST_CONFIG: path.join(dir, 'none.json'),
  OUTPOST_HUB: hub.url,
  OUTPOST_TOKEN: token,
});

beforeAll(async () => {
  dir = tempDir('outpost-tokens-');
  hub = await startHubProc(path.join(dir, 'hub'), await freePort());
  procs.push(hub.proc);
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  expect((await cli(['login', '--hub', hub.url, '--token', hub.token], env)).code).toBe(0);
});

afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('join tokens (item 5)', () => {
  it('only admins mint them; without --ttl they expire after 24 h; their labels bind; the agent reads them from a file or OUTPOST_JOIN_TOKEN', async () => {
    const op = (
      await cli(['token', 'create', '--api', '--role', 'operator', '--project', 'default'], env)
    ).stdout.trim();
    const refused = await cli(['token', 'create'], as(op));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /operator token may not do this in project default: ask an admin for an admin token/,
    );

    const before = Date.now();
    const t = await cli(['token', 'create', '--labels', 'region=eu'], env);
    expect(t.code).toBe(0);
    const join = t.stdout.trim();
    const row = (await tokens()).find((r) => r.kind === 'join')!;
    expect(join).toContain(`.${row.id}.`);
    const expires = Date.parse(row.expiresAt!);
    expect(expires).toBeGreaterThanOrEqual(before + JOIN_TOKEN_DEFAULT_TTL_MS);
    expect(expires).toBeLessThanOrEqual(Date.now() + JOIN_TOKEN_DEFAULT_TTL_MS);

    // A label the token sets cannot be changed at enrollment: refused, and nothing is enrolled.
    const tokenFile = path.join(dir, 'join.token');
    fs.writeFileSync(tokenFile, `${join}\n`, { mode: 0o600 });
    const conflict = await cli([
      'edge',
      '--data',
      path.join(dir, 'conflict'),
      '--hub',
      hub.url,
      '--join-token-file',
      tokenFile,
      '--name',
      'sneaky',
      '--labels',
      'region=us',
    ]);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toMatch(
      /labels region=us conflict with the join token's region=eu: a join token's labels bind/,
    );
    expect((await cli(['get', 'edge', 'sneaky'], env)).code).toBe(1);

    // From the environment: the agent runs and its command line holds no token.
    const fromEnv = new Proc(
      ['edge', '--data', path.join(dir, 'e1'), '--hub', hub.url, '--name', 'e1', '--labels', 'site=lyon'],
      {
        OUTPOST_JOIN_TOKEN: join,
      },
    );
    procs.push(fromEnv);
    await waitFor(
      () =>
        /outpost edge e1 running/.test(fromEnv.err)
          ? true
          : fromEnv.alive
            ? null
            : Promise.reject(new Error(fromEnv.err)),
      {
        timeout: 30_000,
        what: 'edge e1 to run',
      },
    );
    const fromFile = await startEdgeProc(path.join(dir, 'e2'), [
      '--hub',
      hub.url,
      '--join-token-file',
      tokenFile,
      '--name',
      'e2',
    ]);
    procs.push(fromFile);
    const secret = join.split('.').at(-1)!;
    for (const p of [fromEnv, fromFile])
      expect(fs.readFileSync(`/proc/${p.child.pid}/cmdline`, 'utf8')).not.toContain(secret);
    const e1 = JSON.parse((await cli(['get', 'edge', 'e1', '-o', 'json'], env)).stdout);
    expect(e1.metadata.labels).toEqual({ region: 'eu', site: 'lyon' });
    const e2 = JSON.parse((await cli(['get', 'edge', 'e2', '-o', 'json'], env)).stdout);
    expect(e2.metadata.labels).toEqual({ region: 'eu' });
  }, 180_000);
});

describe('token list, revoke and rotate-admin (item 6)', () => {
  it('lists API and join tokens without secrets, revokes them at once, and rotates the admin token', async () => {
    const viewer = (
      await cli(['token', 'create', '--api', '--role', 'viewer', '--project', 'default'], env)
    ).stdout.trim();
    expect((await cli(['whoami'], as(viewer))).code).toBe(0);
    const listed = await cli(['token', 'list'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^ID\s+KIND\s+PROJECT\s+ROLE/);
    const viewerId = viewer.split('.')[2];
    expect(listed.stdout).toMatch(new RegExp(`${viewerId}\\s+api\\s+default\\s+viewer`));
    expect(listed.stdout).not.toContain(viewer.split('.').at(-1)!);

    // Viewers and operators see no tokens.
    const denied = await cli(['token', 'list'], as(viewer));
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/may not do this in project default/);

    const revoked = await cli(['token', 'revoke', viewerId], env);
    expect(revoked.stdout).toBe(`api token ${viewerId} of project default revoked\n`);
    const after = await cli(['whoami'], as(viewer));
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/not valid \(unknown, expired or revoked\)/);
    expect((await tokens()).find((t) => t.id === viewerId)!.revokedAt).not.toBeNull();

    // A revoked join token refuses the next edge, with why.
    const join = (await cli(['token', 'create'], env)).stdout.trim();
    const joinId = join.split('.')[2];
    expect((await cli(['token', 'revoke', joinId], env)).stdout).toBe(
      `join token ${joinId} of project default revoked\n`,
    );
    const late = await cli(['edge', '--data', path.join(dir, 'late'), '--hub', hub.url, '--name', 'late'], {
      OUTPOST_JOIN_TOKEN: join,
    });
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(new RegExp(`join token ${joinId} was revoked at`));

    // Rotation: a new admin token in admin.token (0600), the old one refused, the CLI's login follows.
    const file = path.join(dir, 'hub', 'admin.token');
    const rotated = await cli(['token', 'rotate-admin'], env);
    expect(rotated.code).toBe(0);
    const fresh = rotated.stdout.trim();
    expect(fresh).not.toBe(hub.token);
    expect(fs.readFileSync(file, 'utf8').trim()).toBe(fresh);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(rotated.stderr).toContain(`token ${hub.token.split('.')[2]} revoked`);
    expect((await cli(['whoami'], as(hub.token))).code).toBe(1);
    expect((await cli(['whoami'], as(fresh))).code).toBe(0);
    const who = await cli(['whoami'], env);
    expect(who.code).toBe(0);
    expect(who.stdout).toMatch(/admin/);
  }, 180_000);
});
