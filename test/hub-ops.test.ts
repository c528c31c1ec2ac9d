/**
 * The hub as an operator runs it: a real `outpost hub` process with TLS on loopback, driven by the
 * real CLI (login with the CA pinned in the token), enrollment with approval, join token expiry,
 * and an online backup taken while the hub is writing, then restored.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startHubProc, type HubProc } from './procs.js';

let dir: string;
let hub: HubProc;
let env: Record<string, string>;
const procs: Proc[] = [];

const wl = (name: string) => `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata:
  name: ${name}
spec:
  manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata: { name: ${name} }
      data: { k: v }
`;

beforeAll(async () => {
  dir = tempDir();
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--require-approval']);
  procs.push(hub.proc);
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  const login = await cli(['login', '--hub', hub.url, '--token', hub.token], env);
  expect(login.stderr + login.stdout).not.toMatch(/error/i);
  expect(login.code).toBe(0);
});

afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('hub operations through the CLI (TLS, pinned CA)', () => {
  it('login verified the hub with the CA pinned in the token, and the config is private', async () => {
    expect(hub.url).toMatch(/^https:/);
    expect(fs.statSync(env.OUTPOST_CONFIG).mode & 0o777).toBe(0o600);
    const who = await cli(['whoami'], env);
    expect(who.code).toBe(0);
    expect(who.stdout).toMatch(/admin/);
  });

  it('new edges wait as Pending until approved; an expired join token is refused with the fix', async () => {
    const t = await cli(['token', 'create', '--labels', 'tier=small'], env);
    expect(t.code).toBe(0);
    const edgeDir = path.join(dir, 'edge');
    const edge = new Proc([
      'edge',
      '--data',
      edgeDir,
      '--hub',
      hub.url,
      '--join-token',
      t.stdout.trim(),
      '--name',
      'pending-1',
      '--driver',
      'process',
    ]);
    procs.push(edge);
    const pending = await waitFor(
      async () => {
        const r = await cli(['get', 'edge', 'pending-1', '-o', 'json'], env);
        return r.code === 0 && JSON.parse(r.stdout).status.phase === 'Pending' ? true : null;
      },
      { timeout: 30_000, what: 'edge Pending' },
    );
    expect(pending).toBe(true);
    expect((await cli(['edge', 'approve', 'pending-1'], env)).code).toBe(0);
    await waitFor(
      async () =>
        JSON.parse((await cli(['get', 'edge', 'pending-1', '-o', 'json'], env)).stdout).status.phase === 'Online',
      { timeout: 30_000, what: 'edge Online after approval' },
    );

    const short = await cli(['token', 'create', '--ttl', '1s'], env);
    await new Promise((r) => setTimeout(r, 1_500));
    const late = await cli(
      [
        'edge',
        '--data',
        path.join(dir, 'late'),
        '--hub',
        hub.url,
        '--join-token',
        short.stdout.trim(),
        '--name',
        'late-1',
      ],
      env,
    );
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/expired/);
    expect(late.stderr).toMatch(/outpost token create/);
  });

  it('bad usage exits 2, a failure exits 1 with what to do', async () => {
    expect((await cli(['get', 'gizmos'], env)).code).toBe(2);
    const missing = await cli(['get', 'placement', 'nope'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/not found/);
  });

  it('takes a consistent online backup while the hub is writing; a hub started on the copy has the data', async () => {
    let written = 0;
    let stop = false;
    const writer = (async () => {
      for (let i = 0; i < 40 && !stop; i++) {
        const f = path.join(dir, `w${i}.yaml`);
        fs.writeFileSync(f, wl(`w${i}`));
        const r = await cli(['apply', '-f', f], env);
        if (r.code === 0) written = i + 1;
      }
    })();
    await waitFor(() => written >= 3, { timeout: 60_000, what: 'writes under way' });
    const before = written;
    const backupFile = path.join(dir, 'backup.db');
    const b = await cli(['hub', 'backup', '--data', path.join(dir, 'hub'), '--to', backupFile]);
    expect(b.code).toBe(0);
    stop = true;
    await writer;
    // Restore: the copy as hub.db beside the TLS files (tokens pin the CA), on another port.
    const restored = path.join(dir, 'restored');
    fs.mkdirSync(restored);
    fs.copyFileSync(backupFile, path.join(restored, 'hub.db'));
    fs.cpSync(path.join(dir, 'hub', 'tls'), path.join(restored, 'tls'), { recursive: true });
    fs.copyFileSync(path.join(dir, 'hub', 'admin.token'), path.join(restored, 'admin.token'));
    const second = await startHubProc(restored, await freePort());
    procs.push(second.proc);
    const list = await cli(['get', 'workloads', '-o', 'json'], {
      OUTPOST_HUB: second.url,
      OUTPOST_TOKEN: hub.token,
      OUTPOST_CONFIG: path.join(dir, 'none.json'),
    });
    expect(list.code).toBe(0);
    const names = (JSON.parse(list.stdout).items ?? JSON.parse(list.stdout)).map((w: any) => w.metadata.name);
    expect(names.length).toBeGreaterThanOrEqual(before);
    for (let i = 0; i < before; i++) expect(names).toContain(`w${i}`);
  });
});
