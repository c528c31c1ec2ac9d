/**
 * The switch to a staged agent release with its health gate and rollback, with real processes: a
 * hub, an edge agent (process driver) and a workload on the host. Releases are pushed with
 * `outpost agent push`, brought to the edge over its connection (`edge local blob pull`) and
 * switched to with `edge local upgrade`. The good release is the real agent (this build bundled as
 * 9.9.1, build/sea/bundle.ts, behind a script that notes each start); the bad ones are test
 * doubles in test/fakes (one exits at start, one hangs: neither reports a version, so `agent push`
 * signs them as --release-version with a warning) and the good binary signed as a version it does
 * not report. The edge process keeps its pid throughout (process.execve) and the workload is
 * adopted, never restarted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { releaseBundle, releaseDir } from './fixtures/release-bundle.js';
import { readUpgradeState, type UpgradeState } from '../edge/upgrade/switch.js';
import { connectionsOf } from './fixtures/connection-history.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { ROOT, tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startEdgeProc, startHubProc, type HubProc } from './procs.js';

let dir: string;
let edgeDir: string;
let pids: string;
let hub: HubProc;
let edge: Proc;
let cliEnv: Record<string, string>;
let bundleDir: string;
const releases: Record<string, string> = {};

const edgeCli = (args: string[]) => cli(['edge', '--data', edgeDir, 'local', ...args]);
const describeEdge = async () => (await cli(['describe', 'edge', 'e1'], cliEnv)).stdout;
const state = (): UpgradeState | undefined => readUpgradeState(edgeDir);
const workloadPid = () => Number(fs.readFileSync(path.join(pids, 'steady.pid'), 'utf8'));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** Starts of the good binary as an agent so far (its script notes each). */
const goodStarts = () => {
  try {
    return fs.readFileSync(path.join(dir, 'good-starts'), 'utf8').split('\n').length - 1;
  } catch {
    return 0;
  }
};
const connected = async () => {
  const r = await edgeCli(['status', '-o', 'json']);
  return r.code === 0 && (JSON.parse(r.stdout) as { connection: string }).connection === 'connected';
};

/**
 * Pushes `file` as release `version`, brings its blob to the edge, writes the release YAML. A
 * test double cannot say its version: `agent push` warns and signs the version given.
 */
async function pushRelease(file: string, version: string, opts: { double?: boolean } = {}): Promise<string> {
  const r = await cli(['agent', 'push', file, '--release-version', version], cliEnv);
  if (opts.double) expect(r.stderr).toMatch(/^warning: .*its version is not checked here, it is signed as/);
  else expect(r.stderr).toBe('');
  const digest = (parse(r.stdout) as { spec: { release: { digest: string } } }).spec.release.digest;
  const out = path.join(dir, `release-${version}.yaml`);
  fs.writeFileSync(out, r.stdout);
  await pullToEdge(digest, version);
  return out;
}

async function pullToEdge(digest: string, version: string): Promise<void> {
  expect((await edgeCli(['blob', 'pull', digest])).code).toBe(0);
  await waitFor(() => fs.existsSync(path.join(edgeDir, 'blobs', 'sha256', digest.slice(7))), {
    timeout: 30_000,
    what: `blob of ${version} on the edge`,
  });
}

beforeAll(async () => {
  dir = tempDir('outpost-switch-');
  edgeDir = path.join(dir, 'edge');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http', '--scanner', 'none']);
  cliEnv = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token, OUTPOST_PROJECT: 'default' };
  const join = await hubApi(hub, 'POST', '/api/v1/tokens/join', { labels: { site: 'a' } });
  edge = await startEdgeProc(edgeDir, ['--hub', hub.url, '--join-token', join.json.token, '--name', 'e1']);
  await waitFor(connected, { timeout: 30_000, what: 'edge connected' });
  await hubApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      hostPod('steady', 'sleep 3600', { pidDir: pids }),
      {
        kind: 'Placement',
        metadata: { name: 'steady' },
        spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['steady'] },
      },
    ],
  });
  await waitFor(() => fs.existsSync(path.join(pids, 'steady.pid')), { timeout: 30_000, what: 'workload started' });

  // The good release: the real agent as 9.9.1, from a script that notes each start of an agent.
  bundleDir = releaseDir('outpost-switch-test-');
  await releaseBundle(path.join(bundleDir, 'outpost.cjs'), { version: '9.9.1', commit: 'switchtest' });
  const good = path.join(dir, 'outpost-good');
  fs.writeFileSync(
    good,
    `#!/bin/sh\n[ "$1" = edge ] && echo start >> ${dir}/good-starts\nexec ${process.execPath} ${path.join(bundleDir, 'outpost.cjs')} "$@"\n`,
    { mode: 0o755 },
  );
  releases.good = await pushRelease(good, '9.9.1');
  releases.exits = await pushRelease(path.join(ROOT, 'test', 'fakes', 'agent-exits-at-start'), '9.9.2', {
    double: true,
  });
  releases.hangs = await pushRelease(path.join(ROOT, 'test', 'fakes', 'agent-hangs'), '9.9.3', { double: true });
}, 120_000);

afterAll(async () => {
  await edge?.kill();
  await hub?.proc.kill();
  killHostWorkloads(pids);
  const hang = path.join(dir, 'hang.pid');
  if (fs.existsSync(hang)) killHostWorkloads(dir);
  fs.rmSync(dir, { recursive: true, force: true });
  if (bundleDir) fs.rmSync(bundleDir, { recursive: true, force: true });
});

describe('switching to a staged release', () => {
  it('a binary that exits at start is rolled back with the reason; the old agent runs on, same pid', async () => {
    const workload = workloadPid();
    const r = await edgeCli(['upgrade', releases.exits!, '--deadline', '60']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/9\.9\.2: staged as .*outpost-9\.9\.2-[0-9a-f]{12}; switching/);
    await waitFor(() => state()?.state === 'rolled-back', { timeout: 60_000, what: 'rollback' });
    // Why, and the last of what the new binary said on stderr (passed on to the launcher's too).
    const reason =
      'release 9.9.2: it exited (code 3) before it connected and reconciled; its last lines on stderr: agent-exits-at-start: broken release double, exiting';
    expect(state()!.reason).toBe(reason);
    expect(edge.err).toMatch(/broken release double/);
    expect(edge.alive).toBe(true);
    await waitFor(connected, { timeout: 30_000, what: 'old agent connected again' });
    expect((await edgeCli(['status'])).stdout).toMatch(/release 9\.9\.2: RolledBack .*exited \(code 3\)/);
    // The hub hears it in the edge's report.
    await waitFor(async () => /Agent release: +9\.9\.2 RolledBack .*exited \(code 3\)/.test(await describeEdge()), {
      timeout: 30_000,
      what: 'RolledBack on the hub',
    });
    // The edge's release history: the switch, when it ended, that it was a local upgrade, and why.
    expect(await describeEdge()).toMatch(
      new RegExp(
        `Agent release history \\(newest first, times on the edge\\):\\n\\s+ENDED\\s+VERSION\\s+FROM\\s+RESULT\\s+ORDERED BY\\s+REASON\\n\\s+\\S+ \\(\\d+[sm] ago\\)\\s+9\\.9\\.2\\s+\\S+\\s+RolledBack\\s+local upgrade\\s+${literal(reason)}\\n(?!\\s+\\S+ \\()`,
      ),
    );
    expect(workloadPid()).toBe(workload);
    expect(alive(workload)).toBe(true);
    // The hub's history says why the agent's connection ended: it restarted for the switch.
    const why = 'closed by the edge (1001: agent upgrade: restarting to switch to release 9.9.2)';
    expect((await connectionsOf(hub.url, hub.token, 'e1')).map((c) => c.reason)).toContain(why);
    expect(await describeEdge()).toContain(why);
  }, 120_000);

  it('a binary that hangs is killed at the deadline and rolled back', async () => {
    const hangPid = path.join(dir, 'hang.pid');
    edge = await restartEdgeWith({ OUTPOST_FAKE_HANG_PID: hangPid });
    const r = await edgeCli(['upgrade', releases.hangs!, '--deadline', '3']);
    expect(r.code).toBe(0);
    await waitFor(() => state()?.version === '9.9.3' && state()?.state === 'rolled-back', {
      timeout: 60_000,
      what: 'rollback',
    });
    expect(state()!.reason).toMatch(/it did not connect to the hub and reconcile within 3 s/);
    const hung = Number(fs.readFileSync(hangPid, 'utf8'));
    expect(hung).toBeGreaterThan(0);
    expect(alive(hung)).toBe(false);
    await waitFor(connected, { timeout: 30_000, what: 'old agent connected again' });
  }, 120_000);

  it('a kill -9 during the trial: the next start counts the start and rolls back, never runs nothing', async () => {
    const hangPid = path.join(dir, 'hang.pid');
    fs.rmSync(hangPid, { force: true });
    expect((await edgeCli(['upgrade', releases.hangs!, '--deadline', '600'])).code).toBe(0);
    // The double writes its pid with `echo`: the file exists a moment before its content does.
    const pidIn = (f: string) => (fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) : 0);
    await waitFor(() => pidIn(hangPid) > 0 && state()?.state === 'trial' && state()?.trialPid === pidIn(hangPid), {
      timeout: 60_000,
      what: 'the hanging binary on trial',
    });
    const orphan = pidIn(hangPid);
    expect(state()!.starts).toBe(1);
    await edge.kill('SIGKILL');
    // The trial child outlives its launcher (as under KillMode=process): the next start ends it.
    expect(alive(orphan)).toBe(true);
    edge = await restartEdgeWith({ OUTPOST_FAKE_HANG_PID: hangPid });
    expect(state()).toMatchObject({ state: 'rolled-back', version: '9.9.3' });
    expect(state()!.reason).toMatch(/interrupted before it committed/);
    await waitFor(() => !alive(orphan), { timeout: 10_000, what: 'the orphaned trial child ended' });
    await waitFor(connected, { timeout: 30_000, what: 'old agent connected' });
  }, 120_000);

  it('a release whose binary reports another version is refused by that binary on trial and rolled back, saying so', async () => {
    // The good binary (it reports 9.9.1) signed as 9.9.4 through the API: `agent push` would refuse.
    const digest = (parse(fs.readFileSync(releases.good!, 'utf8')) as { spec: { release: { digest: string } } }).spec
      .release.digest;
    const signed = await hubApi(hub, 'POST', '/api/v1/projects/default/agent-releases', { digest, version: '9.9.4' });
    expect(signed.status).toBe(201);
    const { scan: _scan, ...release } = signed.json as Record<string, unknown>;
    const file = path.join(dir, 'release-9.9.4.yaml');
    fs.writeFileSync(file, stringify({ release }));
    const r = await edgeCli(['upgrade', file, '--deadline', '60']);
    expect(r.stderr).toBe('');
    await waitFor(() => state()?.version === '9.9.4' && state()?.state === 'rolled-back', {
      timeout: 60_000,
      what: 'rollback of the mislabelled release',
    });
    expect(state()!.reason).toBe(
      'release 9.9.4: its binary reports version 9.9.1, not 9.9.4: the release was signed with a version its binary does not report; push the binary again without --release-version (it is signed as the version it reports)',
    );
    await waitFor(connected, { timeout: 30_000, what: 'old agent connected again' });
    await waitFor(
      async () => /Agent release: +9\.9\.4 RolledBack .*its binary reports version 9\.9\.1/.test(await describeEdge()),
      { timeout: 30_000, what: 'RolledBack on the hub' },
    );
  }, 120_000);

  it('the real agent as the new binary passes the health gate and is committed; the workload is adopted', async () => {
    const workload = workloadPid();
    const before = goodStarts();
    const pid = edge.child.pid;
    expect((await edgeCli(['upgrade', releases.good!, '--deadline', '60'])).code).toBe(0);
    await waitFor(() => state()?.version === '9.9.1' && state()?.state === 'committed', {
      timeout: 90_000,
      what: 'commit',
    });
    // Started once on trial, then once more as the committed binary in the launcher's pid.
    await waitFor(() => goodStarts() === before + 2, {
      timeout: 30_000,
      what: 'the committed binary running',
    });
    await waitFor(connected, { timeout: 60_000, what: 'new agent connected' });
    expect(edge.alive).toBe(true);
    expect(edge.child.pid).toBe(pid);
    expect((await edgeCli(['status'])).stdout).toMatch(/release 9\.9\.1: Committed/);
    await waitFor(async () => /Agent release: +9\.9\.1 Committed/.test(await describeEdge()), {
      timeout: 30_000,
      what: 'Committed on the hub',
    });
    expect(workloadPid()).toBe(workload);
    expect(alive(workload)).toBe(true);

    // Every later start runs the committed binary.
    await edge.kill('SIGTERM');
    edge = await startEdgeProc(edgeDir);
    await waitFor(() => goodStarts() === before + 3, {
      timeout: 30_000,
      what: 'the committed binary started again',
    });
    await waitFor(connected, { timeout: 60_000, what: 'connected' });
  }, 180_000);

  it('a rollback after a committed release returns to that release, on this start and the next', async () => {
    const starts = goodStarts;
    const before = starts();
    expect((await edgeCli(['upgrade', releases.exits!, '--deadline', '60'])).code).toBe(0);
    await waitFor(() => state()?.version === '9.9.2' && state()?.state === 'rolled-back', {
      timeout: 60_000,
      what: 'rollback',
    });
    expect(state()!.previousBinary).toMatch(/outpost-9\.9\.1-[0-9a-f]{12}$/);
    // The launcher returns to the release committed before (9.9.1), not to the binary it was started as.
    await waitFor(() => starts() === before + 1, { timeout: 30_000, what: 'the committed 9.9.1 running again' });
    await waitFor(connected, { timeout: 60_000, what: 'connected after the rollback' });
    await edge.kill('SIGTERM');
    edge = await startEdgeProc(edgeDir);
    await waitFor(() => starts() === before + 2, { timeout: 30_000, what: 'the committed 9.9.1 at the next start' });
    await waitFor(connected, { timeout: 60_000, what: 'connected' });
  }, 180_000);

  it('a release older than the one committed is refused; --allow-downgrade switches to it', async () => {
    // 9.9.1 is committed and runs again after the rollback of 9.9.2.
    const older = await pushRelease(path.join(ROOT, 'test', 'fakes', 'agent-exits-at-start'), '9.9.0', {
      double: true,
    });
    const refused = await edgeCli(['upgrade', older, '--deadline', '60']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /release 9\.9\.0 is older than 9\.9\.1, the version this agent runs: refused as a downgrade; to go back on purpose pass --allow-downgrade/,
    );
    expect(state()).toMatchObject({ state: 'rolled-back', version: '9.9.2', previousBinaryVersion: '9.9.1' });

    const allowed = await edgeCli(['upgrade', older, '--deadline', '60', '--allow-downgrade']);
    expect(allowed.stderr).toBe('');
    expect(allowed.stdout).toMatch(/9\.9\.0: staged as .*outpost-9\.9\.0-[0-9a-f]{12}; switching/);
    // This double exits at start: rolled back to 9.9.1, which is still the floor.
    await waitFor(() => state()?.version === '9.9.0' && state()?.state === 'rolled-back', {
      timeout: 60_000,
      what: 'the switch to 9.9.0 tried and rolled back',
    });
    expect(state()).toMatchObject({ previousBinaryVersion: '9.9.1' });
    await waitFor(connected, { timeout: 60_000, what: 'connected on 9.9.1 again' });

    // Every switch of this suite, newest first, as the edge keeps it and the hub shows it.
    const history = state()!.history!.map((h) => `${h.version} ${h.state}`);
    expect(history).toEqual([
      '9.9.0 rolled-back',
      '9.9.2 rolled-back',
      '9.9.1 committed',
      '9.9.4 rolled-back',
      '9.9.3 rolled-back',
      '9.9.3 rolled-back',
      '9.9.2 rolled-back',
    ]);
    await waitFor(
      async () => {
        const rows = (await describeEdge()).split('Agent release history')[1]?.split(/\n(?! )/)[0] ?? '';
        const shown = [...rows.matchAll(/\)\s+(9\.9\.\d)\s+\S+\s+(RolledBack|Committed)\s/g)].map(
          (m) => `${m[1]} ${m[2]}`,
        );
        return (
          shown.join(',') ===
          history.map((h) => h.replace('rolled-back', 'RolledBack').replace('committed', 'Committed')).join(',')
        );
      },
      { timeout: 30_000, what: 'the release history on the hub' },
    );
  }, 180_000);
});

/** `s` as a regular expression that matches it literally. */
const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

async function restartEdgeWith(env: Record<string, string>): Promise<Proc> {
  await edge.kill('SIGTERM');
  const p = new Proc(['edge', '--data', edgeDir], env);
  await waitFor(
    () => (/outpost edge \S+ running/.test(p.err) ? true : p.alive ? null : Promise.reject(new Error(p.err))),
    {
      timeout: 30_000,
      what: 'edge agent to run',
    },
  );
  return p;
}
