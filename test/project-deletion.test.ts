/**
 * A project's deletion survives a kill -9 of its hub midway (issue #47): its placements are
 * withdrawn and the deletion waits for its edge to confirm (the edge is away); the hub is killed,
 * started again on the same data, and resumes the recorded deletion: when the edge comes back and
 * reports its workload gone, the rest of the project goes and the edge moves to the project named
 * in the request. Another project's objects, tokens and blobs are the same before and after.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import { hubApi } from './fixtures/host-workloads.js';
import { stopAgents } from './fixtures/in-process-fleet.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort, startHubProc, type HubProc } from './procs.js';

const workload = (project: string) => ({
  kind: 'Workload',
  metadata: { name: 'w', project },
  spec: { manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } }] },
});
const placement = (project: string) => ({
  kind: 'Placement',
  metadata: { name: 'p', project },
  spec: { edgeSelector: {}, workloads: ['w'] },
});

describe('deleting a project across a kill -9 of the hub', () => {
  const dir = tempDir('outpost-project-deletion-');
  let hub: HubProc | undefined;
  let agent: EdgeAgent | undefined;
  afterAll(async () => {
    if (agent) await stopAgents([agent]);
    await hub?.proc.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('resumes the recorded deletion after a restart and never touches another project', async () => {
    const port = await freePort();
    hub = await startHubProc(path.join(dir, 'hub'), port, ['--insecure-http']);
    const api = (method: string, p: string, body?: unknown) => hubApi(hub!, method, p, body);
    const p = (name: string) => ({ kind: 'Project', metadata: { name } });
    expect(
      (
        await api('POST', '/api/v1/apply', {
          objects: [p('gone'), p('keep'), workload('gone'), placement('gone'), workload('keep'), placement('keep')],
        })
      ).status,
    ).toBe(200);
    expect((await api('POST', '/api/v1/tokens/api', { role: 'viewer', project: 'keep' })).status).toBe(201);
    const join = (await api('POST', '/api/v1/tokens/join', { project: 'gone' })).json.token as string;
    const edgeDir = path.join(dir, 'g1');
    const start = (joinToken?: string) =>
      startEdgeAgent({
        dataDir: edgeDir,
        hub: hub!.url,
        name: 'g1',
        driver: 'process',
        heartbeatMs: 1_000,
        ...(joinToken ? { joinToken } : {}),
      });
    agent = await start(join);
    await waitFor(async () => (await agent!.driver.list()).some((w) => w.name === 'w'), {
      timeout: 30_000,
      what: 'the workload on g1',
    });
    let seen = '';
    await waitFor(
      async () => {
        seen = JSON.stringify((await api('GET', '/api/v1/projects/gone/workloads/w')).json.status);
        return /"states":\{"(Ready|Running|Failed|Degraded)"/.test(seen);
      },
      { timeout: 30_000, what: 'g1 to report w' },
    ).catch((err) => {
      throw new Error(`${(err as Error).message}: ${seen}`);
    });
    // The edge goes away still holding the workload: the deletion must wait for it.
    await agent.sync.stop();
    await agent.close();
    agent = undefined;
    const keep = await snapshot(api, 'keep');

    const del = await api('DELETE', '/api/v1/projects/gone?moveEdgesTo=default');
    expect(del.status, JSON.stringify(del.json)).toBe(202);
    expect(del.json.status.phase).toBe('Terminating');
    await waitFor(
      async () => (await api('GET', '/api/v1/projects/gone')).json.status?.remaining === '1 edge still hold workloads',
      {
        timeout: 30_000,
        what: 'the deletion to wait for g1',
      },
    );
    expect((await api('GET', '/api/v1/projects/gone/placements')).json.items).toEqual([]);

    // kill -9 midway, and again on the same data.
    await hub.proc.kill('SIGKILL');
    hub = await startHubProc(path.join(dir, 'hub'), port, ['--insecure-http']);
    const after = (await api('GET', '/api/v1/projects/gone')).json;
    expect(after.status.phase).toBe('Terminating');
    expect(after.status.deletion.moveEdgesTo).toBe('default');
    expect((await api('GET', '/api/v1/projects/gone/workloads')).json.items).toHaveLength(1);

    // The edge comes back, removes the workload and says so: the deletion finishes.
    agent = await start();
    await waitFor(async () => (await api('GET', '/api/v1/projects/gone')).status === 404, {
      timeout: 60_000,
      what: 'project gone deleted',
    });
    expect((await agent.driver.list()).map((w) => w.name)).not.toContain('w');
    expect((await api('GET', '/api/v1/projects/gone/workloads')).json.items).toEqual([]);
    expect((await api('GET', '/api/v1/projects/gone/edges')).json.items).toEqual([]);
    expect((await api('GET', '/api/v1/projects/default/edges/g1')).status).toBe(200);
    expect(JSON.stringify(await snapshot(api, 'keep'))).toBe(JSON.stringify(keep));
  });
});

type Api = (method: string, p: string, body?: unknown) => Promise<{ status: number; json: any }>;

/** A project's objects (their statuses aside), tokens, blobs and Project, as the API shows them. */
async function snapshot(api: Api, p: string) {
  const out: Record<string, unknown> = {};
  for (const k of ['edges', 'workloads', 'placements', 'registries', 'dataobjects', 'agentupgrades', 'gitrepos'])
    out[k] = (await api('GET', `/api/v1/projects/${p}/${k}`)).json.items.map(({ status: _, ...o }: any) => o);
  out.tokens = (await api('GET', `/api/v1/tokens?project=${p}`)).json;
  out.blobs = (await api('GET', `/api/v1/projects/${p}/blobs`)).json;
  const { status: _, ...proj } = (await api('GET', `/api/v1/projects/${p}`)).json;
  out.project = proj;
  return out;
}
