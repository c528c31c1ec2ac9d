/**
 * One edge agent per data directory (edge/agent-lock.ts), with real processes: a hub, an edge agent
 * (process driver) dialling it through a proxy the test can cut, and a second `outpost edge` on the
 * same directory. Then an agent upgrade whose release is a wrapper script starting the real binary
 * (not exec'ing it): the launcher is killed -9 during the trial and started again, as systemd does
 * with Restart=always. Before the lock, that left the wrapper's real agent running beside the
 * restarted one: two agents on one replica, replacing each other's hub connection, one deleting the
 * other's agent.sock. Agents on the directory are counted as the processes holding its edge.db.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { isRunning, processRef, readLockHolder } from '../edge/agent-lock.js';
import { releaseBundle, releaseDir } from './fixtures/release-bundle.js';
import { readUpgradeState } from '../edge/upgrade/switch.js';
import { hubApi } from './fixtures/host-workloads.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, CuttableProxy, freePort, Proc, startEdgeProc, startHubProc, type HubProc } from './procs.js';

let dir: string;
let bundleDir: string | undefined;
let edgeDir: string;
let hub: HubProc;
let proxy: CuttableProxy;
let edge: Proc;
let cliEnv: Record<string, string>;

/** The processes that have this directory's replica open: the agents running on it. */
function agentsOn(data: string): number[] {
  const db = path.join(data, 'edge.db');
  const out: number[] = [];
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${p}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = fs.readlinkSync(`/proc/${p}/fd/${fd}`);
      } catch {
        continue;
      }
      if (target === db) {
        out.push(Number(p));
        break;
      }
    }
  }
  return out;
}

/** Processes whose arguments name the directory (agents, launchers, the wrapper script). */
function processesOn(data: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)
    .filter((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').includes(data);
      } catch {
        return false;
      }
    })
    .map(Number);
}

const status = async (): Promise<{ connection?: string } | undefined> => {
  const r = await cli(['edge', '--data', edgeDir, 'local', 'status', '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as { connection: string }) : undefined;
};
const connected = async () => (await status())?.connection === 'connected';

/**
 * Pushes a release that is a wrapper script starting the real agent as its child (not exec'ing
 * it): stopping the script leaves the agent running. Brings it to the edge; returns its YAML file.
 */
async function pushWrapperRelease(version: string): Promise<string> {
  // The real agent built as `version` (build/sea/bundle.ts): a release's binary must report the
  // version it is signed as (agent push refuses another, and an agent on trial checks itself).
  bundleDir ??= releaseDir('outpost-lock-test-');
  const agent = path.join(bundleDir, `outpost-${version}.cjs`);
  await releaseBundle(agent, { version, commit: 'locktest' });
  const wrapper = path.join(dir, `outpost-wrapper-${version}`);
  fs.writeFileSync(wrapper, `#!/bin/sh\n${process.execPath} ${agent} "$@"\n`, { mode: 0o755 });
  const pushed = await cli(['agent', 'push', wrapper, '--release-version', version], cliEnv);
  expect(pushed.stderr).toBe('');
  const digest = (parse(pushed.stdout) as { spec: { release: { digest: string } } }).spec.release.digest;
  const release = path.join(dir, `release-${version}.yaml`);
  fs.writeFileSync(release, pushed.stdout);
  expect((await cli(['edge', '--data', edgeDir, 'local', 'blob', 'pull', digest])).code).toBe(0);
  await waitFor(() => fs.existsSync(path.join(edgeDir, 'blobs', 'sha256', digest.slice(7))), {
    timeout: 30_000,
    what: 'the release on the edge',
  });
  return release;
}

beforeAll(async () => {
  dir = tempDir('outpost-lock-');
  edgeDir = path.join(dir, 'edge');
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http', '--scanner', 'none']);
  cliEnv = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token, OUTPOST_PROJECT: 'default' };
  proxy = new CuttableProxy(Number(new URL(hub.url).port));
  const port = await proxy.listen();
  const join = await hubApi(hub, 'POST', '/api/v1/tokens/join', {});
  edge = await startEdgeProc(edgeDir, [
    ...['--hub', `http://127.0.0.1:${port}`, '--join-token', join.json.token, '--name', 'lock-1'],
  ]);
  await waitFor(connected, { timeout: 30_000, what: 'edge connected' });
}, 120_000);

afterAll(async () => {
  if (bundleDir) fs.rmSync(bundleDir, { recursive: true, force: true });
  await edge?.kill();
  // A trial agent or wrapper left behind (by a failed assertion, or the old code): end every
  // process started on the directory.
  for (const pid of processesOn(edgeDir))
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  await proxy?.close();
  await hub?.proc.kill();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('one agent per data directory', () => {
  it('a second outpost edge on the directory is refused naming the running one; it starts once that one is killed -9', async () => {
    const first = edge.child.pid!;
    const second = new Proc(['edge', '--data', edgeDir]);
    try {
      const code = await waitFor(
        () => (second.alive ? null : `exit ${second.child.exitCode ?? second.child.signalCode}`),
        {
          timeout: 30_000,
          what: 'the second agent to be refused',
        },
      );
      expect(code).toBe('exit 1');
    } finally {
      await second.kill();
    }
    expect(second.err).toMatch(
      new RegExp(`is in use by outpost edge \\(pid ${first}, since [^)]+\\): one edge agent per data directory`),
    );
    expect(second.err).toContain(`kill ${first}`);
    // The first runs on undisturbed: its replica, its socket, its connection.
    expect(edge.alive).toBe(true);
    expect(agentsOn(edgeDir)).toEqual([first]);
    await waitFor(connected, { timeout: 30_000, what: 'the first agent connected' });

    // outpost edge uninstall refuses too, naming it, and removes nothing.
    const units = path.join(dir, 'units');
    fs.mkdirSync(units, { recursive: true });
    const u = await cli(['edge', 'uninstall', '--data', edgeDir, '--unit-dir', units, '--yes']);
    expect(u.code).not.toBe(0);
    expect(u.stderr).toContain(`an edge agent still runs on ${edgeDir}: outpost edge (pid ${first}`);
    expect(u.stderr).toContain('nothing was removed');
    expect(fs.existsSync(path.join(edgeDir, 'edge.json'))).toBe(true);

    await edge.kill('SIGKILL');
    edge = await startEdgeProc(edgeDir);
    await waitFor(connected, { timeout: 30_000, what: 'the second agent connected' });
    expect(agentsOn(edgeDir)).toEqual([edge.child.pid]);
    expect(readLockHolder(edgeDir)?.pid).toBe(edge.child.pid);
  }, 120_000);

  it('kill -9 of the launcher during a trial of a wrapper-script release, then a restart: one agent, connected, with its socket', async () => {
    const release = await pushWrapperRelease('9.9.4');

    // The hub out of reach: the new agent cannot pass the health gate, so the trial lasts.
    proxy.sever();
    await waitFor(async () => (await status())?.connection !== 'connected', { what: 'edge disconnected' });
    const launcher = edge.child.pid!;
    expect((await cli(['edge', '--data', edgeDir, 'local', 'upgrade', release, '--deadline', '600'])).code).toBe(0);
    // The new agent runs: the launcher closed its own agent, the trial agent has the replica open.
    const trialAgent = processRef(
      await waitFor(
        () => {
          const on = agentsOn(edgeDir);
          return on.length === 1 && on[0] !== launcher ? on[0] : null;
        },
        { timeout: 60_000, what: 'the trial agent alone on the replica' },
      ),
    );
    expect(readUpgradeState(edgeDir)).toMatchObject({ state: 'trial', version: '9.9.4', starts: 1 });
    const trialHolder = readLockHolder(edgeDir);

    await edge.kill('SIGKILL');
    proxy.heal();
    // The trial agent outlives its launcher (KillMode=process keeps it, as kill -9 does).
    expect(isRunning(trialAgent)).toBe(true);
    edge = await startEdgeProc(edgeDir);
    expect(readUpgradeState(edgeDir)).toMatchObject({ state: 'rolled-back', version: '9.9.4' });
    expect(readUpgradeState(edgeDir)!.reason).toMatch(/interrupted before it committed/);
    expect(isRunning(trialAgent)).toBe(false);
    await waitFor(connected, { timeout: 60_000, what: 'the restarted agent connected' });
    expect(agentsOn(edgeDir)).toEqual([edge.child.pid]);
    expect(fs.existsSync(path.join(edgeDir, 'agent.sock'))).toBe(true);
    expect(readLockHolder(edgeDir)).toMatchObject({ pid: edge.child.pid, what: 'outpost edge' });
    // The trial agent had taken the lock the launcher handed over, recording that launcher.
    expect(trialHolder).toMatchObject({ pid: trialAgent.pid, launcher: { pid: launcher } });
  }, 180_000);
  it('a wrapper-script release that misses its deadline is rolled back: the real agent it started is ended too', async () => {
    const release = await pushWrapperRelease('9.9.5');
    proxy.sever();
    await waitFor(async () => (await status())?.connection !== 'connected', { what: 'edge disconnected' });
    const launcher = edge.child.pid!;
    expect((await cli(['edge', '--data', edgeDir, 'local', 'upgrade', release, '--deadline', '8'])).code).toBe(0);
    const trialAgent = processRef(
      await waitFor(
        () => {
          const on = agentsOn(edgeDir);
          return on.length === 1 && on[0] !== launcher ? on[0] : null;
        },
        { timeout: 60_000, what: 'the trial agent alone on the replica' },
      ),
    );
    await waitFor(() => readUpgradeState(edgeDir)?.state === 'rolled-back', { timeout: 60_000, what: 'rollback' });
    expect(readUpgradeState(edgeDir)!.reason).toMatch(
      /release 9\.9\.5: it did not connect to the hub and reconcile within 8 s/,
    );
    proxy.heal();
    await waitFor(connected, { timeout: 60_000, what: 'the old agent connected again' });
    expect(isRunning(trialAgent)).toBe(false);
    expect(agentsOn(edgeDir)).toEqual([launcher]);
    expect(edge.alive).toBe(true);
  }, 180_000);

  it('a wrapper-script release that passes is committed: the trial agent is gone before the committed binary runs', async () => {
    const release = await pushWrapperRelease('9.9.6');
    const launcher = edge.child.pid!;
    expect((await cli(['edge', '--data', edgeDir, 'local', 'upgrade', release, '--deadline', '120'])).code).toBe(0);
    const trialAgent = processRef(
      await waitFor(
        () => {
          const on = agentsOn(edgeDir);
          return on.length === 1 && on[0] !== launcher ? on[0] : null;
        },
        { timeout: 60_000, what: 'the trial agent alone on the replica' },
      ),
    );
    await waitFor(() => readUpgradeState(edgeDir)?.state === 'committed', { timeout: 90_000, what: 'commit' });
    // The committed wrapper runs in the launcher's pid; its agent is its child.
    await waitFor(() => agentsOn(edgeDir).some((pid) => pid !== trialAgent.pid), {
      timeout: 60_000,
      what: 'the committed agent on the replica',
    });
    await waitFor(connected, { timeout: 60_000, what: 'the committed agent connected' });
    expect(isRunning(trialAgent)).toBe(false);
    const on = agentsOn(edgeDir);
    expect(on).toHaveLength(1);
    expect(readLockHolder(edgeDir)?.pid).toBe(on[0]);
    expect(edge.alive).toBe(true);
    expect(edge.child.pid).toBe(launcher);
  }, 180_000);
});
