/**
 * Agent upgrades from the hub (issue 18), with real processes: a hub, five edge agents (process
 * driver, each running a host workload) and an AgentUpgrade applied with `outpost apply`. The new
 * release is this build bundled with another version string (build/sea/bundle.ts, run by Node
 * through a two-line launcher script: the same program as dist/outpost without the 100 MB
 * executable around it); the bad releases are the test doubles in test/fakes (one exits at start,
 * one hangs). Deadlines are short so the file runs in a few minutes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { releaseBundle, releaseDir } from './fixtures/release-bundle.js';
import { hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { ROOT, tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startHubProc, type HubProc } from './procs.js';

const EDGES = ['e1', 'e2', 'e3', 'e4', 'e5'];
const NEW_VERSION = '9.9.1';

let dir: string;
let pids: string;
let bundleDir: string;
let hub: HubProc;
let cliEnv: Record<string, string>;
const edges = new Map<string, Proc>();

interface EdgeUpgrade {
  edge: string;
  state: string;
  percent?: number;
  reason?: string;
  agentVersion?: string;
  online?: boolean;
}
interface UpgradeStatus {
  phase: string;
  reason: string;
  running: number;
  rolledBack: number;
  edges: EdgeUpgrade[];
}

const statusOf = async (name: string): Promise<UpgradeStatus> => {
  const r = await hubApi(hub, 'GET', `/api/v1/projects/default/agentupgrades/${name}`);
  expect(r.status).toBe(200);
  return r.json.status as UpgradeStatus;
};
/** Polls an upgrade's status until `ok` holds; on timeout the message carries the last status. */
async function waitStatus(name: string, ok: (s: UpgradeStatus) => boolean, timeout: number, what: string) {
  let last: UpgradeStatus | undefined;
  try {
    return await waitFor(
      async () => {
        last = await statusOf(name);
        return ok(last) ? last : null;
      },
      { timeout, interval: 300, what },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; status: ${JSON.stringify(last)}`, { cause: err });
  }
}

const workloadPid = (edge: string) => Number(fs.readFileSync(path.join(pids, `${edge}.pid`), 'utf8'));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * `outpost agent push FILE`, then the printed AgentUpgrade with our selector and rollout, applied.
 * The test doubles cannot say their version: `agent push` signs them as --release-version with a warning.
 */
async function pushAndApply(
  file: string,
  version: string,
  name: string,
  rollout: Record<string, unknown>,
  opts: { double?: boolean } = {},
): Promise<{ digest: string }> {
  const r = await cli(['agent', 'push', file, '--release-version', version, '--name', name, '-l', 'fleet=a'], cliEnv);
  if (opts.double) expect(r.stderr).toMatch(/^warning: .*its version is not checked here, it is signed as/);
  else expect(r.stderr).toBe('');
  const doc = parse(r.stdout) as {
    kind: string;
    metadata: { name: string };
    spec: { release: { digest: string; version: string }; edgeSelector: unknown; rollout: Record<string, unknown> };
  };
  expect(doc.kind).toBe('AgentUpgrade');
  expect(doc.spec.release.version).toBe(version);
  expect(doc.spec.edgeSelector).toEqual({ matchLabels: { fleet: 'a' } });
  doc.spec.rollout = { ...doc.spec.rollout, ...rollout };
  const f = path.join(dir, `${name}.yaml`);
  fs.writeFileSync(f, stringify(doc));
  const a = await cli(['apply', '-f', f], cliEnv);
  expect(a.stderr).toBe('');
  expect(a.code).toBe(0);
  return { digest: doc.spec.release.digest };
}

function startEdge(name: string, extra: string[] = []): Proc {
  return new Proc(['edge', '--data', path.join(dir, name), ...extra], {
    OUTPOST_FAKE_HANG_PID: path.join(dir, `hang-${name}.pid`),
  });
}

beforeAll(async () => {
  dir = tempDir('outpost-upgrade-');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  bundleDir = releaseDir('outpost-upgrade-test-');
  const built = path.join(bundleDir, 'outpost.cjs');
  await releaseBundle(built, { version: NEW_VERSION, commit: 'upgradetest' });

  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http', '--scanner', 'none']);
  cliEnv = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token, OUTPOST_PROJECT: 'default' };
  for (const name of EDGES) {
    const join = await hubApi(hub, 'POST', '/api/v1/tokens/join', { labels: { fleet: 'a' } });
    edges.set(name, startEdge(name, ['--hub', hub.url, '--join-token', join.json.token, '--name', name]));
  }
  for (const [name, p] of edges)
    await waitFor(
      () => (/outpost edge \S+ running/.test(p.err) ? true : p.alive ? null : Promise.reject(new Error(p.err))),
      {
        // Five agents start at once on a shared 2-core machine: give them time.
        timeout: 120_000,
        what: `edge ${name} running`,
      },
    );
  const applied = await hubApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      {
        kind: 'Workload',
        metadata: { name: 'steady' },
        spec: {
          manifests: [
            {
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name: 'steady' },
              spec: {
                terminationGracePeriodSeconds: 1,
                containers: [
                  {
                    name: 'main',
                    image: 'localhost/outpost-busybox:latest',
                    command: ['sh', '-c', `echo $$$$ > ${pids}/{{ edge.name }}.pid && exec sleep 3600`],
                  },
                ],
              },
            },
          ],
        },
      },
      {
        kind: 'Placement',
        metadata: { name: 'steady' },
        spec: { edgeSelector: { matchLabels: { fleet: 'a' } }, workloads: ['steady'] },
      },
    ],
  });
  expect(applied.status).toBe(200);
  await waitFor(() => EDGES.every((e) => fs.existsSync(path.join(pids, `${e}.pid`)) && workloadPid(e) > 0), {
    timeout: 60_000,
    what: 'the workload on every edge',
  });
}, 240_000);

afterAll(async () => {
  await Promise.all([...edges.values()].map((p) => p.kill('SIGKILL')));
  await hub?.proc.kill();
  killHostWorkloads(pids);
  killHostWorkloads(dir);
  for (const name of EDGES) {
    // Trial children and committed binaries run under the edge's pid (execve) or as its child.
    const f = path.join(dir, name, 'agent', 'upgrade.json');
    if (!fs.existsSync(f)) continue;
    const s = JSON.parse(fs.readFileSync(f, 'utf8')) as { trialPid?: number };
    if (s.trialPid && alive(s.trialPid)) process.kill(s.trialPid, 'SIGKILL');
  }
  fs.rmSync(dir, { recursive: true, force: true });
  if (bundleDir) fs.rmSync(bundleDir, { recursive: true, force: true });
});

describe('AgentUpgrade', () => {
  it('a release with a wrong signature or an unknown digest is refused at apply, before any edge hears of it', async () => {
    const good = path.join(bundleDir, 'outpost-good');
    fs.writeFileSync(good, `#!/bin/sh\nexec ${process.execPath} ${path.join(bundleDir, 'outpost.cjs')} "$@"\n`, {
      mode: 0o755,
    });
    const r = await cli(['agent', 'push', good, '--release-version', NEW_VERSION, '--name', 'bad'], cliEnv);
    const doc = parse(r.stdout) as { spec: { release: { signature: string; digest: string } } };
    const sig = Buffer.from(doc.spec.release.signature, 'base64');
    sig[0] ^= 0xff;
    const forged = {
      ...doc,
      spec: { ...doc.spec, release: { ...doc.spec.release, signature: sig.toString('base64') } },
    };
    const a = await hubApi(hub, 'POST', '/api/v1/apply', { objects: [forged] });
    expect(a.status).toBe(422);
    expect(JSON.stringify(a.json)).toMatch(/does not verify with this hub's release key/);
    const unknown = {
      ...doc,
      spec: { ...doc.spec, release: { ...doc.spec.release, digest: `sha256:${'0'.repeat(64)}` } },
    };
    const b = await hubApi(hub, 'POST', '/api/v1/apply', { objects: [unknown] });
    expect(b.status).toBe(422);
    // A changed digest breaks the signature too: the hub says so first.
    expect(JSON.stringify(b.json)).toMatch(/does not verify/);
    expect((await hubApi(hub, 'GET', '/api/v1/projects/default/agentupgrades')).json.items).toEqual([]);
  }, 60_000);

  it('five process-driver edges switch to the new version through the hub, three at a time; workloads are adopted', async () => {
    const before = new Map(EDGES.map((e) => [e, workloadPid(e)]));
    const agentPids = new Map(EDGES.map((e) => [e, edges.get(e)!.child.pid]));
    const { digest } = await pushAndApply(path.join(bundleDir, 'outpost-good'), NEW_VERSION, 'up-good', {
      maxUnavailable: 3,
      deadline: '90s',
    });
    // The hub holds the binary for the object: garbage collection keeps it.
    const blobs = await hubApi(hub, 'GET', '/api/v1/projects/default/blobs');
    expect(blobs.json.items.find((b: { digest: string }) => b.digest === digest)?.references).toContain(
      'AgentUpgrade/up-good',
    );
    let most = 0;
    const seen = new Set<string>();
    await waitStatus(
      'up-good',
      (s) => {
        const busy = s.edges.filter((e) => !['Waiting', 'Running'].includes(e.state)).length;
        most = Math.max(most, busy);
        for (const e of s.edges) seen.add(e.state);
        return s.running === 5 && s.phase === 'Complete';
      },
      240_000,
      'five edges running the new version',
    );
    // Never more than maxUnavailable edges between their order and Running.
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThan(0);
    expect(seen.has('Waiting')).toBe(true);
    for (const e of EDGES) {
      expect(workloadPid(e)).toBe(before.get(e));
      expect(alive(before.get(e)!)).toBe(true);
      // The agent kept its pid: the launcher replaced itself with the committed binary.
      expect(edges.get(e)!.alive).toBe(true);
      expect(edges.get(e)!.child.pid).toBe(agentPids.get(e));
    }
    const wide = await cli(['get', 'edges', '-o', 'wide'], cliEnv);
    for (const e of EDGES)
      expect(wide.stdout).toMatch(new RegExp(`^${e}\\s.*\\s${NEW_VERSION.replace(/\./g, '\\.')}\\s`, 'm'));
    const list = await cli(['get', 'agentupgrades'], cliEnv);
    expect(list.stdout).toMatch(/NAME\s+VERSION\s+EDGES\s+RUNNING\s+ROLLEDBACK\s+PHASE/);
    expect(list.stdout).toMatch(/up-good\s+9\.9\.1\s+5\s+5\s+0\s+Complete/);
    const d = await cli(['describe', 'agentupgrade', 'up-good'], cliEnv);
    for (const e of EDGES) expect(d.stdout).toMatch(new RegExp(`${e}\\s+Running 9\\.9\\.1\\s+9\\.9\\.1\\s+Online`));
    // Deleting the object drops the blob reference (collected after the grace period); it says
    // what changes on the edges.
    expect((await cli(['delete', 'agentupgrade', 'up-good'], cliEnv)).stdout).toBe(
      'agentupgrade/up-good deleted\n  edges e1, e2, e3, e4, e5 keep running 9.9.1: no other AgentUpgrade takes them over\n  no edge is downgraded\n',
    );
    const after = await hubApi(hub, 'GET', '/api/v1/projects/default/blobs');
    expect(after.json.items.find((b: { digest: string }) => b.digest === digest)?.references ?? []).not.toContain(
      'AgentUpgrade/up-good',
    );
  }, 300_000);

  it('a binary that exits at start rolls back with the reason; the rollout pauses at its failure threshold', async () => {
    const before = new Map(EDGES.map((e) => [e, workloadPid(e)]));
    await pushAndApply(
      path.join(ROOT, 'test', 'fakes', 'agent-exits-at-start'),
      '9.9.2',
      'up-broken',
      { maxUnavailable: 1, failureThreshold: 1, deadline: '20s' },
      { double: true },
    );
    const s = await waitStatus(
      'up-broken',
      (st) => st.phase === 'Paused' && st.rolledBack === 1,
      90_000,
      'one rollback and a paused rollout',
    );
    const failed = s.edges.filter((e) => e.state === 'RolledBack');
    expect(failed).toHaveLength(1);
    expect(failed[0].reason).toMatch(/release 9\.9\.2: it exited \(code 3\) before it connected and reconciled/);
    expect(s.reason).toMatch(/paused: 1 edge failed on the new version \(threshold 1\)/);
    // The other four were never ordered.
    expect(s.edges.filter((e) => e.state === 'Waiting')).toHaveLength(4);
    // The rolled-back edge runs the previous binary and reconnected.
    await waitFor(
      async () =>
        (await statusOf('up-broken')).edges.find((e) => e.edge === failed[0].edge)?.agentVersion === NEW_VERSION,
      {
        timeout: 60_000,
        what: 'the rolled-back edge on 9.9.1',
      },
    );
    const d = await cli(['describe', 'agentupgrade', 'up-broken'], cliEnv);
    expect(d.stdout).toMatch(/RolledBack: release 9\.9\.2: it exited \(code 3\)/);
    for (const e of EDGES) expect(workloadPid(e)).toBe(before.get(e));
    expect((await cli(['delete', 'agentupgrade', 'up-broken'], cliEnv)).stdout).toBe(
      'agentupgrade/up-broken deleted\n  edges e1, e2, e3, e4, e5 keep running 9.9.1: no other AgentUpgrade takes them over\n  no edge is downgraded\n',
    );
  }, 180_000);

  it('a binary that hangs is killed at the deadline and rolled back; two failures pause a threshold of two', async () => {
    await pushAndApply(
      path.join(ROOT, 'test', 'fakes', 'agent-hangs'),
      '9.9.3',
      'up-hangs',
      { maxUnavailable: 2, failureThreshold: 2, deadline: '5s' },
      { double: true },
    );
    const s = await waitStatus(
      'up-hangs',
      (st) => st.phase === 'Paused' && st.rolledBack === 2,
      120_000,
      'two rollbacks and a paused rollout',
    );
    const failed = s.edges.filter((e) => e.state === 'RolledBack');
    for (const f of failed) {
      expect(f.reason).toMatch(/release 9\.9\.3: it did not connect to the hub and reconcile within 5 s/);
      const hung = Number(fs.readFileSync(path.join(dir, `hang-${f.edge}.pid`), 'utf8'));
      expect(alive(hung)).toBe(false);
    }
    expect(s.edges.filter((e) => e.state === 'Waiting')).toHaveLength(3);
    const list = await cli(['get', 'agentupgrades'], cliEnv);
    expect(list.stdout).toMatch(/up-hangs\s+9\.9\.3\s+5\s+0\s+2\s+Paused/);
  }, 180_000);

  it('an edge without room for the binary (a 16-byte budget: this release is a short launcher script) says so (NoSpace, need and budget) and keeps running the old version', async () => {
    const join = await hubApi(hub, 'POST', '/api/v1/tokens/join', { labels: { fleet: 'small' } });
    const small = startEdge('small', [
      ...['--hub', hub.url, '--join-token', join.json.token, '--name', 'small', '--blob-budget', '16'],
    ]);
    edges.set('small', small);
    await waitFor(
      () =>
        /outpost edge \S+ running/.test(small.err) ? true : small.alive ? null : Promise.reject(new Error(small.err)),
      { timeout: 60_000, what: 'edge small running' },
    );
    const good = path.join(bundleDir, 'outpost-good');
    const r = await cli(
      ['agent', 'push', good, '--release-version', NEW_VERSION, '--name', 'up-small', '-l', 'fleet=small'],
      cliEnv,
    );
    expect(r.stderr).toBe('');
    const f = path.join(dir, 'up-small.yaml');
    fs.writeFileSync(f, r.stdout);
    expect((await cli(['apply', '-f', f], cliEnv)).code).toBe(0);
    const s = await waitStatus(
      'up-small',
      (st) => st.edges.some((e) => e.edge === 'small' && e.state === 'NoSpace'),
      90_000,
      'NoSpace on the small edge',
    );
    const e = s.edges.find((x) => x.edge === 'small')!;
    expect(e.reason).toMatch(/needs \d+ bytes; .*16-byte budget: raise --blob-budget/);
    // Nothing was staged or switched: the old agent runs on, connected, with its pid.
    expect(fs.existsSync(path.join(dir, 'small', 'agent', 'upgrade.json'))).toBe(false);
    expect(small.alive).toBe(true);
    const d = await cli(['describe', 'agentupgrade', 'up-small'], cliEnv);
    expect(d.stdout).toMatch(/small\s+NoSpace/);
    await waitFor(async () => (await statusOf('up-small')).edges.find((x) => x.edge === 'small')?.online === true, {
      what: 'the small edge online',
    });
  }, 180_000);
});
