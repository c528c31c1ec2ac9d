/**
 * Issue 42, item 7: what `outpost describe edge` and the edge's status show of what runs there
 * besides its workloads. An in-process hub, one in-process edge agent (process driver), the CLI
 * in-process, the real launcher in-process for the switch (test/fixtures/in-process-switch.ts):
 *
 * - an AgentUpgrade to a release that fails its trial: the rollback reason ends with the last ten
 *   lines the new binary wrote on stderr; describe edge lists the switch in the edge's release
 *   history (when, ordered by which AgentUpgrade, why), and the edge's events (`describe edge`,
 *   `get events --for edge/NAME`) include the AgentUpgrade's Ordered and RolledBack events;
 * - the DataObjects the edge holds, the version its file holds and the one on its way;
 * - the images it staged for a prestaged rollout.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { EdgeStatusView } from '../core/api/views.js';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import { readUpgradeState } from '../edge/upgrade/switch.js';
import type { Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, startInProcessHub, stopInProcess } from './fixtures/in-process-fleet.js';
import { failingRelease, switchInProcess } from './fixtures/in-process-switch.js';
import { writeOciArchive } from './fixtures/oci-archive.js';
import { waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
const agents: EdgeAgent[] = [];
/** Each restart the agent asked for, to switch into a staged binary. */
const restarts: string[] = [];
let options: Parameters<typeof startEdgeAgent>[0];

const cli = (args: string[]) => runCli(args, { env });
const describeEdge = async () => {
  const r = await cli(['describe', 'edge', 'e1']);
  expect(r.stderr).toBe('');
  return r.stdout;
};
const edgeStatus = async (): Promise<EdgeStatusView> =>
  (await adminApi(hub, 'GET', '/api/v1/projects/default/edges/e1')).status;
/** Waits until describe edge matches `re`; on timeout says what it showed. */
async function describes(re: RegExp, what: string): Promise<string> {
  let last = '';
  try {
    return await waitFor(async () => ((last = await describeEdge()), re.test(last) ? last : null), {
      timeout: 30_000,
      what,
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}; describe edge showed:\n${last}`, { cause: err });
  }
}

beforeAll(async () => {
  ({ dir, hub, env } = await startInProcessHub('outpost-edge-describe-', { scanner: { kind: 'none' } }));
  const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', {
    project: 'default',
    labels: { region: 'eu' },
  });
  options = {
    dataDir: path.join(dir, 'e1'),
    hub: hub.url,
    joinToken: join.token,
    name: 'e1',
    driver: 'process',
    heartbeatMs: 1_000,
    restartForSwitch: (v) => restarts.push(v),
  };
  agents.push(await startEdgeAgent(options));
  await waitFor(() => agents[0]!.sync.state === 'connected', { timeout: 30_000, what: 'edge e1 connected' });
}, 60_000);

afterAll(async () => {
  await stopInProcess({ agents, hub, dir });
});

describe('describe edge', () => {
  it("a release that fails its trial: the reason ends with its last stderr lines, the release history says who ordered it and why it rolled back, the AgentUpgrade events are among the edge's", async () => {
    const pushed = await cli(['agent', 'push', failingRelease(dir, '9.9.7')]);
    expect(pushed.stderr).toBe('');
    const upgrade = parse(pushed.stdout) as { metadata: { name: string } };
    expect(upgrade.metadata.name).toBe('agent-9-9-7');
    await adminApi(hub, 'POST', '/api/v1/apply', { objects: [upgrade] });
    await waitFor(() => restarts.length === 1 && readUpgradeState(options.dataDir)?.state === 'trial', {
      timeout: 30_000,
      what: 'e1 staged 9.9.7 and asked to restart into it',
    });

    const { agent, state } = await switchInProcess(agents[0]!, options);
    agents[0] = agent;
    // The last ten of its twelve lines on stderr, newest last, after why the trial failed.
    const tail = Array.from({ length: 10 }, (_, i) => `9.9.7 trial line ${i + 3}: cannot start`).join(' | ');
    const reason = `release 9.9.7: it exited (code 4) before it connected and reconciled; its last lines on stderr: ${tail}`;
    expect(state).toMatchObject({ state: 'rolled-back', version: '9.9.7', reason });
    expect(state!.history).toEqual([
      expect.objectContaining({ version: '9.9.7', state: 'rolled-back', upgrade: 'agent-9-9-7', reason }),
    ]);

    // The hub hears it in the edge's report: the AgentUpgrade's status, the release history.
    await waitFor(
      async () => {
        const u = await adminApi(hub, 'GET', '/api/v1/projects/default/agentupgrades/agent-9-9-7');
        return u.status.edges.find((e: { edge: string; state: string }) => e.edge === 'e1')?.state === 'RolledBack';
      },
      { timeout: 30_000, what: 'e1 RolledBack in agent-9-9-7' },
    );
    const text = await describes(
      /RolledBack\s+edge e1 rolled back 9\.9\.7/,
      'the RolledBack event of agent-9-9-7 on e1',
    );
    expect(text).toContain(`Agent release:   9.9.7 RolledBack (from `);
    expect(text).toMatch(
      new RegExp(
        `Agent release history \\(newest first, times on the edge\\):\\n\\s+ENDED\\s+VERSION\\s+FROM\\s+RESULT\\s+ORDERED BY\\s+REASON\\n\\s+\\S+ \\(\\d+s ago\\)\\s+9\\.9\\.7\\s+\\S+\\s+RolledBack\\s+agentupgrade/agent-9-9-7\\s+${reason.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`,
      ),
    );
    expect(text).not.toContain('trial line 2:');
    // Its events and the AgentUpgrade's about it, that one named.
    expect(text).toMatch(/Events:\n\s+AGE\s+OBJECT\s+REASON\s+MESSAGE\n/);
    expect(text).toMatch(/agentupgrade\/agent-9-9-7\s+Ordered\s+edge e1 ordered to switch to 9\.9\.7/);
    expect(text).toMatch(/\s-\s+Connected\s/);

    const events = await cli(['get', 'events', '--for', 'edge/e1']);
    expect(events.stderr).toBe('');
    expect(events.stdout).toMatch(/agentupgrade\/agent-9-9-7\s+Ordered\s+edge e1 ordered to switch to 9\.9\.7/);
    expect(events.stdout).toMatch(
      /agentupgrade\/agent-9-9-7\s+RolledBack\s+edge e1 rolled back 9\.9\.7: release 9\.9\.7: it exited \(code 4\)/,
    );
    expect(events.stdout).toMatch(/edge\/e1\s+Enrolled\s/);
    // The API says what `edge` lists, and refuses it mixed with kind and name.
    const res = await fetch(`${hub.url}/api/v1/projects/default/events?edge=e1&kind=Edge`, {
      headers: { authorization: `Bearer ${hub.adminToken}` },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('give edge, or kind and name, not both');
  }, 90_000);

  it('the DataObjects the edge holds: the version its file holds and the one on its way', async () => {
    const file = path.join(dir, 'prices.csv');
    fs.writeFileSync(file, 'apples,3\n');
    const v1 = await cli(['data', 'publish', '-f', file, '--name', 'prices', '-l', 'region=eu']);
    expect(v1.code, v1.stderr).toBe(0);
    await describes(
      /DataObjects:\n\s+NAME\s+PATH\s+HOLDS\s+STATE\s+SINCE\s+REASON\n\s+prices\s+prices\s+v1\s+Delivered v1\s/,
      'prices v1 delivered',
    );
    // The next version waits for its activation an hour ahead: the file still holds v1.
    fs.writeFileSync(file, 'apples,4\n');
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const v2 = await cli(['data', 'publish', '-f', file, '--name', 'prices', '-l', 'region=eu', '--activate-at', at]);
    expect(v2.code, v2.stderr).toBe(0);
    await describes(/\n\s+prices\s+prices\s+v1\s+Waiting v2\s/, 'prices v2 waiting, v1 held');
    expect((await edgeStatus()).dataObjects).toEqual([
      expect.objectContaining({ name: 'prices', path: 'prices', state: 'Waiting', version: 'v2', holds: 'v1' }),
    ]);
    // Lists leave it out: each edge's would be one more read.
    const list = await adminApi(hub, 'GET', '/api/v1/projects/default/edges');
    expect(list.items[0].status.dataObjects).toBeUndefined();
  }, 60_000);

  it('the images it staged for a prestaged rollout, each with its state and why', async () => {
    const host = new URL(hub.url).host;
    const archive = await writeOciArchive(path.join(dir, 'app.tar'), 64 * 1024);
    const pushed = await cli(['image', 'push', archive, 'team/app:v1']);
    expect(pushed.code, pushed.stderr).toBe(0);
    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'Workload',
          metadata: { name: 'app' },
          spec: {
            manifests: [
              {
                apiVersion: 'v1',
                kind: 'Pod',
                metadata: { name: 'app' },
                spec: {
                  containers: [{ name: 'main', image: `${host}/default/team/app:v1`, command: ['sleep', '3600'] }],
                },
              },
            ],
          },
        },
        {
          kind: 'Placement',
          metadata: { name: 'app' },
          spec: { edgeSelector: { matchLabels: { region: 'eu' } }, workloads: ['app'], rollout: { prestage: true } },
        },
      ],
    });
    const text = await describes(/Staged images \(images staged 1\/1/, 'the image staged on e1');
    expect(text).toMatch(
      new RegExp(
        `Staged images \\(images staged 1/1, [^)]*\\):\\n\\s+IMAGE\\s+STATE\\s+SIZE\\s+DONE\\s+REASON\\n\\s+${host.replace(/\./g, '\\.')}/default/team/app\\S*\\s+Skipped\\s+\\S+ \\S+\\s+0 B\\s+the process driver runs no images\\n`,
      ),
    );
  }, 60_000);
});
