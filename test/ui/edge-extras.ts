/**
 * @module What the edge page shows besides workloads, given to one process-driver edge of a
 * browser suite (test/ui/ui.test.ts): an AgentUpgrade to a release that fails its trial (pushed
 * with the CLI in-process, switched to by the real launcher: test/fixtures/in-process-switch.ts),
 * a DataObject (`prices`, v1), and a prestaged placement (`app`) of an image in the hub's cache,
 * which the process driver reports Skipped. The hub must sign unscanned binaries (`--scanner none`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { parse } from 'yaml';
import type { EdgeAgent } from '../../edge/agent.js';
import { readUpgradeState } from '../../edge/upgrade/switch.js';
import type { Hub } from '../../hub/hub.js';
import { runCli } from '../fixtures/cli.js';
import { adminApi } from '../fixtures/in-process-fleet.js';
import { failingRelease, switchInProcess } from '../fixtures/in-process-switch.js';
import { writeOciArchive } from '../fixtures/oci-archive.js';
import { waitFor } from '../helpers.js';

/**
 * Gives the edge of `agent` (started by startProcessAgent in `dir`) release 9.9.7, rolled back,
 * the DataObject and the staged image; returns the agent started again after the switch.
 */
export async function seedEdgeExtras(hub: Hub, dir: string, agent: EdgeAgent): Promise<EdgeAgent> {
  const edge = agent.config.name;
  const env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken, OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  const cli = async (args: string[]) => {
    const r = await runCli(args, { env });
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  };
  const upgrade = parse(await cli(['agent', 'push', failingRelease(dir, '9.9.7')]));
  upgrade.spec = { ...upgrade.spec, edgeSelector: undefined, edges: [edge] };
  await adminApi(hub, 'POST', '/api/v1/apply', { objects: [upgrade] });
  const options = {
    dataDir: path.join(dir, edge),
    hub: hub.url,
    name: edge,
    driver: 'process' as const,
    heartbeatMs: 1_000,
  };
  await waitFor(() => readUpgradeState(options.dataDir)?.state === 'trial', {
    timeout: 30_000,
    what: `${edge} staged 9.9.7 and asks to restart into it`,
  });
  const switched = (await switchInProcess(agent, options)).agent;

  const prices = path.join(dir, 'prices.csv');
  fs.writeFileSync(prices, 'apples,3\n');
  await cli(['data', 'publish', '-f', prices, '--name', 'prices', '--edges', edge]);
  const host = new URL(hub.url).host;
  await cli(['image', 'push', await writeOciArchive(path.join(dir, 'app.tar'), 64 * 1024), 'team/app:v1']);
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
                terminationGracePeriodSeconds: 1,
                containers: [
                  { name: 'main', image: `${host}/default/team/app:v1`, command: ['/bin/busybox', 'sleep', '3600'] },
                ],
              },
            },
          ],
        },
      },
      {
        kind: 'Placement',
        metadata: { name: 'app' },
        spec: { edges: [edge], workloads: ['app'], rollout: { prestage: true } },
      },
    ],
  });
  return switched;
}
