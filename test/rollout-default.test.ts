/**
 * A Placement that says nothing of its rollout, as an operator writes one first: four edges (an
 * in-process hub and process-driver agents, the CLI in-process). `apply` and `diff` say how it will
 * roll out (25% at a time, the default); a version that cannot start then reaches one edge, the
 * rollout pauses at its failure threshold, and the three others keep running the version before.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import type { Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, startInProcessHub, startProcessAgents, stopInProcess } from './fixtures/in-process-fleet.js';
import { waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
const agents: EdgeAgent[] = [];
const cli = (args: string[]) => runCli(args, { env });

const EDGES = ['r1', 'r2', 'r3', 'r4'];

/** A workload whose one process runs `command` (busybox sh from the host). */
function workloadFile(name: string, command: string): string {
  const file = path.join(dir, `${name}-${Date.now()}.yaml`);
  fs.writeFileSync(
    file,
    `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata: { name: ${name} }
spec:
  manifests:
    - apiVersion: v1
      kind: Pod
      metadata: { name: ${name} }
      spec:
        containers:
          - name: main
            command: ["${command}", "-c", "exec sleep 600"]
`,
  );
  return file;
}

beforeAll(async () => {
  ({ dir, hub, env } = await startInProcessHub('outpost-rollout-default-'));
  await startProcessAgents(hub, dir, EDGES, { fleet: 'safe' }, agents);
}, 120_000);

afterAll(async () => {
  await stopInProcess({ agents, hub, dir });
});

describe('the default rollout of a Placement', () => {
  it('apply and diff show 1 edge at a time of 4; a broken version reaches one edge and pauses', async () => {
    const placement = path.join(dir, 'placement.yaml');
    fs.writeFileSync(
      placement,
      `apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata: { name: safe }
spec:
  edgeSelector: { matchLabels: { fleet: safe } }
  workloads: [app]
`,
    );
    const diff = await cli(['diff', '-f', workloadFile('app', '/bin/sh'), '-f', placement]);
    expect(diff.code).toBe(0);
    expect(diff.stdout).toContain(
      '# placement/safe rollout: 1 edge at a time of 4 (maxUnavailable 25%, the default); pauses after 1 failure',
    );
    const applied = await cli(['apply', '-f', workloadFile('app', '/bin/sh'), '-f', placement]);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain('placement/safe created\n');
    expect(applied.stdout).toContain(
      '  rollout: 1 edge at a time of 4 (maxUnavailable 25%, the default); pauses after 1 failure',
    );
    await waitFor(
      async () => {
        const st = (await adminApi(hub, 'GET', '/api/v1/projects/default/placements/safe')).status;
        return st?.summary.ready === 4 && st.rollout?.phase === 'Complete';
      },
      { what: 'app Ready on the 4 edges, one at a time', timeout: 90_000 },
    );

    // A version that cannot start (its command does not exist on the edges).
    const broken = await cli(['apply', '-f', workloadFile('app', '/opt/nowhere/sh')]);
    expect(broken.code).toBe(0);
    const st = await waitFor(
      async () => {
        const p = await adminApi(hub, 'GET', '/api/v1/projects/default/placements/safe');
        return p.status?.rollout?.phase === 'Paused' ? p.status : undefined;
      },
      { what: 'the rollout to pause at its failure threshold', timeout: 60_000 },
    );
    expect(st.rollout.counts.failed).toBe(1);
    // The three others were never ordered the broken version: they run the one before.
    const generations = await Promise.all(
      agents.map(async (a) => (await a.driver.list()).find((w) => w.name === 'app')?.phase),
    );
    expect(generations.filter((p) => p === 'Ready')).toHaveLength(3);
    expect(generations.filter((p) => p === 'Failed')).toHaveLength(1);
  });
});
