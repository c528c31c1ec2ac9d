/**
 * AgentUpgrade rollouts across hub replicas (issue #22): three `outpost hub` processes on one
 * PostgreSQL with one identity (--identity-key: one release key), three real edges (process
 * driver), one served by each replica. An AgentUpgrade with maxUnavailable 1 applied through
 * replica 1 upgrades the edges of every replica one at a time (the planning replica counts the
 * whole fleet from the tables; the replica serving an edge writes its order), and every replica
 * shows the same status. The release is this build bundled with another version string, as in
 * test/agent-upgrade.test.ts; the replicas' blob files are one directory (`--blob-dir`, a shared
 * filesystem in production).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { releaseBundle, releaseDir } from './fixtures/release-bundle.js';
import { edgeLocal } from './fixtures/edge-local.js';
import { hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { connectedTo, hubList } from './fixtures/replicas.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startHubProc, type HubProc } from './procs.js';

const server = new TestPostgres();
const EDGES = ['u-e1', 'u-e2', 'u-e3'];
const NEW_VERSION = '9.9.5';
let dir: string;
let bundleDir: string;
let hubs: HubProc[] = [];
const edges = new Map<string, Proc>();
const edgeDir = (e: string) => path.join(dir, e);
const envOf = (h: HubProc) => ({ OUTPOST_HUB: h.url, OUTPOST_TOKEN: h.token, OUTPOST_PROJECT: 'default' });

interface UpgradeStatus {
  phase: string;
  running: number;
  edges: { edge: string; state: string; agentVersion?: string }[];
}

async function statusOn(h: HubProc): Promise<UpgradeStatus | undefined> {
  const r = await hubApi(h, 'GET', '/api/v1/projects/default/agentupgrades/up');
  return r.status === 200 ? (r.json.status as UpgradeStatus) : undefined;
}

beforeAll(async () => {
  dir = tempDir('outpost-replicas-upgrade-');
  bundleDir = releaseDir('outpost-replicas-upgrade-');
  await releaseBundle(path.join(bundleDir, 'outpost.cjs'), {
    version: NEW_VERSION,
    commit: 'replicasupgrade',
  });
  await server.start();
  const url = server.createDatabase('hub');
  const keyFile = path.join(dir, 'identity.key');
  fs.writeFileSync(keyFile, (await cli(['hub', 'identity-key'])).stdout, { mode: 0o600 });
  const blobs = path.join(dir, 'blobs');
  // One at a time: the first puts the shared identity, the others read it.
  for (const i of [1, 2, 3]) {
    hubs.push(
      await startHubProc(path.join(dir, `hub-${i}`), await freePort(), [
        '--insecure-http',
        '--scanner',
        'none',
        '--database',
        url,
        '--identity-key',
        keyFile,
        '--blob-dir',
        blobs,
      ]),
    );
  }
  const join = (await hubApi(hubs[0], 'POST', '/api/v1/tokens/join', { labels: { fleet: 'u' }, uses: 3 })).json
    .token as string;
  for (const [i, e] of EDGES.entries()) {
    edges.set(
      e,
      new Proc([
        'edge',
        '--data',
        edgeDir(e),
        '--hub',
        hubList(hubs, i),
        '--join-token',
        join,
        '--name',
        e,
        '--driver',
        'process',
      ]),
    );
  }
  for (const [i, e] of EDGES.entries())
    await connectedTo(edgeDir(e), hubs[i]!, `${e} connected to replica ${i + 1}`, 90_000);
}, 240_000);

afterAll(async () => {
  await Promise.all([...edges.values()].map((p) => p.kill('SIGKILL')));
  for (const h of hubs) await h.proc.kill('SIGTERM').catch(() => undefined);
  killHostWorkloads(dir);
  for (const e of EDGES) {
    // A trial child runs under the edge's pid (execve) or as its child.
    const f = path.join(edgeDir(e), 'agent', 'upgrade.json');
    if (!fs.existsSync(f)) continue;
    const s = JSON.parse(fs.readFileSync(f, 'utf8')) as { trialPid?: number };
    try {
      if (s.trialPid) process.kill(s.trialPid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
  if (bundleDir) fs.rmSync(bundleDir, { recursive: true, force: true });
});

describe('AgentUpgrade across three hub replicas on one PostgreSQL', () => {
  it('applied through replica 1: the edges of every replica upgrade one at a time; every replica shows it', async () => {
    const launcher = path.join(bundleDir, 'outpost-new');
    fs.writeFileSync(launcher, `#!/bin/sh\nexec ${process.execPath} ${path.join(bundleDir, 'outpost.cjs')} "$@"\n`, {
      mode: 0o755,
    });
    const r = await cli(
      ['agent', 'push', launcher, '--release-version', NEW_VERSION, '--name', 'up', '-l', 'fleet=u'],
      envOf(hubs[0]),
    );
    expect(r.stderr).toBe('');
    const doc = parse(r.stdout) as { spec: { rollout: Record<string, unknown> } };
    doc.spec.rollout = { ...doc.spec.rollout, maxUnavailable: 1, deadline: '90s' };
    const f = path.join(dir, 'up.yaml');
    fs.writeFileSync(f, stringify(doc));
    const a = await cli(['apply', '-f', f], envOf(hubs[0]));
    expect(a.code, a.stderr).toBe(0);

    // Sampled through the replicas in turn: never more than one edge between its order and Running.
    let most = 0;
    let n = 0;
    let last: UpgradeStatus | undefined;
    await waitFor(
      async () => {
        last = await statusOn(hubs[n++ % 3]);
        if (!last) return false;
        most = Math.max(most, last.edges.filter((e) => !['Waiting', 'Running'].includes(e.state)).length);
        return last.running === 3 && last.phase === 'Complete';
      },
      { timeout: 240_000, interval: 300, what: 'three edges running the new version' },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; status: ${JSON.stringify(last)}`, { cause: err });
    });
    expect(most).toBe(1);
    for (const h of hubs) {
      await waitFor(async () => (await statusOn(h))?.phase === 'Complete', { what: `Complete through ${h.url}` });
      const s = (await statusOn(h))!;
      expect(s.running).toBe(3);
      expect(s.edges.map((e) => [e.edge, e.state])).toEqual(EDGES.map((e) => [e, 'Running']));
      const list = await cli(['get', 'agentupgrades'], envOf(h));
      expect(list.stdout).toMatch(/up\s+9\.9\.5\s+3\s+3\s+0\s+Complete/);
    }
    // Each edge runs the new agent, still on the replica that served it.
    for (const [i, e] of EDGES.entries())
      await waitFor(
        async () => {
          const s = await edgeLocal(edgeDir(e), '/status').catch(() => undefined);
          return s?.connection === 'connected' && s.hub === hubs[i].url;
        },
        { timeout: 30_000, what: `${e} back on replica ${i + 1}` },
      );
  }, 300_000);
});
