/**
 * Clearer failures (issue 14, item 12), with real hub and edge processes: a full disk answers 507
 * naming the disk's file instead of a generic 500; a damaged hub database names the file and the
 * fix; an edge whose replica is damaged rebuilds it from the hub and its driver instead of staying
 * down while its workloads run unsupervised.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { startFleet } from './fixtures/edge-procs.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startEdgeProc, startHubProc, type HubProc } from './procs.js';

const dirs: string[] = [];
const procs: Proc[] = [];
const mounts: string[] = [];
/** Pid files of host workloads; read before the tmpfs they may live on is unmounted. */
const pidDirs: string[] = [];

afterAll(async () => {
  for (const p of procs) await p.kill('SIGKILL');
  for (const d of pidDirs) killHostWorkloads(d);
  for (const m of mounts) execFileSync('umount', ['-l', m]);
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const workload = (name: string) => ({
  apiVersion: 'outpost.dev/v1alpha1',
  kind: 'Workload',
  metadata: { name },
  spec: { manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: 'v' } }] },
});

/**
 * A small filesystem of its own (tmpfs). Mounting one needs root, as the tests run in CI: without
 * it the test cannot show a full disk, so it fails saying why instead of passing having tested nothing.
 */
function smallDisk(dir: string, size: string): void {
  fs.mkdirSync(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    throw new Error(
      `cannot mount a ${size} tmpfs at ${dir} to fill it (${String((err as { stderr?: Buffer }).stderr ?? err).trim()}): run the tests as root, as CI does`,
    );
  }
  mounts.push(dir);
}

describe('clearer failures', () => {
  it('a full disk answers 507 naming the file whose disk is full; writes work again once there is room', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const disk = path.join(dir, 'disk');
    smallDisk(disk, '16m');
    const hub = await startHubProc(path.join(disk, 'hub'), await freePort(), ['--insecure-http']);
    procs.push(hub.proc);
    expect((await hubApi(hub, 'POST', '/api/v1/apply', { objects: [workload('before')] })).status).toBe(200);
    // Fill what is left of the disk.
    const fill = path.join(disk, 'fill');
    const fd = fs.openSync(fill, 'w');
    const chunk = Buffer.alloc(64 * 1024, 1);
    try {
      for (;;) fs.writeSync(fd, chunk);
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
    } finally {
      fs.closeSync(fd);
    }
    let r = { status: 0, json: null as any };
    for (let i = 0; i < 20 && r.status !== 507; i++)
      r = await hubApi(hub, 'POST', '/api/v1/apply', {
        objects: [workload(`full-${i}-${'x'.repeat(100_000)}`.slice(0, 60))],
      });
    expect(r.status).toBe(507);
    expect(r.json.error.code).toBe('disk_full');
    expect(r.json.error.message).toContain(path.join(disk, 'hub', 'hub.db'));
    expect(r.json.error.message).toMatch(/free space/);
    // Reads still answer.
    expect((await hubApi(hub, 'GET', '/api/v1/projects/default/workloads/before')).status).toBe(200);
    fs.rmSync(fill);
    await waitFor(
      async () => (await hubApi(hub, 'POST', '/api/v1/apply', { objects: [workload('after')] })).status === 200,
      {
        what: 'writes to succeed again after space was freed',
      },
    );
  });

  it("an edge's local API answers 507 naming edge.db when the edge's disk is full", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const disk = path.join(dir, 'disk');
    smallDisk(disk, '24m');
    const pids = path.join(disk, 'pids');
    fs.mkdirSync(pids);
    pidDirs.push(pids);
    const { hub, edge } = await startFleet({
      dir: disk,
      edgeName: 'full-1',
      labels: { site: 'f' },
      objects: [
        hostPod('idle', 'sleep 1000', { pidDir: pids }),
        {
          apiVersion: 'outpost.dev/v1alpha1',
          kind: 'Placement',
          metadata: { name: 'pf' },
          spec: { edgeSelector: { matchLabels: { site: 'f' } }, workloads: ['idle'] },
        },
      ],
      placement: 'pf',
      ready: 1,
    });
    procs.push(hub.proc, edge);
    const fill = path.join(disk, 'fill');
    const fd = fs.openSync(fill, 'w');
    try {
      for (;;) fs.writeSync(fd, Buffer.alloc(64 * 1024, 1));
    } catch {
      /* ENOSPC: the disk is full */
    } finally {
      fs.closeSync(fd);
    }
    const edgeDb = path.join(disk, 'edge', 'edge.db');
    const r = await waitFor(
      async () => {
        const p = await cli(['edge', 'local', 'pause', 'idle', '--data', path.join(disk, 'edge')]);
        // The WAL may hold a few more pages; each try writes more.
        if (p.code === 0) await cli(['edge', 'local', 'resume', 'idle', '--data', path.join(disk, 'edge')]);
        return p.code !== 0 ? p : null;
      },
      { what: 'a local write to fail on the full disk' },
    );
    expect(r.stderr + r.stdout).toContain(edgeDb);
    expect(r.stderr + r.stdout).toMatch(/is full.*free space/);
    fs.rmSync(fill);
  });

  it('a damaged hub database stops the hub with a message naming the file and the fix', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const data = path.join(dir, 'hub');
    const port = await freePort();
    const hub = await startHubProc(data, port, ['--insecure-http']);
    await hub.proc.kill('SIGTERM');
    const file = path.join(data, 'hub.db');
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, 0);
    fs.closeSync(fd);
    for (const s of ['-wal', '-shm']) fs.rmSync(file + s, { force: true });
    const again = new Proc(['hub', '--data', data, '--listen', `127.0.0.1:${port}`, '--insecure-http']);
    procs.push(again);
    const code = await new Promise<number | null>((r) => again.child.once('exit', r));
    expect(code).not.toBe(0);
    expect(again.err).toContain(file);
    expect(again.err).toMatch(/damaged.*restore the last backup/);
  });

  it('an edge whose replica is damaged rebuilds it from the hub and its driver, and reports again', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const pids = path.join(dir, 'pids');
    fs.mkdirSync(pids);
    pidDirs.push(pids);
    const { hub, edge } = await startFleet({
      dir,
      edgeName: 'damaged-1',
      labels: { site: 'd' },
      objects: [
        hostPod('sleeper', 'sleep 1000', { pidDir: pids }),
        {
          apiVersion: 'outpost.dev/v1alpha1',
          kind: 'Placement',
          metadata: { name: 'p' },
          spec: { edgeSelector: { matchLabels: { site: 'd' } }, workloads: ['sleeper'] },
        },
      ],
      placement: 'p',
      ready: 1,
    });
    procs.push(hub.proc, edge);
    await edge.kill('SIGKILL');
    const file = path.join(dir, 'edge', 'edge.db');
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, 0);
    fs.closeSync(fd);
    for (const s of ['-wal', '-shm']) fs.rmSync(file + s, { force: true });
    const hubNow = hub as HubProc;
    const again = await startEdgeProc(path.join(dir, 'edge'), [
      '--hub',
      hubNow.url,
      '--name',
      'damaged-1',
      '--driver',
      'process',
    ]);
    procs.push(again);
    expect(fs.readdirSync(path.join(dir, 'edge')).some((f) => /^edge\.db\.damaged-/.test(f))).toBe(true);
    // The rebuilt replica has the spec again and reports the workload (its report is a new epoch the hub adopts).
    await waitFor(
      async () => {
        const e = await hubApi(hubNow, 'GET', '/api/v1/projects/default/edges/damaged-1');
        const p = await hubApi(hubNow, 'GET', '/api/v1/projects/default/placements/p');
        return !!e.json.status?.connectedSince && p.json.status?.summary?.ready === 1;
      },
      { timeout: 45_000, what: 'the edge back, connected, its workload Ready' },
    );
  });
});
