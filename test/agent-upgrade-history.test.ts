/**
 * AgentUpgrades one after another on real edges (docs/operations.md, "Several AgentUpgrades"): an
 * in-process hub and two edge agents as processes (process driver) that really switch. Releases
 * are this build bundled with version 0.2.0 and 0.3.0 (build/sea/bundle.ts) behind two-line
 * launcher scripts, as in test/agent-upgrade.test.ts; the "rebuilt" 0.3.0 is the same program
 * behind a launcher with other bytes, reporting the same version.
 *
 * - agent-0-2-0 then agent-0-3-0 with the default names: the newer runs on every edge, the older
 *   keeps its history (Complete, each edge Superseded with how it ended), not Pending;
 * - deleting agent-0-3-0 says what it changes and hands no edge back to agent-0-2-0: nothing is
 *   downgraded;
 * - a rebuilt 0.3.0 with an unchanged version is installed (each edge switches and commits its
 *   digest), not Complete at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { releaseBundle, releaseDir } from './fixtures/release-bundle.js';
import type { SignedRelease } from '../core/release.js';
import { readUpgradeState } from '../edge/upgrade/switch.js';
import { startHub, type Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { adminApi } from './fixtures/in-process-fleet.js';
import { tempDir, waitFor } from './helpers.js';
import { Proc } from './procs.js';

const EDGES = ['h1', 'h2'];
let dir: string;
let bundleDir: string;
let hub: Hub;
const edges = new Map<string, Proc>();
const launchers: Record<string, string> = {};
const cli = (args: string[]) =>
  runCli(args, { env: { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken, OUTPOST_PROJECT: 'default' } });

interface UpgradeStatus {
  phase: string;
  reason: string;
  running: number;
  edges: { edge: string; state: string; reason?: string; agentVersion?: string }[];
}
const statusOf = async (name: string) =>
  (await adminApi<{ status: UpgradeStatus }>(hub, 'GET', `/api/v1/projects/default/agentupgrades/${name}`)).status;

/** Polls until `ok` holds, noting every edge state seen on the way; on timeout says the last status. */
async function waitStatus(name: string, ok: (s: UpgradeStatus) => boolean, what: string, seen = new Set<string>()) {
  let last: UpgradeStatus | undefined;
  try {
    return await waitFor(
      async () => {
        last = await statusOf(name);
        for (const e of last.edges) seen.add(e.state);
        return ok(last) ? last : null;
      },
      { timeout: 150_000, interval: 300, what },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; status: ${JSON.stringify(last)}`, { cause: err });
  }
}

/** `outpost agent push FILE` (the version it reports), then the printed AgentUpgrade applied for both edges. */
async function pushAndApply(file: string, extra: string[] = []): Promise<{ name: string; release: SignedRelease }> {
  const r = await cli(['agent', 'push', file, '-l', 'fleet=h', ...extra]);
  expect(r.stderr).toBe('');
  const doc = parse(r.stdout) as { metadata: { name: string }; spec: { release: SignedRelease; rollout: object } };
  doc.spec.rollout = { ...doc.spec.rollout, maxUnavailable: 2, deadline: '90s' };
  const f = path.join(dir, `${doc.metadata.name}.yaml`);
  fs.writeFileSync(f, stringify(doc));
  const a = await cli(['apply', '-f', f]);
  expect(a.code, a.stderr).toBe(0);
  return { name: doc.metadata.name, release: doc.spec.release };
}

const allRunning = (s: UpgradeStatus) => s.phase === 'Complete' && s.running === EDGES.length;

beforeAll(async () => {
  dir = tempDir('outpost-upgrade-history-');
  bundleDir = releaseDir('outpost-upgrade-history-');
  await Promise.all(
    ['0.2.0', '0.3.0'].map((v) =>
      releaseBundle(path.join(bundleDir, v, 'outpost.cjs'), { version: v, commit: 'history' }),
    ),
  );
  const launcher = (name: string, v: string, note = '') => {
    const f = path.join(bundleDir, name);
    fs.writeFileSync(f, `#!/bin/sh\n${note}exec ${process.execPath} ${path.join(bundleDir, v, 'outpost.cjs')} "$@"\n`, {
      mode: 0o755,
    });
    launchers[name] = f;
  };
  launcher('r020', '0.2.0');
  launcher('r030', '0.3.0');
  launcher('r030-rebuilt', '0.3.0', '# rebuilt: other bytes, the same version\n');

  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    scanner: { kind: 'none' },
  });
  const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', {
    labels: { fleet: 'h' },
    uses: EDGES.length,
  });
  for (const e of EDGES)
    edges.set(
      e,
      new Proc([
        'edge',
        '--data',
        path.join(dir, e),
        '--hub',
        hub.url,
        '--join-token',
        join.token,
        '--name',
        e,
        '--driver',
        'process',
      ]),
    );
  for (const [e, p] of edges)
    await waitFor(
      () => (/outpost edge \S+ running/.test(p.err) ? true : p.alive ? null : Promise.reject(new Error(p.err))),
      { timeout: 120_000, what: `edge ${e} running` },
    );
}, 240_000);

afterAll(async () => {
  await Promise.all([...edges.values()].map((p) => p.kill('SIGKILL')));
  for (const e of EDGES) {
    // A trial child runs as the edge's child: end it too.
    const pid = dir ? readUpgradeState(path.join(dir, e))?.trialPid : undefined;
    try {
      if (pid) process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await hub?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  if (bundleDir) fs.rmSync(bundleDir, { recursive: true, force: true });
});

describe('AgentUpgrades one after another', () => {
  it('agent-0-2-0 then agent-0-3-0: the newer runs everywhere; the older keeps its history, not Pending', async () => {
    const older = await pushAndApply(launchers.r020!);
    expect(older.name).toBe('agent-0-2-0');
    await waitStatus(older.name, allRunning, 'both edges on 0.2.0');
    const newer = await pushAndApply(launchers.r030!);
    expect(newer.name).toBe('agent-0-3-0');
    await waitStatus(newer.name, allRunning, 'both edges on 0.3.0');

    const history = await statusOf('agent-0-2-0');
    expect(history.phase).toBe('Complete');
    expect(history.edges.map((e) => [e.edge, e.state, e.reason, e.agentVersion])).toEqual(
      EDGES.map((e) => [e, 'Superseded', 'ran 0.2.0; AgentUpgrade agent-0-3-0 ordered it since', '0.3.0']),
    );
    const list = await cli(['get', 'agentupgrades']);
    expect(list.stdout).toMatch(/agent-0-2-0\s+0\.2\.0\s+2\s+0\s+0\s+Complete/);
    expect(list.stdout).toMatch(/agent-0-3-0\s+0\.3\.0\s+2\s+2\s+0\s+Complete/);
  }, 400_000);

  it('deleting agent-0-3-0 says what changes and hands no edge back to agent-0-2-0: nothing is downgraded', async () => {
    const r = await cli(['delete', 'agentupgrade', 'agent-0-3-0']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(
      [
        'agentupgrade/agent-0-3-0 deleted',
        '  edges h1, h2 keep running 0.3.0: no other AgentUpgrade takes them over',
        '  no edge is downgraded',
        '',
      ].join('\n'),
    );
    await waitFor(() => EDGES.every((e) => hub.state.agentUpgrades.order(e) === undefined), {
      what: "agent-0-3-0's orders withdrawn",
    });
    hub.upgrades.tick(); // a planning pass after the delete, now
    for (const e of EDGES) expect(hub.state.agentUpgrades.order(e)).toBeUndefined();
    const history = await statusOf('agent-0-2-0');
    expect(history.phase).toBe('Complete');
    expect(history.edges.map((e) => [e.state, e.agentVersion])).toEqual(EDGES.map(() => ['Superseded', '0.3.0']));
  }, 60_000);

  it('a rebuilt 0.3.0 with an unchanged version is installed on every edge, not Complete at once', async () => {
    const rebuilt = await pushAndApply(launchers['r030-rebuilt']!, ['--name', 'agent-0-3-0-rebuilt']);
    expect(rebuilt.release.version).toBe('0.3.0');
    const seen = new Set<string>();
    await waitStatus(rebuilt.name, allRunning, 'both edges on the rebuilt 0.3.0', seen);
    expect(seen.has('Switching')).toBe(true);
    for (const e of EDGES)
      expect(readUpgradeState(path.join(dir, e))).toMatchObject({
        state: 'committed',
        version: '0.3.0',
        digest: rebuilt.release.digest,
        binary: expect.stringMatching(new RegExp(`outpost-0\\.3\\.0-${rebuilt.release.digest.slice(7, 19)}$`)),
      });
  }, 400_000);
});
