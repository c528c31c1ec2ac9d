import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseUnit, splitExecLine } from '../core/systemd.js';
import { readEdgeConfig, writeEdgeConfig } from './config.js';
import { enrollOnce } from './enroll.js';
import { edgeUnit, installEdge } from './install.js';

// A well-formed join token; no hub is contacted by the tests below.
const JOIN = `opj1.${'a'.repeat(64)}.0123456789abcdef.${'s'.repeat(43)}`;

let dir: string;
let fakeExe: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-edge-install-'));
  fakeExe = path.join(dir, 'outpost-build');
  fs.writeFileSync(fakeExe, '#!/bin/sh\n', { mode: 0o755 });
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const base = () => ({
  dataDir: path.join(dir, 'edge'),
  unitDir: path.join(dir, 'units'),
  bin: path.join(dir, 'bin', 'outpost'),
  packaged: true,
  execPath: fakeExe,
});
const unit = (driver: 'process' | 'podman' | 'kubernetes') =>
  parseUnit(
    edgeUnit({
      bin: '/usr/local/bin/outpost',
      dataDir: '/var/lib/outpost-edge',
      driver,
      name: 'shop-1',
      hub: 'https://hub:7443',
    }),
  );

describe('outpost edge install: the unit', () => {
  it('carries the run flags install was given into ExecStart (--blob-budget, --home-redial, --process-stable-run)', () => {
    const u = parseUnit(
      edgeUnit({
        bin: '/usr/local/bin/outpost',
        dataDir: '/var/lib/outpost-edge',
        driver: 'process',
        name: 'shop-1',
        hub: 'https://hub:7443',
        blobBudgetBytes: 4 * 1024 ** 3,
        homeRedialMs: 30_000,
        processStableMs: 5_000,
      }),
    );
    expect(splitExecLine(u.Service.ExecStart[0])).toEqual([
      '/usr/local/bin/outpost',
      'edge',
      '--data',
      '/var/lib/outpost-edge',
      '--blob-budget',
      String(4 * 1024 ** 3),
      '--home-redial',
      '30000ms',
      '--process-stable-run',
      '5000ms',
    ]);
  });

  it('runs the agent on its data dir only (enrollment is done), restarts always', () => {
    for (const d of ['process', 'podman', 'kubernetes'] as const) {
      const u = unit(d);
      expect(splitExecLine(u.Service.ExecStart[0])).toEqual([
        '/usr/local/bin/outpost',
        'edge',
        '--data',
        '/var/lib/outpost-edge',
      ]);
      expect(u.Service.Restart).toEqual(['always']);
      expect(u.Unit.Description[0]).toContain(`shop-1 (hub https://hub:7443, ${d} driver)`);
      // No NODE_OPTIONS: the agent applies its V8 and malloc settings itself (edge/process-settings.ts).
      expect(u.Service.Environment).toEqual(['"OUTPOST_CACHE_DIR=/var/cache/outpost-edge"']);
    }
  });

  it('process driver: workloads survive agent restarts (KillMode=process); sandboxed to the data dir and /tmp', () => {
    const u = unit('process');
    expect(u.Service.KillMode).toEqual(['process']);
    expect(u.Service.NoNewPrivileges).toEqual(['yes']);
    expect(u.Service.ProtectSystem).toEqual(['strict']);
    expect(u.Service.ReadWritePaths).toEqual(['/var/lib/outpost-edge /tmp /var/tmp']);
    // A private /tmp is removed when the service stops, under workloads that keep running.
    expect(u.Service.PrivateTmp).toBeUndefined();
  });

  it('podman driver: conmon and containers survive too; no file system sandbox podman could not work in', () => {
    const u = unit('podman');
    expect(u.Service.KillMode).toEqual(['process']);
    expect(u.Service.ProtectSystem).toBeUndefined();
    expect(u.Service.NoNewPrivileges).toBeUndefined();
  });

  it('kubernetes driver: nothing runs locally, so the default KillMode and the tightest sandbox', () => {
    const u = unit('kubernetes');
    expect(u.Service.KillMode).toBeUndefined();
    expect(u.Service.ProtectSystem).toEqual(['strict']);
    expect(u.Service.ReadWritePaths).toEqual(['/var/lib/outpost-edge']);
    expect(u.Service.ProtectHome).toEqual(['read-only']);
    expect(u.Service.CapabilityBoundingSet).toEqual(['']);
  });
});

describe('outpost edge install: steps', () => {
  it('--dry-run prints every step and the unit, contacts no hub and changes nothing', async () => {
    // Port 9 on loopback: nothing listens; a dry run must not try.
    const out = await installEdge({
      ...base(),
      hub: 'https://127.0.0.1:9',
      joinToken: JOIN,
      name: 'shop-1',
      labels: { region: 'eu' },
      dryRun: true,
    });
    expect(out).toMatch(/^dry run: nothing was changed/);
    expect(out).toContain(`enroll edge shop-1 with https://127.0.0.1:9 (driver process, labels region=eu)`);
    expect(out).toContain(`write ${path.join(dir, 'units', 'outpost-edge.service')} (mode 0644):`);
    expect(out).toContain('    KillMode=process');
    expect(out).toContain('systemctl daemon-reload && systemctl enable --now outpost-edge');
    expect(fs.readdirSync(dir)).toEqual(['outpost-build']);
  });

  it('refuses before changing anything: no hub or token, a bad token, a bad name, kubernetes without a kubeconfig', async () => {
    await expect(installEdge({ ...base() })).rejects.toThrow(/--hub URL and --join-token T/);
    await expect(installEdge({ ...base(), hub: 'https://h:1', joinToken: 'opt1.x.y.z' })).rejects.toThrow(
      /not a join token/,
    );
    await expect(installEdge({ ...base(), hub: 'https://h:1', joinToken: JOIN, name: 'Bad_Name' })).rejects.toThrow(
      /--name Bad_Name/,
    );
    await expect(
      installEdge({ ...base(), hub: 'https://h:1', joinToken: JOIN, name: 'k', driver: 'kubernetes' }),
    ).rejects.toThrow(/--kubeconfig/);
    await expect(
      installEdge({
        ...base(),
        hub: 'https://h:1',
        joinToken: JOIN,
        name: 'k',
        packaged: false,
        execPath: process.execPath,
      }),
    ).rejects.toThrow(/dist\/outpost edge install/);
    expect(fs.readdirSync(dir)).toEqual(['outpost-build']);
  });

  it('a failed enrollment writes no unit', async () => {
    await expect(
      installEdge({
        ...base(),
        hub: 'http://127.0.0.1:9',
        joinToken: JOIN.replace(/^opj1\.a+/, 'opj1.none'),
        name: 'shop-1',
      }),
    ).rejects.toThrow(/enrolling edge shop-1 .* no unit was written/);
    expect(fs.existsSync(path.join(dir, 'units'))).toBe(false);
  });

  it('on an enrolled data dir (a reinstall) keeps the identity, writes the unit and needs no hub', async () => {
    const p = base();
    writeEdgeConfig(p.dataDir, {
      hub: 'https://127.0.0.1:9',
      name: 'shop-1',
      project: 'default',
      credential: 'c',
      driver: 'podman',
    });
    await expect(installEdge({ ...p, name: 'other' })).rejects.toThrow(/already belongs to edge shop-1/);
    await expect(installEdge({ ...p, driver: 'process' })).rejects.toThrow(/enrolled with the podman driver/);
    const out = await installEdge({ ...p });
    expect(out).toContain('kept the enrollment of edge shop-1 with https://127.0.0.1:9');
    const u = parseUnit(fs.readFileSync(path.join(p.unitDir, 'outpost-edge.service'), 'utf8'));
    expect(u.Unit.Description[0]).toContain('podman driver');
    expect(fs.statSync(p.dataDir).mode & 0o777).toBe(0o700);
    expect(fs.readFileSync(p.bin, 'utf8')).toBe('#!/bin/sh\n');
    const r = spawnSync('systemd-analyze', ['verify', path.join(p.unitDir, 'outpost-edge.service')], {
      encoding: 'utf8',
    });
    expect(r.error, 'systemd-analyze (package systemd, installed by build/setup.sh)').toBeUndefined();
    expect(r.stderr + r.stdout).toBe('');
  });
});

describe('--interconnect-address (kubernetes: where the pods reach this host)', () => {
  const enrolled = () => {
    const p = base();
    writeEdgeConfig(p.dataDir, {
      hub: 'https://127.0.0.1:9',
      name: 'kube-1',
      project: 'default',
      credential: 'c',
      driver: 'kubernetes',
      kubeconfig: '/etc/k.yaml',
    });
    return p;
  };

  it('refuses what pods cannot reach before changing anything', async () => {
    const p = enrolled();
    for (const [bad, why] of [
      ['10.0.0', /not an IP address/],
      ['127.0.0.1', /a loopback or unspecified address/],
      ['0.0.0.0', /a loopback or unspecified address/],
    ] as const)
      await expect(installEdge({ ...p, interconnectAddress: bad })).rejects.toThrow(why);
    expect(fs.existsSync(p.unitDir)).toBe(false);
    expect(readEdgeConfig(p.dataDir)?.interconnectAddress).toBeUndefined();
    // Enrolling: refused before the hub is asked (it would hold an edge this host never wrote down).
    await expect(
      enrollOnce(
        { dataDir: path.join(dir, 'fresh'), hub: 'http://127.0.0.1:9', joinToken: JOIN, interconnectAddress: '::1' },
        'test',
      ),
    ).rejects.toThrow(/--interconnect-address ::1: a loopback/);
    expect(fs.existsSync(path.join(dir, 'fresh'))).toBe(false);
  });

  it('is kept in edge.json by install and by a later start, and auto clears it', async () => {
    const p = enrolled();
    expect(await installEdge({ ...p, interconnectAddress: '10.0.0.5' })).toContain('interconnect address: 10.0.0.5');
    expect(readEdgeConfig(p.dataDir)?.interconnectAddress).toBe('10.0.0.5');
    expect((await enrollOnce({ dataDir: p.dataDir }, 'test')).interconnectAddress).toBe('10.0.0.5');
    expect((await enrollOnce({ dataDir: p.dataDir, interconnectAddress: 'fd00::7' }, 'test')).interconnectAddress).toBe(
      'fd00::7',
    );
    expect(readEdgeConfig(p.dataDir)?.interconnectAddress).toBe('fd00::7');
    expect((await enrollOnce({ dataDir: p.dataDir, interconnectAddress: 'auto' }, 'test')).interconnectAddress).toBe(
      undefined,
    );
    expect(readEdgeConfig(p.dataDir)?.interconnectAddress).toBeUndefined();
  });
});
