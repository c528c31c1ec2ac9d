/**
 * What bounds an agent release (docs/security.md, "Agent releases"), with an in-process hub and an
 * in-process edge agent of project q (process driver; its restart into a new binary is recorded,
 * not done: the switch itself is test/agent-switch.test.ts's, with real processes):
 *
 * - only an admin token for every project has a release signed; a project admin is told who may;
 * - a release is signed for a project (or `*`): the hub refuses it in an AgentUpgrade of another
 *   project, and the edge refuses it too when an order reaches it anyway (an order row written
 *   behind the hub's check, as a changed database row would be);
 * - the hub does not order a release older than what an edge runs, and an edge refuses one that
 *   reaches it, unless the AgentUpgrade says `allowDowngrade: true`; with it the edge goes ahead,
 *   saying it is a downgrade.
 */
import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { SignedRelease } from '../core/release.js';
import { buildInfo } from '../core/version.js';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import { readUpgradeState } from '../edge/upgrade/switch.js';
import { startHub, type Hub } from '../hub/hub.js';
import { adminApi, stopAgents } from './fixtures/in-process-fleet.js';
import { runCli } from './fixtures/cli.js';
import { tempDir, waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
let binary: string;
const agents: EdgeAgent[] = [];
/** Each restart the edge agent asked for, to switch into a staged binary. */
const restarts: number[] = [];
const edgeDir = () => path.join(dir, 'q1');
const star = () => ({ OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken });

interface EdgeUpgrade {
  edge: string;
  state: string;
  reason?: string;
}

/** A stand-in executable that reports `version` as outpost does (`agent push` checks it). */
function binaryOf(version: string): string {
  const f = path.join(dir, `outpost-${version}`);
  if (!fs.existsSync(f)) fs.writeFileSync(f, `#!/bin/sh\necho "outpost ${version} (commit test)"\n`, { mode: 0o755 });
  return f;
}

/** `outpost agent push` as the `*` admin in `project`; the printed AgentUpgrade. */
async function push(project: string, version: string, extra: string[] = []) {
  const r = await runCli(['agent', 'push', binaryOf(version), '--project', project, ...extra], {
    env: star(),
  });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return parse(r.stdout) as { kind: string; metadata: { name: string }; spec: Record<string, unknown> };
}

/** Waits for edge q1 to be in `state` in AgentUpgrade `name`'s status; returns its row (on timeout, says the last). */
async function edgeState(name: string, state: string): Promise<EdgeUpgrade> {
  let last: EdgeUpgrade | undefined;
  try {
    return await waitFor(
      async () => {
        const u = await adminApi<{ status: { edges: EdgeUpgrade[] } }>(
          hub,
          'GET',
          `/api/v1/projects/q/agentupgrades/${name}`,
        );
        last = u.status.edges.find((x) => x.edge === 'q1');
        return last?.state === state ? last : null;
      },
      { timeout: 30_000, what: `q1 ${state} in AgentUpgrade ${name}` },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; q1 was ${JSON.stringify(last)}`, { cause: err });
  }
}

beforeAll(async () => {
  dir = tempDir('outpost-release-bounds-');
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    scanner: { kind: 'none' },
  });
  binary = path.join(dir, 'outpost-next');
  fs.writeFileSync(binary, '#!/bin/sh\necho "outpost 9.9.7 (commit test)"\n', { mode: 0o755 });
  const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', { project: 'q', labels: {} });
  agents.push(
    await startEdgeAgent({
      dataDir: edgeDir(),
      hub: hub.url,
      joinToken: join.token,
      name: 'q1',
      driver: 'process',
      heartbeatMs: 1_000,
      restartForSwitch: () => restarts.push(Date.now()),
    }),
  );
  await waitFor(() => agents[0].sync.state === 'connected', { timeout: 30_000, what: 'edge q1 connected' });
}, 60_000);

afterAll(async () => {
  await stopAgents(agents);
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('who signs agent releases', () => {
  it("a project admin's agent push is refused (403) naming who may sign", async () => {
    const t = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/api', { role: 'admin', project: 'q' });
    const r = await runCli(['agent', 'push', binary, '--release-version', '9.9.7'], {
      env: { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: t.token, OUTPOST_PROJECT: 'q' },
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /an admin token of project q may not sign agent releases: only an admin token for every project \(\*\), like the hub's first admin\.token, may/,
    );
    // The API says 403, not 404: the project is the token's own.
    const blobs = await adminApi<{ items: { digest: string }[] }>(hub, 'GET', '/api/v1/projects/q/blobs');
    const res = await fetch(`${hub.url}/api/v1/projects/q/agent-releases`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ digest: blobs.items[0].digest, version: '9.9.7' }),
    });
    expect(res.status).toBe(403);
  });
});

describe('a release is signed for a project', () => {
  it('the hub refuses a release of project p in an AgentUpgrade of project q', async () => {
    const up = await push('p', '9.9.7');
    // The same bytes in q's blob store: only the scope stands in the way.
    expect((await runCli(['blob', 'push', binaryOf('9.9.7'), '--project', 'q'], { env: star() })).code).toBe(0);
    const res = await fetch(`${hub.url}/api/v1/apply`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hub.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        objects: [{ ...up, metadata: { name: 'from-p', project: 'q' }, spec: { ...up.spec, edges: ['q1'] } }],
      }),
    });
    expect(res.status).toBe(422);
    expect(JSON.stringify(await res.json())).toMatch(
      /spec\.release\.scope: release 9\.9\.7 is signed for project p, and this AgentUpgrade is in project q: refused/,
    );
    expect((up.spec.release as SignedRelease).scope).toBe('p');
  });

  it('an edge of project q refuses an order of a release signed for p, and says why in its report', async () => {
    const release = (await push('p', '9.9.8')).spec.release as SignedRelease;
    // Behind the hub's check: the order row the hub's replicas copy into the edge's spec document.
    hub.state.agentUpgrades.setOrder('q1', { upgrade: 'from-p', release, deadlineMs: 60_000 });
    const reported = await waitFor(
      () => {
        const p = hub.state.agentUpgrades.progress().get('q1');
        return p?.upgrade === 'from-p' && p.state !== 'Pending' ? p : null;
      },
      { timeout: 30_000, what: "q1's report of the order" },
    );
    expect(reported).toMatchObject({ state: 'Refused', version: '9.9.8' });
    expect(reported.reason).toMatch(
      /release 9\.9\.8 is signed for project p, and this edge is in project q: refused; have an admin for every project push it for project q/,
    );
    // Refused before anything was fetched or staged.
    expect(fs.existsSync(path.join(edgeDir(), 'blobs', 'sha256', release.digest.slice(7)))).toBe(false);
    expect(readUpgradeState(edgeDir())).toBeUndefined();
    expect(restarts).toEqual([]);
    hub.state.agentUpgrades.setOrder('q1', undefined);
  });
});

describe('downgrades', () => {
  it('the hub does not order a release older than an edge runs, and the edge refuses one that reaches it, unless the AgentUpgrade says allowDowngrade: true; with it the edge goes ahead', async () => {
    const running = buildInfo().version;
    const older = '0.0.1';
    expect(semver.lt(older, running)).toBe(true);
    const up = await push('q', older);
    const object = { ...up, metadata: { name: 'down' }, spec: { ...up.spec, edgeSelector: undefined, edges: ['q1'] } };
    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [{ ...object, metadata: { ...object.metadata, project: 'q' } }],
    });
    // The planner knows the version q1 runs: it orders nothing and says why.
    const newer = await edgeState('down', 'Newer');
    expect(newer.reason).toBe(
      `runs ${running}, newer than ${older}: not ordered (no downgrade without spec.allowDowngrade: true)`,
    );
    const u = await adminApi<{ status: { phase: string; reason: string } }>(
      hub,
      'GET',
      '/api/v1/projects/q/agentupgrades/down',
    );
    expect(u.status.phase).toBe('Complete');
    expect(u.status.reason).toMatch(/^nothing left to order; not ordered: q1 \(runs 0\.1\.0\), newer than 0\.0\.1/);
    expect(hub.state.agentUpgrades.order('q1')).toBeUndefined();

    // An order that reaches the edge anyway (behind the planner, as a changed database row would):
    // the edge refuses it on its own.
    const release = up.spec.release as SignedRelease;
    hub.state.agentUpgrades.setOrder('q1', { upgrade: 'down', release, deadlineMs: 120_000 });
    const refused = await waitFor(
      () => {
        const p = hub.state.agentUpgrades.progress().get('q1');
        return p?.upgrade === 'down' && p.state === 'Refused' ? p : null;
      },
      { timeout: 30_000, what: "q1's refusal" },
    );
    expect(refused.reason).toBe(
      `release ${older} is older than ${running}, the version this agent runs: refused as a downgrade; to go back on purpose set spec.allowDowngrade: true in AgentUpgrade down`,
    );
    expect(readUpgradeState(edgeDir())).toBeUndefined();
    expect(restarts).toEqual([]);

    // Allowed: the same object with allowDowngrade; the order given changes in place.
    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        { ...object, metadata: { ...object.metadata, project: 'q' }, spec: { ...object.spec, allowDowngrade: true } },
      ],
    });
    const switching = await edgeState('down', 'Switching');
    expect(switching.reason).toBe(
      `a downgrade from ${running} (the version this agent runs), allowed by the AgentUpgrade's allowDowngrade: true`,
    );
    expect(readUpgradeState(edgeDir())).toMatchObject({ state: 'trial', version: older });
    await waitFor(() => restarts.length === 1, { timeout: 10_000, what: 'the restart into the older binary' });
    const d = await runCli(['describe', 'agentupgrade', 'down', '--project', 'q'], { env: star() });
    expect(d.stdout).toMatch(/Signed for:\s+project q\n/);
    expect(d.stdout).toMatch(/Downgrade:\s+allowed \(allowDowngrade\)\n/);
    expect(d.stdout).toMatch(/q1\s+Switching.*a downgrade from/);
    expect(d.stdout).toMatch(
      /Ordered\s+edge q1 ordered again \(the order changed\) to switch to 0\.0\.1 \(allowDowngrade/,
    );
  });
});
