/**
 * The README's "A hub and two edges on one machine, by hand", step by step through the packaged
 * `dist/outpost`: a TLS hub, `login`, a join token for two edges labelled region=eu, edge e1 and
 * edge e2 with `--labels site=lyon` (process driver, both on this host), `apply -f
 * examples/hello.yaml`, and `get placements` reaching hello-eu READY 2/2. Both edges run busybox
 * httpd on this host: the example's customization moves e2 to port 8081 (before it, e2 failed to
 * bind 8080 and the placement stayed 1/2 Degraded). Only the hub port is chosen free here; the
 * workload ports are the example's own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir, waitFor } from '../helpers.js';
import { freePort } from '../procs.js';
import { buildOnce, ok, run, startEdge, startHub, type Exe } from './binary.js';

let dir: string;
let hub: Exe;
let hubUrl: string;
let env: Record<string, string>;
const edges: Exe[] = [];

beforeAll(async () => {
  await buildOnce();
  dir = tempDir('outpost-readme-');
  ({ proc: hub, url: hubUrl } = await startHub(path.join(dir, 'hub'), await freePort()));
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
}, 240_000);

afterAll(async () => {
  // Workloads outlive their agents by design: delete the placement and let the edges stop them.
  if (hub?.alive) {
    await run(['delete', 'placement', 'hello-eu'], env);
    await waitFor(
      async () => {
        const list = JSON.parse((await run(['get', 'edges', '-o', 'json'], env)).stdout || '{"items":[]}');
        return (list.items ?? list).every((e: any) => (e.status.workloads ?? []).length === 0);
      },
      { timeout: 30_000, what: 'the edges to stop hello' },
    ).catch(() => undefined);
  }
  for (const e of edges) await e.kill('SIGTERM');
  await hub?.kill('SIGTERM');
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 90_000);

describe("the README's two edges by hand", () => {
  it('examples/hello.yaml runs on both process edges of one host: hello-eu READY 2/2', async () => {
    const admin = fs.readFileSync(path.join(dir, 'hub', 'admin.token'), 'utf8').trim();
    await ok(['login', '--hub', hubUrl, '--token', admin], env);
    const join = (await ok(['token', 'create', '--labels', 'region=eu', '--uses', '2'], env)).trim();
    const common = ['--hub', hubUrl, '--join-token', join, '--driver', 'process'];
    edges.push(await startEdge(path.join(dir, 'e1'), [...common, '--name', 'e1']));
    edges.push(await startEdge(path.join(dir, 'e2'), [...common, '--name', 'e2', '--labels', 'site=lyon']));

    const applied = await ok(['apply', '-f', path.join(ROOT, 'examples', 'hello.yaml')], env);
    expect(applied).toBe(
      'workload/hello created\nplacement/hello-eu created\n' +
        '  rollout: 1 edge at a time of 2 (maxUnavailable 25%, the default); pauses after 1 failure\n',
    );
    await waitFor(async () => /hello-eu\s+2\/2\s+Ready\s+Complete/.test(await ok(['get', 'placements'], env)), {
      timeout: 60_000,
      interval: 500,
      what: 'hello-eu READY 2/2, rollout Complete',
    });
    // Each edge's web server answers on its own port...
    for (const port of [8080, 8081]) expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(404);
    // ...and neither crash-loops: with both on 8080, e2's httpd exited at once ("Address in use")
    // and was restarted again and again while e1's port made its readiness probe pass.
    await new Promise((r) => setTimeout(r, 3000));
    const list = JSON.parse(await ok(['get', 'edges', '-o', 'json'], env));
    const hello = Object.fromEntries(
      (list.items ?? list).map((e: any) => [
        e.metadata.name,
        (e.status.workloads ?? []).find((w: any) => w.name === 'hello'),
      ]),
    );
    expect(hello.e1).toMatchObject({ state: 'Ready', restarts: 0 });
    expect(hello.e2).toMatchObject({ state: 'Ready', restarts: 0 });
  });
});
