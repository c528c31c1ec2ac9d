/**
 * Issue 41, item 10: text from the edges reaches the operator's terminal escaped (core/text.ts,
 * cli/output.ts). An in-process hub and edge agent (process driver), the CLI in-process: a
 * workload exports a file whose name holds ESC [2J (clear the screen) and a newline (a forged
 * row); `outpost data ls` prints one row with the name escaped and no raw control character,
 * while `-o json` keeps the name exact (JSON escapes it) for scripts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EGRESS_ANNOTATION } from '../core/data.js';
import type { EdgeAgent } from '../edge/agent.js';
import type { Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { hostPod, killHostWorkloads } from './fixtures/host-workloads.js';
import {
  adminApi,
  startInProcessHub,
  startProcessAgents,
  stopAgents,
  stopInProcess,
} from './fixtures/in-process-fleet.js';
import { waitFor } from './helpers.js';

const NAME = 'a\u001b[2J\nb.txt';

let dir: string;
let pids: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
const agents: EdgeAgent[] = [];
const cli = (args: string[]) => runCli(args, { env });

beforeAll(async () => {
  ({ dir, hub, env } = await startInProcessHub('outpost-edge-text-'));
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  await startProcessAgents(hub, dir, ['e1'], { site: 'a' }, agents);
}, 60_000);

afterAll(async () => {
  await stopAgents(agents);
  killHostWorkloads(pids);
  await stopInProcess({ hub, dir });
});

describe('text from the edges in the terminal', () => {
  it('outpost data ls shows a file name with ESC [2J and a newline escaped, in one row', async () => {
    const w = hostPod('namer', `sh -c 'printf x > "$OUTPOST_EXPORT_DIR/$F" && exec sleep 3600'`, {
      pidDir: pids,
      env: [{ name: 'F', value: NAME }],
    });
    (w.spec.manifests[0].metadata as Record<string, unknown>).annotations = {
      [EGRESS_ANNOTATION]: JSON.stringify([{ target: 'out' }]),
    };
    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [w, { kind: 'Placement', metadata: { name: 'namer' }, spec: { edges: ['e1'], workloads: ['namer'] } }],
    });
    await waitFor(
      async () =>
        (await adminApi(hub, 'GET', '/api/v1/projects/default/edges/e1/data-files')).items.some(
          (f: { path: string }) => f.path === `out/${NAME}`,
        ),
      { timeout: 40_000, what: 'the file on the hub' },
    );

    const r = await cli(['data', 'ls', 'edge/e1']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines).toHaveLength(3); // the header, one row, and the end
    expect(lines[1]).toMatch(/^namer\s+out\/a\\x1b\[2J\\nb\.txt\s+1 B\s+sha256:/);
    expect([...r.stdout.replace(/\n/g, '')].filter((c) => c < ' ' || (c >= '\u007f' && c <= '\u009f'))).toEqual([]);

    // Scripts read the exact name: JSON escapes it by its own rules.
    const json = await cli(['data', 'ls', 'edge/e1', '-o', 'json']);
    expect((JSON.parse(json.stdout) as { path: string }[]).map((f) => f.path)).toEqual([`out/${NAME}`]);
    expect(json.stdout).not.toContain('\u001b');
  }, 60_000);
});
