/**
 * Installing on a host through the packaged executable, with systemd's paths moved to a temp dir
 * (systemd cannot run here): `outpost hub install` and `outpost edge install` write their units, the
 * installed copy is then started with exactly the unit's ExecStart (as systemd would, minus the
 * sandbox) and works; the edge unit needs nothing but --data because install enrolled it.
 *
 * Then versioning of the data directories: a hub or edge data dir that a newer binary migrated
 * (its schema_versions row bumped) is refused with a clear message and exit code 1.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUnit, splitExecLine } from '../../core/systemd.js';
import { tempDir, waitFor } from '../helpers.js';
import { freePort } from '../procs.js';
import { DIST_BUNDLE } from '../../build/build.js';
import { buildOnce, EXE, Exe, ok, run } from './binary.js';

let dir: string;
let units: string;
let bin: string;
let hubData: string;
let edgeData: string;
let port: number;
let env: Record<string, string>;
const procs: Exe[] = [];

function execStart(unitFile: string): string[] {
  const u = parseUnit(fs.readFileSync(unitFile, 'utf8'));
  expect(u.Service.ExecStart).toHaveLength(1);
  return splitExecLine(u.Service.ExecStart[0]);
}

/** Starts what the unit's ExecStart says, from the root directory, as systemd would. */
function startUnit(unitFile: string): Exe {
  const [program, ...args] = execStart(unitFile);
  const p = new Exe(args, {}, { exe: program, cwd: '/' });
  procs.push(p);
  return p;
}

function bumpSchema(dbFile: string, component: string): void {
  const db = new Database(dbFile);
  try {
    const r = db.prepare('UPDATE schema_versions SET version = version + 1 WHERE component = ?').run(component);
    expect(r.changes).toBe(1);
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  await buildOnce();
  dir = tempDir('outpost-e2e-install-');
  units = path.join(dir, 'etc', 'systemd', 'system');
  bin = path.join(dir, 'usr', 'local', 'bin', 'outpost');
  hubData = path.join(dir, 'var', 'lib', 'outpost-hub');
  edgeData = path.join(dir, 'var', 'lib', 'outpost-edge');
  port = await freePort();
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
}, 240_000);

afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM');
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('outpost hub install / edge install through the executable', () => {
  it('refuses to install when run unpackaged, naming the file to use', async () => {
    // `node dist/outpost.cjs`: the same code, but the running program is node itself.
    const r = await run(
      [DIST_BUNDLE, 'hub', 'install', '--data', hubData, '--unit-dir', units, '--bin', bin],
      {},
      { exe: process.execPath, cwd: dir },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error: outpost hub install installs the running executable, but this is not the packaged outpost .*npm run build.*dist\/outpost hub install/,
    );
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('hub install --dry-run prints the unit and changes nothing', async () => {
    const out = await ok([
      'hub',
      'install',
      '--dry-run',
      '--data',
      hubData,
      '--listen',
      `127.0.0.1:${port}`,
      '--unit-dir',
      units,
      '--bin',
      bin,
    ]);
    expect(out).toContain(`copy ${EXE} -> ${bin} (mode 0755)`);
    expect(out).toContain(`    ExecStart=${bin} hub --data ${hubData} --listen 127.0.0.1:${port}`);
    expect(out).toContain('    Restart=always');
    expect(out).toContain('systemctl daemon-reload && systemctl enable --now outpost-hub');
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('hub install writes the unit, the binary and the data dir; the unit command runs a hub', async () => {
    const out = await ok([
      'hub',
      'install',
      '--data',
      hubData,
      '--listen',
      `127.0.0.1:${port}`,
      '--unit-dir',
      units,
      '--bin',
      bin,
    ]);
    expect(out).toContain(`wrote ${path.join(units, 'outpost-hub.service')}`);
    expect(fs.statSync(hubData).mode & 0o777).toBe(0o700);
    expect(fs.statSync(bin).size).toBe(fs.statSync(EXE).size);
    const unit = path.join(units, 'outpost-hub.service');
    // The Helm chart renderer beside the executable (npm run build puts it in dist/ when Go is
    // there) is installed beside --bin and named in the unit.
    const helm = fs.existsSync(path.join(path.dirname(EXE), 'outpost-helm'))
      ? ['--helm', path.join(path.dirname(bin), 'outpost-helm')]
      : [];
    expect(execStart(unit)).toEqual([bin, 'hub', '--data', hubData, '--listen', `127.0.0.1:${port}`, ...helm]);
    if (helm.length) expect(fs.statSync(helm[1]!).mode & 0o777).toBe(0o755);

    const hub = startUnit(unit);
    await waitFor(
      () =>
        /listening on https:\/\/127\.0\.0\.1:\d+/.test(hub.err) ||
        (hub.alive ? null : Promise.reject(new Error(hub.tail()))),
      { timeout: 30_000, what: 'installed hub to listen' },
    );
    const admin = fs.readFileSync(path.join(hubData, 'admin.token'), 'utf8').trim();
    // stderr is the journal under systemd: the secret stays in the 0600 file.
    expect(hub.err).toContain(`admin token created in ${hubData}/admin.token`);
    expect(hub.err).not.toContain(admin);
    await ok(['login', '--hub', `https://127.0.0.1:${port}`, '--token', admin], env);
  });

  it('edge install enrolls at once and writes a unit that needs only --data; the unit command runs the edge', async () => {
    const join = (await ok(['token', 'create', '--ttl', '10m'], env)).trim();
    // Run from the installed copy: the binary is already in place and is kept.
    const r = await run(
      [
        'edge',
        'install',
        '--hub',
        `https://127.0.0.1:${port}`,
        '--join-token',
        join,
        '--name',
        'site-1',
        '--labels',
        'region=eu',
        '--driver',
        'process',
        '--data',
        edgeData,
        '--unit-dir',
        units,
        '--bin',
        bin,
      ],
      {},
      { exe: bin, cwd: '/' },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`kept ${bin} (the running executable is already there)`);
    expect(r.stdout).toContain(
      `enrolled edge site-1 with https://127.0.0.1:${port} (driver process, labels region=eu)`,
    );
    expect(fs.statSync(edgeData).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(edgeData, 'edge.json')).mode & 0o777).toBe(0o600);
    const unit = path.join(units, 'outpost-edge.service');
    expect(execStart(unit)).toEqual([bin, 'edge', '--data', edgeData]);
    expect(parseUnit(fs.readFileSync(unit, 'utf8')).Service.KillMode).toEqual(['process']);

    startUnit(unit);
    const e = await waitFor(
      async () => {
        const x = JSON.parse(await ok(['get', 'edge', 'site-1', '-o', 'json'], env));
        return x.status.phase === 'Online' ? x : null;
      },
      { timeout: 30_000, what: 'installed edge Online' },
    );
    expect(e.metadata.labels).toEqual({ region: 'eu' });
  });

  it('systemd-analyze verify accepts both units', () => {
    for (const u of ['outpost-hub.service', 'outpost-edge.service']) {
      const r = spawnSync('systemd-analyze', ['verify', path.join(units, u)], { encoding: 'utf8' });
      expect(r.stderr + r.stdout, u).toBe('');
      expect(r.status).toBe(0);
    }
  });

  it('a data dir written by a newer binary is refused with the fix and exit code 1 (hub and edge)', async () => {
    for (const p of procs) await p.kill('SIGTERM');
    bumpSchema(path.join(hubData, 'hub.db'), 'hub');
    const hub = await run(execStart(path.join(units, 'outpost-hub.service')).slice(1), {}, { exe: bin, cwd: '/' });
    expect(hub.code).toBe(1);
    expect(hub.stderr).toMatch(
      /^error: the hub data in .*hub\.db has schema version \d+, but this outpost [\d.]+ only knows up to \d+: it was written by a newer outpost\. Run the newer binary, or restore a backup taken before the upgrade\./m,
    );
    expect(hub.stderr).not.toMatch(/\n\s+at /);

    bumpSchema(path.join(edgeData, 'edge.db'), 'replica');
    const edge = await run(['edge', '--data', edgeData], {}, { exe: bin, cwd: '/' });
    expect(edge.code).toBe(1);
    expect(edge.stderr).toMatch(
      /the replica data in .*edge\.db has schema version \d+, but this outpost [\d.]+ only knows up to \d+: it was written by a newer outpost/,
    );
  });
});
