/**
 * Several AgentUpgrades, what an edge compares, and what `agent push` signs, with an in-process hub
 * and in-process edge agents of project default (process driver; a restart into a new binary is
 * recorded, not done: test/agent-upgrade-history.test.ts switches real processes):
 *
 * - `agent push FILE --release-version V` is refused when FILE reports another version, naming
 *   both; a FILE this host cannot run is signed as V with a warning;
 * - the newest AgentUpgrade holds an edge, whatever the names (default names agent-0-2-0 then
 *   agent-0-3-0); the older one shows it Claimed, naming the holder, with the edge's real
 *   connection; deleting the newer says what it changes, and the older does not take the edge back;
 * - an edge compares digests, not versions: the release it committed is Running at once, another
 *   binary of the same version is installed;
 * - a tripped failureThreshold is Paused while edges wait, Failed once none is left, as
 *   docs/operations.md says.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { SignedRelease } from '../core/release.js';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import { readUpgradeState } from '../edge/upgrade/switch.js';
import { startHub, type Hub } from '../hub/hub.js';
import { adminApi, stopAgents } from './fixtures/in-process-fleet.js';
import { runCli } from './fixtures/cli.js';
import { ROOT, tempDir, waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
const agents: EdgeAgent[] = [];
/** Per edge, each restart its agent asked for to switch into a staged binary. */
const restarts = new Map<string, number>();
const env = () => ({ OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken, OUTPOST_PROJECT: 'default' });
const cli = (args: string[]) => runCli(args, { env: env() });

interface EdgeRow {
  edge: string;
  state: string;
  reason?: string;
  online: boolean;
}
interface UpgradeStatus {
  phase: string;
  reason: string;
  edges: EdgeRow[];
}
type Upgrade = { kind: string; metadata: { name: string }; spec: Record<string, any> };

/** A stand-in executable that answers --version as outpost does; `tag` makes other bytes. */
function binaryOf(version: string, tag = ''): string {
  const f = path.join(dir, `outpost-${version}${tag ? `-${tag}` : ''}`);
  fs.writeFileSync(f, `#!/bin/sh\n# ${tag}\necho "outpost ${version} (commit test)"\n`, { mode: 0o755 });
  return f;
}

/** `outpost agent push FILE` (signed as what FILE reports); the printed AgentUpgrade. */
async function push(file: string, extra: string[] = []): Promise<Upgrade> {
  const r = await cli(['agent', 'push', file, ...extra]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return parse(r.stdout) as Upgrade;
}

/** Applies the pushed AgentUpgrade for `edges`, with `rollout` over its own. */
async function apply(up: Upgrade, edges: string[], rollout: Record<string, unknown> = {}, name = up.metadata.name) {
  await adminApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      {
        ...up,
        metadata: { name, project: 'default' },
        spec: { ...up.spec, edgeSelector: undefined, edges, rollout: { ...up.spec.rollout, ...rollout } },
      },
    ],
  });
}

const statusOf = async (name: string) =>
  (await adminApi<{ status: UpgradeStatus }>(hub, 'GET', `/api/v1/projects/default/agentupgrades/${name}`)).status;

/** Polls AgentUpgrade `name`'s status until `ok` holds; on timeout says the last one. */
async function waitStatus(name: string, ok: (s: UpgradeStatus) => boolean, what: string): Promise<UpgradeStatus> {
  let last: UpgradeStatus | undefined;
  try {
    return await waitFor(
      async () => {
        last = await statusOf(name);
        return ok(last) ? last : null;
      },
      { timeout: 30_000, what },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; status: ${JSON.stringify(last)}`, { cause: err });
  }
}
const row = (s: UpgradeStatus, edge: string) => s.edges.find((e) => e.edge === edge);

/** An in-process edge agent `name` in project default; its restarts are counted in `restarts`. */
async function startAgent(name: string, extra: { blobBudgetBytes?: number } = {}): Promise<EdgeAgent> {
  const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', { labels: {} });
  restarts.set(name, 0);
  const agent = await startEdgeAgent({
    dataDir: path.join(dir, name),
    hub: hub.url,
    joinToken: join.token,
    name,
    driver: 'process',
    heartbeatMs: 1_000,
    restartForSwitch: () => restarts.set(name, restarts.get(name)! + 1),
    ...extra,
  });
  agents.push(agent);
  await waitFor(() => agent.sync.state === 'connected', { timeout: 30_000, what: `edge ${name} connected` });
  return agent;
}

beforeAll(async () => {
  dir = tempDir('outpost-upgrade-precedence-');
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    scanner: { kind: 'none' },
  });
}, 60_000);

afterAll(async () => {
  await stopAgents(agents);
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('agent push signs the version the binary reports', () => {
  it('a --release-version the binary does not report is refused, naming both, before anything is uploaded', async () => {
    const file = binaryOf('9.9.2');
    const blobs = async () =>
      (await adminApi<{ items: unknown[] }>(hub, 'GET', '/api/v1/projects/default/blobs')).items.length;
    const before = await blobs();
    const r = await cli(['agent', 'push', file, '--release-version', '9.9.3']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      `${file} --version reports 9.9.2, not 9.9.3: an edge would run it and report 9.9.2, never 9.9.3; drop --release-version to sign it as 9.9.2, or push the binary that reports 9.9.3`,
    );
    expect(await blobs()).toBe(before);
    // The same flag with the version it reports is fine.
    const ok = await push(file, ['--release-version', '9.9.2']);
    expect((ok.spec.release as SignedRelease).version).toBe('9.9.2');
  });

  it('a binary this host cannot run (another platform) is signed as --release-version with a warning', async () => {
    const foreign = path.join(dir, 'outpost-arm64');
    // An ELF header the kernel will not execute here: what a binary for another platform gets.
    fs.writeFileSync(foreign, Buffer.concat([Buffer.from('\x7fELF\x02\x01\x01'), Buffer.alloc(64, 0xff)]), {
      mode: 0o755,
    });
    const r = await cli(['agent', 'push', foreign, '--release-version', '9.9.4']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(
      new RegExp(
        `^warning: cannot run ${foreign} --version here \\(.+\\): its version is not checked here, it is signed as 9\\.9\\.4; an edge that switches to it rolls it back if it reports another version\\n$`,
      ),
    );
    expect(((parse(r.stdout) as Upgrade).spec.release as SignedRelease).version).toBe('9.9.4');
    // Without the flag there is no version to sign.
    const bare = await cli(['agent', 'push', foreign]);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toMatch(/: pass --release-version V, the version it reports/);
  });
});

describe('several AgentUpgrades on one edge', () => {
  it('the newest holds the edge whatever the names; the older shows it Claimed, naming the holder, with the edge online', async () => {
    await startAgent('p1');
    const older = await push(binaryOf('0.2.0'));
    const newer = await push(binaryOf('0.3.0'));
    // The default names, which sort the old way round: agent-0-2-0 < agent-0-3-0.
    expect([older.metadata.name, newer.metadata.name]).toEqual(['agent-0-2-0', 'agent-0-3-0']);
    // Both paused: the newer holds p1 before it orders anything.
    await apply(older, ['p1'], { paused: true });
    await apply(newer, ['p1'], { paused: true });
    const s = await waitStatus('agent-0-2-0', (x) => row(x, 'p1')?.state === 'Claimed', 'p1 Claimed in agent-0-2-0');
    expect(row(s, 'p1')).toMatchObject({
      reason: expect.stringMatching(/^AgentUpgrade agent-0-3-0 holds this edge \(applied later/),
      online: true,
    });
    expect(s).toMatchObject({
      phase: 'Paused',
      reason: expect.stringMatching(
        /^paused \(spec\.rollout\.paused: true\); held by later AgentUpgrades: p1 \(agent-0-3-0\)/,
      ),
    });
    const d = await cli(['describe', 'agentupgrade', 'agent-0-2-0']);
    expect(d.stdout).toMatch(/p1\s+Claimed: AgentUpgrade agent-0-3-0 holds this edge .*\s0\.1\.0\s+Online\n/);
    expect(row(await statusOf('agent-0-3-0'), 'p1')?.state).toBe('Waiting');

    // The newer one goes ahead; the older one's part on p1 is over.
    await apply(newer, ['p1'], { paused: false });
    await waitStatus('agent-0-3-0', (x) => row(x, 'p1')?.state === 'Switching', 'agent-0-3-0 switching p1');
    await waitFor(() => restarts.get('p1') === 1, { what: 'p1 restarting into 0.3.0' });
    expect(row(await statusOf('agent-0-2-0'), 'p1')?.state).toBe('Superseded');
  });

  it('deleting the newer says what changes, and the older one does not take the edge back', async () => {
    // The older one unpaused: it would order p1 if it held it.
    await apply(await push(binaryOf('0.2.0')), ['p1'], { paused: false }, 'agent-0-2-0');
    const r = await cli(['delete', 'agentupgrade', 'agent-0-3-0']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(
      [
        'agentupgrade/agent-0-3-0 deleted',
        '  edge p1 keeps running 0.1.0: no other AgentUpgrade takes it over',
        '  a switch under way is not stopped by the withdrawn order: p1 (Switching) may still end on 0.3.0',
        '  no edge is downgraded',
        '',
      ].join('\n'),
    );
    await waitFor(() => hub.state.agentUpgrades.order('p1') === undefined, { what: "agent-0-3-0's order withdrawn" });
    hub.upgrades.tick(); // a planning pass after the delete, now
    expect(hub.state.agentUpgrades.order('p1')).toBeUndefined();
    const s = await statusOf('agent-0-2-0');
    expect(row(s, 'p1')).toMatchObject({
      state: 'Superseded',
      reason: 'AgentUpgrade agent-0-3-0 ordered it before this one finished here',
    });
    expect(s.phase).toBe('Complete');
    expect(s.reason).toBe('nothing left to order; superseded on p1 before it finished there');
  });
});

describe('what an edge compares: the digest', () => {
  it('the release it committed is Running at once; another binary of the same version is installed', async () => {
    // This agent runs version 0.1.0 (the sources'); it committed release 0.1.0 with these bytes,
    // as the launcher leaves it after a switch.
    const committed = (await push(binaryOf('0.1.0', 'first-build'))).spec.release as SignedRelease;
    const d1 = path.join(dir, 'd1');
    fs.mkdirSync(path.join(d1, 'agent'), { recursive: true });
    fs.writeFileSync(
      path.join(d1, 'agent', 'upgrade.json'),
      JSON.stringify({
        state: 'committed',
        version: '0.1.0',
        binary: path.join(d1, 'agent', 'outpost-0.1.0'),
        previousVersion: '0.0.9',
        starts: 1,
        deadlineMs: 60_000,
        at: new Date().toISOString(),
        order: `first@${committed.digest}`,
        digest: committed.digest,
      }),
    );
    await startAgent('d1');
    const same = await push(binaryOf('0.1.0', 'first-build'), ['--name', 'same-bytes']);
    await apply(same, ['d1']);
    await waitStatus('same-bytes', (s) => s.phase === 'Complete' && row(s, 'd1')?.state === 'Running', 'Running');
    expect(restarts.get('d1')).toBe(0);

    const hotfix = await push(binaryOf('0.1.0', 'rebuilt'), ['--name', 'hotfix']);
    expect((hotfix.spec.release as SignedRelease).digest).not.toBe(committed.digest);
    await apply(hotfix, ['d1']);
    await waitStatus('hotfix', (s) => row(s, 'd1')?.state === 'Switching', 'the rebuilt 0.1.0 switching');
    await waitFor(() => restarts.get('d1') === 1, { what: 'd1 restarting into the rebuilt 0.1.0' });
    expect(readUpgradeState(d1)).toMatchObject({
      state: 'trial',
      version: '0.1.0',
      digest: (hotfix.spec.release as SignedRelease).digest,
      previousDigest: committed.digest,
    });
    // The first is history: done, never ordered again.
    const first = await statusOf('same-bytes');
    expect(first.phase).toBe('Complete');
  });
});

describe('a tripped failureThreshold', () => {
  it('is Paused while edges wait to be ordered, Failed once every edge was ordered and failed, as docs/operations.md says', async () => {
    // A 16-byte blob budget: each edge reports NoSpace for the release, a failure.
    await startAgent('f1', { blobBudgetBytes: 16 });
    await startAgent('f2', { blobBudgetBytes: 16 });
    const up = await push(binaryOf('0.4.0'), ['--name', 'tight']);
    await apply(up, ['f1', 'f2'], { maxUnavailable: 1, failureThreshold: 1 });
    const paused = await waitStatus('tight', (s) => s.phase === 'Paused', 'Paused at the threshold');
    expect(paused.reason).toMatch(
      /^paused: 1 edge failed on the new version \(threshold 1\): f1; apply a fixed release \(a new digest starts over\) or raise spec\.rollout\.failureThreshold of AgentUpgrade tight \(and maxUnavailable: failed edges count toward it\) to go on anyway/,
    );
    expect(row(paused, 'f1')?.state).toBe('NoSpace');
    expect(row(paused, 'f2')?.state).toBe('Waiting');

    // Going on as the reason says: f2 is ordered, fails too, and no edge is left.
    await apply(up, ['f1', 'f2'], { maxUnavailable: 2, failureThreshold: 2 });
    const failed = await waitStatus('tight', (s) => s.phase === 'Failed', 'Failed with no edge left');
    expect(failed.reason).toBe('2 of 2 edges failed on the new version: f1, f2');

    const docs = fs.readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8').replace(/\s+/g, ' ');
    expect(docs).toContain(
      'once `failureThreshold` edges rolled back or could not take the release, no new edge is ordered: phase `Paused` while selected edges are still waiting to be ordered',
    );
    expect(docs).toContain('phase `Failed` once every selected edge was ordered and none is left to wait for');
  });
});
