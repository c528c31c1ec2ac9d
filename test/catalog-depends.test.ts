/**
 * `dependsOn` on the edge (issue #21, test 4), with a real `outpost hub` process, the real CLI and a
 * real edge agent running workloads as host processes: package `app` depends on package `db`; both
 * are deployed to the edge at once, and app's workload starts there only once db's is Ready (its
 * readiness probe passes when the test says so). Meanwhile the app placement's rollout names what
 * the edge waits for, and the edge's spec does not hold app at all.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePlacementFile } from './fixtures/catalog.js';
import { killHostWorkloads } from './fixtures/host-workloads.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startEdgeProc, startHubProc, type HubProc } from './procs.js';

let dir: string;
let hub: HubProc;
let env: Record<string, string>;
const procs: Proc[] = [];
const out = () => path.join(dir, 'out');

/** A one-workload package whose process records its start; `ready` adds a probe on a file the test makes. */
function pkg(name: string, o: { dependsOn?: string; ready?: boolean } = {}): string {
  const d = path.join(dir, `pkg-${name}`);
  fs.mkdirSync(d, { recursive: true });
  const probe = o.ready
    ? `
                readinessProbe: { exec: { command: [test, -e, ${out()}/${name}.ready] }, periodSeconds: 1, failureThreshold: 1 }`
    : '';
  fs.writeFileSync(
    path.join(d, 'package.yaml'),
    `apiVersion: outpost.dev/v1alpha1
kind: Package
metadata: { name: ${name} }
spec:
  version: 1.0.0
${o.dependsOn ? `  dependsOn: [{ name: ${o.dependsOn}, version: "^1" }]\n` : ''}  workloads:
    - name: main
      manifests:
        - apiVersion: v1
          kind: Pod
          metadata: { name: main }
          spec:
            terminationGracePeriodSeconds: 1
            containers:
              - name: main
                image: localhost/outpost-busybox:latest
                command: [sh, -c, 'echo $$$$ > ${out()}/${name}.pid && touch ${out()}/${name}.started && exec sleep 3600']${probe}
`,
  );
  return d;
}

async function publish(pkgDir: string): Promise<void> {
  const file = path.join(dir, `${path.basename(pkgDir)}.tgz`);
  expect((await cli(['package', 'build', pkgDir, '-o', file], env)).code).toBe(0);
  const r = await cli(['package', 'push', file], env);
  expect(r.code, r.stderr).toBe(0);
}

const placement = (name: string, pkgName: string) =>
  packagePlacementFile(dir, name, 'dep', { name: pkgName, version: '^1' });

const getJson = async (...args: string[]): Promise<any> => {
  const r = await cli(['get', ...args, '-o', 'json'], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
};

beforeAll(async () => {
  dir = tempDir('outpost-depends-');
  fs.mkdirSync(out());
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--scanner', 'none']);
  procs.push(hub.proc);
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  expect((await cli(['login', '--hub', hub.url, '--token', hub.token], env)).code).toBe(0);
  const join = (await cli(['token', 'create', '--labels', 'fleet=dep', '--uses', '1'], env)).stdout.trim();
  procs.push(
    await startEdgeProc(path.join(dir, 'e1'), [
      '--hub',
      hub.url,
      '--join-token',
      join,
      '--name',
      'e1',
      '--driver',
      'process',
    ]),
  );
  await waitFor(async () => (await getJson('edge', 'e1')).status?.phase === 'Online', { what: 'e1 Online' });
}, 120_000);

afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM');
  // Workloads outlive their agents by design: end the ones this test started.
  killHostWorkloads(out());
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('dependsOn on the edge (issue 21, test 4)', () => {
  it("starts a package's workloads on an edge only after its dependency is Ready there", async () => {
    await publish(pkg('db', { ready: true }));
    await publish(pkg('app', { dependsOn: 'db' }));
    for (const name of ['db', 'app'])
      await waitFor(
        async () => {
          const r = await cli(['package', 'versions', name, '-o', 'json'], env);
          return r.code === 0 && JSON.parse(r.stdout)[0]?.scan?.state === 'Clean';
        },
        { what: `${name} 1.0.0 Clean (--scanner none)` },
      );
    // The dependent first: it must wait however the two are ordered.
    for (const p of [placement('app', 'app'), placement('db', 'db')]) {
      const r = await cli(['apply', '-f', p], env);
      expect(r.code, r.stderr).toBe(0);
    }

    await waitFor(() => fs.existsSync(path.join(out(), 'db.started')), { what: "db's process started on e1" });
    const app = await waitFor(
      async () => {
        const p = await getJson('placement', 'app');
        return /waiting on e1 for package db \^1 Ready on it \(placement db\)/.test(p.status?.rollout?.reason ?? '')
          ? p
          : null;
      },
      { what: "app's rollout to name what e1 waits for" },
    );
    expect(app.status.rollout).toMatchObject({ phase: 'Progressing', counts: { waiting: 1, updated: 0 } });
    // Nothing of app was written to e1: its spec holds db's workload only, and app never started.
    const e1 = await getJson('edge', 'e1');
    expect(e1.status.workloads.map((w: { placement: string }) => w.placement)).toEqual(['db']);
    expect(fs.existsSync(path.join(out(), 'app.started'))).toBe(false);

    // db becomes Ready (its probe passes): then, and only then, app is written and starts.
    const readyAt = Date.now();
    fs.writeFileSync(path.join(out(), 'db.ready'), '');
    await waitFor(() => fs.existsSync(path.join(out(), 'app.started')), {
      timeout: 30_000,
      what: "app's process started on e1 after db is Ready",
    });
    expect(fs.statSync(path.join(out(), 'app.started')).mtimeMs).toBeGreaterThanOrEqual(readyAt - 1_000);
    await waitFor(
      async () => {
        const p = await getJson('placement', 'app');
        return p.status?.rollout?.phase === 'Complete' ? p : null;
      },
      { timeout: 30_000, what: "app's rollout Complete" },
    );
  }, 120_000);
});
