/**
 * Issue 42, item 8: where each version of a package runs (docs/catalog.md, "Where each version
 * runs"), in-process: a hub (`--scanner none`), two edge agents on the process driver, the CLI
 * in-process. Placement `web` deploys `^1.0` (1.0.0) to both edges; 1.1.0 is published and the
 * placement, paused, resolves it again: the versions list says 1.1.0 is the placement's version
 * on no edge yet while both edges still run 1.0.0 through it; resumed, both run 1.1.0. `rollout undo` of the generated workload puts 1.0.0's manifests back, and
 * the list says the edges run 1.0.0 again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PackageVersionView } from '../core/api/types.js';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { buildPackage } from '../cli/cmd-package.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, startProcessAgents, stopAgents } from './fixtures/in-process-fleet.js';
import { tempDir, waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
const agents: EdgeAgent[] = [];

const cli = (args: string[]) => runCli(args, { env });

/** Version -> `placement:edge,edge` as the versions list says it. */
async function runs(): Promise<Record<string, string[]>> {
  const { items } = await adminApi<{ items: PackageVersionView[] }>(
    hub,
    'GET',
    '/api/v1/projects/default/packages/web',
  );
  return Object.fromEntries(
    items.map((v) => [
      v.version,
      (v.placements ?? []).map((p) => `${p.placement} ${p.versionRange}:${p.edges.join(',')}/${p.edgeCount}`),
    ]),
  );
}

async function publish(version: string): Promise<void> {
  const d = path.join(dir, `web-${version}`);
  fs.mkdirSync(d);
  fs.writeFileSync(
    path.join(d, 'package.yaml'),
    `kind: Package
metadata: { name: web }
spec:
  version: ${version}
  workloads:
    - name: app
      manifests:
        - apiVersion: v1
          kind: Pod
          metadata: { name: app }
          spec:
            terminationGracePeriodSeconds: 1
            containers:
              - { name: main, image: busybox, command: [/bin/busybox, sh, -c, 'echo ${version} && exec /bin/busybox sleep 3600'] }
`,
  );
  const { file } = await buildPackage(d, path.join(dir, `web-${version}.tgz`));
  const r = await cli(['package', 'push', file]);
  expect(r.code, r.stderr).toBe(0);
}

const placement = (paused: boolean) => ({
  kind: 'Placement',
  metadata: { name: 'web' },
  spec: {
    edgeSelector: { matchLabels: { region: 'eu' } },
    package: { name: 'web', version: '^1.0' },
    rollout: { paused, maxUnavailable: 1 },
  },
});

beforeAll(async () => {
  dir = tempDir('outpost-catalog-runs-');
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    scanner: { kind: 'none' },
  });
  env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken, OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  await startProcessAgents(hub, dir, ['w1', 'w2'], { region: 'eu' }, agents);
}, 60_000);

afterAll(async () => {
  await stopAgents(agents);
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('where each package version runs', () => {
  it('follows the edges through a rollout from 1.0.0 to 1.1.0 and back with rollout undo', async () => {
    await publish('1.0.0');
    await adminApi(hub, 'POST', '/api/v1/apply', { objects: [placement(false)] });
    await waitFor(async () => (await runs())['1.0.0']?.[0] === 'web ^1.0:w1,w2/2', {
      timeout: 30_000,
      what: '1.0.0 on both edges',
    });

    // 1.1.0 published; the placement resolves it again while paused: no edge has it yet.
    await publish('1.1.0');
    await adminApi(hub, 'POST', '/api/v1/apply', { objects: [placement(true)] });
    const restart = await cli(['rollout', 'restart', 'placement', 'web']);
    expect(restart.code, restart.stderr).toBe(0);
    const paused = await waitFor(async () => {
      const r = await runs();
      return r['1.1.0']?.length ? r : undefined;
    });
    expect(paused).toEqual({ '1.1.0': ['web ^1.0:/0'], '1.0.0': ['web ^1.0:w1,w2/2'] });

    // Resumed: both edges move to 1.1.0.
    await adminApi(hub, 'POST', '/api/v1/apply', { objects: [placement(false)] });
    await waitFor(async () => (await runs())['1.1.0']?.[0] === 'web ^1.0:w1,w2/2', {
      timeout: 30_000,
      what: '1.1.0 on both edges',
    });
    expect((await runs())['1.0.0']).toEqual([]);

    // rollout undo of the generated workload: its manifests are 1.0.0's again, on both edges.
    const undo = await cli(['rollout', 'undo', 'workload', 'web-app']);
    expect(undo.code, undo.stderr).toBe(0);
    await waitFor(async () => (await runs())['1.0.0']?.[0] === 'web ^1.0:w1,w2/2', {
      timeout: 30_000,
      what: '1.0.0 on both edges after the undo',
    });
    expect(await runs()).toEqual({ '1.1.0': ['web ^1.0:/0'], '1.0.0': ['web ^1.0:w1,w2/2'] });
  }, 120_000);
});
