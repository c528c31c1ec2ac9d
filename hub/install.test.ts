import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseUnit, splitExecLine } from '../core/systemd.js';
import { hubUnit, installHub } from './install.js';

let dir: string;
let fakeExe: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-hub-install-'));
  // Stands in for the packaged executable: install copies whatever file it runs from.
  fakeExe = path.join(dir, 'outpost-build');
  fs.writeFileSync(fakeExe, '#!/bin/sh\necho fake outpost\n', { mode: 0o755 });
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const paths = () => ({
  dataDir: path.join(dir, 'var', 'hub'),
  unitDir: path.join(dir, 'units'),
  bin: path.join(dir, 'bin', 'outpost'),
});

describe('outpost hub install', () => {
  it('the unit runs the installed binary on the data dir, restarts always, and is sandboxed to its data dir', () => {
    const u = parseUnit(
      hubUnit({
        bin: '/usr/local/bin/outpost',
        dataDir: '/var/lib/outpost-hub',
        listen: '0.0.0.0:7443',
        hosts: ['hub.example.com'],
        requireApproval: true,
      }),
    );
    expect(splitExecLine(u.Service.ExecStart[0])).toEqual([
      '/usr/local/bin/outpost',
      'hub',
      '--data',
      '/var/lib/outpost-hub',
      '--listen',
      '0.0.0.0:7443',
      '--host',
      'hub.example.com',
      '--require-approval',
    ]);
    expect(u.Service.Restart).toEqual(['always']);
    expect(u.Service.NoNewPrivileges).toEqual(['yes']);
    expect(u.Service.ProtectSystem).toEqual(['strict']);
    expect(u.Service.ReadWritePaths).toEqual(['/var/lib/outpost-hub']);
    expect(u.Service.ProtectHome).toEqual(['yes']);
    expect(Number(u.Service.LimitNOFILE[0])).toBeGreaterThanOrEqual(65536);
    expect(u.Service.CapabilityBoundingSet).toEqual(['']);
    // The addon cache must be writable under ProtectSystem=strict: a systemd-managed cache dir.
    expect(u.Service.CacheDirectory).toEqual(['outpost-hub']);
    expect(u.Service.Environment).toEqual(['"OUTPOST_CACHE_DIR=/var/cache/outpost-hub"']);
    expect(u.Install.WantedBy).toEqual(['multi-user.target']);
    expect(u.Unit.After).toEqual(['network-online.target']);
  });

  it('carries the identity provider flags into the unit, the client secret by its file only', () => {
    const exec = splitExecLine(
      parseUnit(
        hubUnit({
          bin: '/b',
          dataDir: '/d',
          listen: '0.0.0.0:7443',
          oidcIssuer: 'https://idp.example/realms/acme',
          oidcClientId: 'outpost',
          oidcClientSecretFile: '/etc/outpost/oidc-secret',
          oidcGroupsClaim: 'roles',
          oidcRefreshInterval: 120_000,
        }),
      ).Service.ExecStart[0]!,
    );
    expect(exec.join(' ')).toContain(
      '--oidc-issuer https://idp.example/realms/acme --oidc-client-id outpost --oidc-client-secret-file /etc/outpost/oidc-secret --oidc-groups-claim roles --oidc-refresh-interval 120000ms',
    );
  });

  it('installs the Helm chart renderer beside the executable and names it with --helm', () => {
    const p = paths();
    const renderer = path.join(dir, 'outpost-helm-build');
    fs.writeFileSync(renderer, '#!/bin/sh\necho fake renderer\n', { mode: 0o755 });
    const out = installHub({ ...p, listen: '127.0.0.1:7443', packaged: true, execPath: fakeExe, helm: renderer });
    const installed = path.join(path.dirname(p.bin), 'outpost-helm');
    expect(out).toContain(`copied ${renderer} -> ${installed}`);
    expect(fs.readFileSync(installed, 'utf8')).toBe(fs.readFileSync(renderer, 'utf8'));
    expect(fs.statSync(installed).mode & 0o777).toBe(0o755);
    const unit = parseUnit(fs.readFileSync(path.join(p.unitDir, 'outpost-hub.service'), 'utf8'));
    expect(splitExecLine(unit.Service.ExecStart[0]!).join(' ')).toContain(`--helm ${installed}`);
  });

  it('keeps the one capability needed to listen below 1024, and refuses a bad --listen', () => {
    expect(
      parseUnit(hubUnit({ bin: '/b', dataDir: '/d', listen: '0.0.0.0:443' })).Service.CapabilityBoundingSet,
    ).toEqual(['CAP_NET_BIND_SERVICE']);
    expect(() => hubUnit({ bin: '/b', dataDir: '/d', listen: '7443' })).toThrow(/HOST:PORT/);
  });

  it('--dry-run prints every file with its content and changes nothing', () => {
    const p = paths();
    const out = installHub({ ...p, listen: '127.0.0.1:7443', dryRun: true, packaged: true, execPath: fakeExe });
    expect(out).toMatch(/^dry run: nothing was changed/);
    expect(out).toContain(`copy ${fakeExe} -> ${p.bin} (mode 0755)`);
    expect(out).toContain(`create directory ${p.dataDir} (mode 0700)`);
    expect(out).toContain(`write ${path.join(p.unitDir, 'outpost-hub.service')} (mode 0644):`);
    expect(out).toContain(`    ExecStart=${p.bin} hub --data ${p.dataDir} --listen 127.0.0.1:7443`);
    expect(out).toContain('systemctl daemon-reload && systemctl enable --now outpost-hub');
    expect(fs.readdirSync(dir)).toEqual(['outpost-build']);
  });

  it('installs: binary copied, data dir 0700, unit written; a second run replaces the unit and keeps the data', () => {
    const p = paths();
    const out = installHub({ ...p, listen: '0.0.0.0:7443', packaged: true, execPath: fakeExe });
    expect(out).toContain(`copied ${fakeExe} -> ${p.bin}`);
    expect(fs.readFileSync(p.bin, 'utf8')).toBe(fs.readFileSync(fakeExe, 'utf8'));
    expect(fs.statSync(p.bin).mode & 0o777).toBe(0o755);
    expect(fs.statSync(p.dataDir).mode & 0o777).toBe(0o700);
    const unitFile = path.join(p.unitDir, 'outpost-hub.service');
    expect(fs.statSync(unitFile).mode & 0o777).toBe(0o644);
    expect(splitExecLine(parseUnit(fs.readFileSync(unitFile, 'utf8')).Service.ExecStart[0]).slice(0, 4)).toEqual([
      p.bin,
      'hub',
      '--data',
      p.dataDir,
    ]);
    fs.writeFileSync(path.join(p.dataDir, 'hub.db'), 'data');

    // Run from the installed copy: nothing to copy, the unit is rewritten, the data stays.
    const again = installHub({ ...p, listen: '0.0.0.0:7444', packaged: true, execPath: p.bin });
    expect(again).toContain(`kept ${p.bin} (the running executable is already there)`);
    expect(again).toContain(`replaced ${unitFile}`);
    expect(fs.readFileSync(unitFile, 'utf8')).toContain('--listen 0.0.0.0:7444');
    expect(fs.readFileSync(path.join(p.dataDir, 'hub.db'), 'utf8')).toBe('data');
    expect(fs.readdirSync(path.dirname(p.bin))).toEqual(['outpost']);
  });

  it('refuses to install node itself when not running as the packaged executable', () => {
    expect(() =>
      installHub({ ...paths(), listen: '0.0.0.0:7443', packaged: false, execPath: process.execPath }),
    ).toThrow(/npm run build.*dist\/outpost hub install/);
  });

  it('says how to fix a path it may not write', () => {
    fs.writeFileSync(path.join(dir, 'file'), '');
    // root ignores directory modes; a file where a directory must be fails for everyone.
    expect(() =>
      installHub({
        ...paths(),
        unitDir: path.join(dir, 'file', 'units'),
        listen: '0.0.0.0:7443',
        packaged: true,
        execPath: fakeExe,
      }),
    ).toThrow(/cannot write .*outpost-hub.service/);
  });

  it('systemd-analyze verify accepts the written unit', () => {
    const p = paths();
    installHub({ ...p, listen: '0.0.0.0:7443', packaged: true, execPath: fakeExe });
    const r = spawnSync('systemd-analyze', ['verify', path.join(p.unitDir, 'outpost-hub.service')], {
      encoding: 'utf8',
    });
    expect(r.stderr + r.stdout).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('outpost hub install for a replica on PostgreSQL', () => {
  it('keeps the database URL in a 0600 environment file, out of the unit and of --dry-run; the identity key and advertise URL go on ExecStart', () => {
    const o = {
      dataDir: path.join(dir, 'replica-data'),
      listen: '0.0.0.0:7443',
      unitDir: path.join(dir, 'replica-units'),
      bin: path.join(dir, 'replica-bin', 'outpost'),
      packaged: true,
      execPath: fakeExe,
      database: 'postgres://outpost:s3cret"pw@db.example:5432/outpost',
      identityKey: '/etc/outpost/identity.key',
      advertiseUrl: 'https://hub-1.internal:7443',
      blobDir: '/srv/outpost-blobs',
    };
    const dry = installHub({ ...o, dryRun: true });
    expect(dry).not.toContain('s3cret');
    expect(dry).toContain(`write ${path.join(o.dataDir, 'hub.env')} (mode 0600; not shown: it holds a password)`);
    installHub(o);
    const envFile = path.join(o.dataDir, 'hub.env');
    expect(fs.statSync(envFile).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(envFile, 'utf8')).toBe(
      'OUTPOST_DATABASE="postgres://outpost:s3cret\\"pw@db.example:5432/outpost"\n',
    );
    const unitText = fs.readFileSync(path.join(o.unitDir, 'outpost-hub.service'), 'utf8');
    expect(unitText).not.toContain('s3cret');
    const u = parseUnit(unitText);
    expect(u.Service.EnvironmentFile).toEqual([envFile]);
    expect(splitExecLine(u.Service.ExecStart[0]).slice(-6)).toEqual([
      '--identity-key',
      '/etc/outpost/identity.key',
      '--advertise-url',
      'https://hub-1.internal:7443',
      '--blob-dir',
      '/srv/outpost-blobs',
    ]);
    // The shared blob directory is writable under ProtectSystem=strict.
    expect(u.Service.ReadWritePaths).toEqual([`${o.dataDir} /srv/outpost-blobs`]);
    expect(() => installHub({ ...o, database: 'mysql://x@y/z', dryRun: true })).toThrow(
      /--database mysql:\/\/x@y\/z: it is a mysql URL: use postgres:/,
    );
  });
});
