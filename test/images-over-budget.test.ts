/**
 * Issue 42, item 8: an edge over a placement's `prestageBudget` (docs/drivers.md, "Pre-staging")
 * is told once. An in-process hub with an image in its cache (`outpost image push` of an OCI
 * archive, the CLI in-process) and an in-process edge agent on the podman driver, which lacks the
 * image and so reports it OverBudget without fetching a byte. The placement gets one `OverBudget`
 * event naming the edge and the budget, and no more however often the edge reports it again or the
 * planner passes (the budget changed twice, still too small); a new version over the budget is
 * told once more. The placement's staging status counts the edge over budget, with its reason.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventView, PlacementStatusView } from '../core/api/views.js';
import { startEdgeAgent, type EdgeAgent } from '../edge/agent.js';
import { SKIP_PODMAN } from '../edge/drivers/podman/harness.js';
import { startHub, type Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, stopAgents } from './fixtures/in-process-fleet.js';
import { writeOciArchive } from './fixtures/oci-archive.js';
import { tempDir, waitFor } from './helpers.js';

const EDGE = 'ob-1';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
let host: string;
const agents: EdgeAgent[] = [];

const apply = (...objects: unknown[]) => adminApi(hub, 'POST', '/api/v1/apply', { objects });
const overBudgetEvents = async (): Promise<EventView[]> =>
  (await adminApi(hub, 'GET', '/api/v1/projects/default/events?kind=Placement&name=big&reason=OverBudget')).items;
const placementStatus = async (): Promise<PlacementStatusView> =>
  (await adminApi(hub, 'GET', '/api/v1/projects/default/placements/big')).status;
/** Pushes a new 64 KiB image as team/big:TAG; returns its pinned name. */
async function pushImage(tag: string): Promise<string> {
  const archive = await writeOciArchive(path.join(dir, `big-${tag}.tar`), 64 * 1024);
  const r = await runCli(['image', 'push', archive, `team/big:${tag}`], { env });
  expect(r.code, r.stderr).toBe(0);
  return `${host}/default/team/big@${r.stdout.trim().split('@')[1]}`;
}

const workload = (tag: string) => ({
  kind: 'Workload',
  metadata: { name: 'big' },
  spec: {
    manifests: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'big' },
        spec: { containers: [{ name: 'main', image: `${host}/default/team/big:${tag}`, command: ['sleep', '600'] }] },
      },
    ],
  },
});
const placement = (budget: string) => ({
  kind: 'Placement',
  metadata: { name: 'big' },
  spec: { edges: [EDGE], workloads: ['big'], rollout: { prestage: true, prestageBudget: budget } },
});

/** Waits until the edge reports `image` over `budget` and the planner has passed on that report. */
async function reportedOver(image: string, budget: string): Promise<void> {
  const reason = async () => {
    const s = (await adminApi(hub, 'GET', `/api/v1/projects/default/edges/${EDGE}`)).status;
    const i = s.imageStaging?.images?.find((x: any) => x.image === image);
    return i?.state === 'OverBudget' ? (i.reason as string) : undefined;
  };
  await waitFor(async () => (await reason())?.includes(`prestageBudget (${budget})`), {
    timeout: 60_000,
    what: `the edge to report ${image} over the budget ${budget}`,
  });
  // The rollout's reason quotes the edge's: the images gate has passed over this report.
  await waitFor(async () => (await placementStatus()).rollout?.reason.includes(`prestageBudget (${budget})`), {
    timeout: 30_000,
    what: `the planner to pass over the report with budget ${budget}`,
  });
}

beforeAll(async () => {
  if (SKIP_PODMAN) return;
  dir = tempDir('outpost-over-budget-');
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0', insecureHttp: true });
  host = new URL(hub.url).host;
  env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken, OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', { project: 'default', uses: 1 });
  agents.push(
    await startEdgeAgent({
      dataDir: path.join(dir, EDGE),
      hub: hub.url,
      joinToken: join.token,
      name: EDGE,
      driver: 'podman',
      heartbeatMs: 1_000,
    }),
  );
}, 60_000);

afterAll(async () => {
  if (SKIP_PODMAN) return;
  await stopAgents(agents);
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(SKIP_PODMAN)('an edge over the prestage budget', () => {
  it('records one OverBudget event per edge, placement and version, not one per report', async () => {
    const v1 = await pushImage('v1');
    await apply(workload('v1'), placement('1000'));
    await reportedOver(v1, '1000');
    await waitFor(async () => (await overBudgetEvents()).length > 0, { timeout: 30_000, what: 'the OverBudget event' });
    const [first] = await overBudgetEvents();
    expect(first.message).toContain(`edge ${EDGE} does not stage the new version's images`);
    expect(first.message).toContain("more than placement default/big's prestageBudget (1000)");

    // The placement's staging status counts the edge over budget and gives its reason.
    const s = (await placementStatus()).imageStaging!;
    expect(s).toMatchObject({ staged: 0, edges: 1, overBudget: 1, failed: 0, bytes: 0 });
    expect(s.totalBytes).toBeGreaterThan(64 * 1024);
    expect(s.summary).toMatch(/^images staged on 0\/1 edges, 0\.0 MB of 0\.1 MB, 1 over budget$/);
    expect(s.problems).toEqual([{ edge: EDGE, state: 'OverBudget', reason: expect.stringContaining('(1000)') }]);

    // The same version, reported again and again (new budgets, still too small): no new event.
    for (const budget of ['2000', '3000']) {
      await apply(placement(budget));
      await reportedOver(v1, budget);
    }
    expect(await overBudgetEvents()).toHaveLength(1);

    // A new version over the budget: told once more.
    const v2 = await pushImage('v2');
    await apply(workload('v2'));
    await reportedOver(v2, '3000');
    await waitFor(async () => (await overBudgetEvents()).length === 2, {
      timeout: 30_000,
      what: 'an OverBudget event for the new version',
    });
    await apply(placement('4000'));
    await reportedOver(v2, '4000');
    expect(await overBudgetEvents()).toHaveLength(2);
  }, 180_000);
});
