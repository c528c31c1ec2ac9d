/**
 * `outpost exec -it` into a podman workload, end to end (CLI -> hub -> tunnel -> edge agent ->
 * `podman exec -t`), with real hub and edge processes and a real pod: the session's terminal has
 * the client's size (`stty size` works; issue 15, item 13) and the output is exactly the command's.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_IMAGE, SKIP_PODMAN } from '../edge/drivers/podman/harness.js';
import { hubApi } from './fixtures/host-workloads.js';
import { podWorkload, removeEdgePods, startPodmanEdge } from './fixtures/podman-edge.js';
import { ROOT, tempDir, waitFor } from './helpers.js';
import { freePort, outpostArgs, startHubProc, type HubProc, type Proc } from './procs.js';

let dir: string;
let hub: HubProc;
let edge: Proc | undefined;

beforeAll(async () => {
  if (SKIP_PODMAN) return;
  dir = tempDir();
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--insecure-http']);
  edge = await startPodmanEdge(hub, path.join(dir, 'edge'), 'tty-1');
  const r = await hubApi(hub, 'POST', '/api/v1/apply', {
    objects: [
      podWorkload('shell', TEST_IMAGE, ['sleep', '600']),
      { kind: 'Placement', metadata: { name: 'p' }, spec: { edges: ['tty-1'], workloads: ['shell'] } },
    ],
  });
  expect(r.status).toBeLessThan(300);
  await waitFor(
    async () => (await hubApi(hub, 'GET', '/api/v1/projects/default/placements/p')).json.status?.summary?.ready === 1,
    { timeout: 60_000, what: 'the pod Ready' },
  );
}, 120_000);

afterAll(async () => {
  if (SKIP_PODMAN) return;
  await edge?.kill('SIGTERM');
  await hub?.proc.kill('SIGTERM');
  await removeEdgePods(path.join(dir, 'edge'));
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(SKIP_PODMAN)('outpost exec -it on podman', () => {
  it("gives the session a terminal of the client's size and passes the output through unchanged", async () => {
    const child = spawn(
      process.execPath,
      [...outpostArgs(), 'exec', 'edge/tty-1', 'shell', '-it', '--', 'sh', '-c', 'stty size; exit 7'],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          OUTPOST_HUB: hub.url,
          OUTPOST_TOKEN: hub.token,
          OUTPOST_CONFIG: path.join(dir, 'none.json'),
          COLUMNS: '100',
          LINES: '40',
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number>((r) => child.on('exit', (c) => r(c ?? 1)));
    child.stdin.end();
    const bytes = Buffer.concat(out);
    expect(err).toBe('');
    expect(bytes.includes(0)).toBe(false);
    expect(bytes.toString()).toBe('40 100\r\n');
    expect(code).toBe(7);
  });
});
