/**
 * Decommission seen from the edge (issue 15, item 12), with real hub and edge processes (process
 * driver): the agent learns it from the hub, whether connected at the time (typed close) or
 * offline (the 401 it gets when it dials again carries code `decommissioned`); it writes
 * DATA/decommissioned.json, stops syncing and stops its workloads, `edge local status` says so, and
 * `outpost edge uninstall --yes` removes the workloads, the unit (systemctl: test/fakes/systemctl)
 * and the data directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { startFleet } from './fixtures/edge-procs.js';
import { ROOT, tempDir, waitFor } from './helpers.js';
import { cli, startEdgeProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let pids: string;
let hub: HubProc;
const edges: Proc[] = [];

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].startsWith('Z');
  } catch {
    return false;
  }
};
const pidOf = (name: string): number => Number(fs.readFileSync(path.join(pids, `${name}.pid`), 'utf8'));
const localStatus = async (data: string): Promise<any> =>
  JSON.parse((await cli(['edge', 'local', 'status', '-o', 'json', '--data', data])).stdout || 'null');

beforeAll(async () => {
  dir = tempDir();
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  const fleet = await startFleet({
    dir,
    edgeName: 'gone-1',
    labels: { site: 'a' },
    objects: [
      hostPod('w1', 'sleep 600', { pidDir: pids }),
      { kind: 'Placement', metadata: { name: 'p' }, spec: { edges: ['gone-1'], workloads: ['w1'] } },
    ],
    placement: 'p',
    ready: 1,
  });
  hub = fleet.hub;
  edges.push(fleet.edge);
}, 120_000);

afterAll(async () => {
  for (const e of edges) await e.kill('SIGTERM').catch(() => undefined);
  await hub?.proc.kill('SIGTERM');
  killHostWorkloads(pids);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a decommissioned edge', () => {
  it('connected at the time: stops syncing and its workloads, says so locally, and uninstalls cleanly', async () => {
    const data = path.join(dir, 'edge');
    const w1 = pidOf('w1');
    expect(alive(w1)).toBe(true);
    const r = await hubApi(hub, 'POST', '/api/v1/projects/default/edges/gone-1/decommission');
    expect(r.status).toBe(200);

    const st = await waitFor(
      async () => {
        const s = await localStatus(data);
        return s?.connection === 'decommissioned' ? s : null;
      },
      { timeout: 20_000, what: 'the agent to know it is decommissioned' },
    );
    expect(st.decommissioned.message).toContain('decommissioned');
    expect(fs.existsSync(path.join(data, 'decommissioned.json'))).toBe(true);
    await waitFor(async () => !alive(w1), { timeout: 20_000, what: 'the workload stopped' });
    const table = await cli(['edge', 'local', 'status', '--data', data]);
    expect(table.stdout).toMatch(/DECOMMISSIONED at .*\n.*outpost edge uninstall --yes/);

    // Without --yes: the plan, and nothing changed.
    const unitDir = path.join(dir, 'units');
    fs.mkdirSync(unitDir);
    fs.writeFileSync(path.join(unitDir, 'outpost-edge.service'), '[Service]\nExecStart=/usr/local/bin/outpost edge\n');
    const log = path.join(dir, 'systemctl.log');
    const env = {
      PATH: `${path.join(ROOT, 'test', 'fakes')}:${process.env.PATH}`,
      OUTPOST_FAKE_SYSTEMCTL_LOG: log,
      OUTPOST_FAKE_SERVICE_PID: String(edges[0].child.pid),
    };
    const dry = await cli(['edge', 'uninstall', '--data', data, '--unit-dir', unitDir], env);
    expect(dry.code).not.toBe(0);
    expect(dry.stderr).toContain('remove every workload of edge gone-1 (driver process)');
    expect(dry.stderr).toContain('nothing was changed; run again with --yes');
    expect(fs.existsSync(data)).toBe(true);
    expect(fs.existsSync(log)).toBe(false);

    const done = await cli(['edge', 'uninstall', '--data', data, '--unit-dir', unitDir, '--yes'], env);
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(done.stdout).toContain('removed workload w1');
    expect(fs.readFileSync(log, 'utf8')).toBe('disable --now outpost-edge.service\ndaemon-reload\n');
    expect(edges[0].alive).toBe(false);
    expect(fs.existsSync(path.join(unitDir, 'outpost-edge.service'))).toBe(false);
    expect(fs.existsSync(data)).toBe(false);
    expect(alive(w1)).toBe(false);
  });

  it('offline at the time: learns it from the 401 when it dials again, and does not sync', async () => {
    const data = path.join(dir, 'edge-2');
    const join = await hubApi(hub, 'POST', '/api/v1/tokens/join', {});
    let agent = await startEdgeProc(data, ['--hub', hub.url, '--join-token', join.json.token, '--name', 'gone-2']);
    edges.push(agent);
    await waitFor(async () => (await localStatus(data))?.connection === 'connected', { what: 'gone-2 connected' });
    await agent.kill('SIGTERM');
    expect((await hubApi(hub, 'POST', '/api/v1/projects/default/edges/gone-2/decommission')).status).toBe(200);

    agent = await startEdgeProc(data);
    edges.push(agent);
    const st = await waitFor(
      async () => {
        const s = await localStatus(data);
        return s?.connection === 'decommissioned' ? s : null;
      },
      { timeout: 20_000, what: 'gone-2 to learn it is decommissioned' },
    );
    expect(st.decommissioned.message).toMatch(/decommissioned on .*outpost edge uninstall/);
    // A restarted agent keeps to it: it does not dial the hub again (the hub counts every refusal).
    await agent.kill('SIGTERM');
    const refusals = async (): Promise<number> =>
      Number(
        /outpost_hub_sync_refusals_total\{code="unauthorized"\} (\d+)/.exec(
          await (await fetch(`${hub.url}/metrics`)).text(),
        )?.[1] ?? 0,
      );
    const before = await refusals();
    expect(before).toBeGreaterThan(0);
    agent = await startEdgeProc(data);
    edges.push(agent);
    expect((await localStatus(data)).connection).toBe('decommissioned');
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await refusals()).toBe(before);
  });
});
