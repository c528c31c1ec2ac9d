/**
 * The product as an operator meets it: only the packaged `dist/outpost`, on loopback, in temp dirs.
 * A TLS hub, `outpost login` (CA pinned by the token), a join token, three edges with labels
 * (process driver), `outpost apply -f` of a workload and a placement selecting two of them, then:
 * relabelling moves the workload; the hub is killed -9 and restarted on the same data dir and port,
 * and nothing is lost (objects, statuses) or restarted (the workload processes keep their pids).
 *
 * The workload writes its pid (`$$$$`: Kubernetes turns `$$` into `$`) to PIDS/EDGE.pid and then
 * execs sleep, so the pid in the file is the workload process for as long as it runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../helpers.js';
import { freePort } from '../procs.js';
import { buildOnce, ok, pidAlive, run, startEdge, startHub, type Exe } from './binary.js';

const EDGES = { e1: 'role=web', e2: 'role=web', e3: 'role=spare' } as const;
type EdgeN = keyof typeof EDGES;

let dir: string;
let pids: string;
let hubDir: string;
let port: number;
let hub: Exe;
let hubUrl: string;
let env: Record<string, string>;
const edges = new Map<EdgeN, Exe>();
const seenPids = new Set<number>();

const workloadYaml = () => `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata:
  name: pidder
spec:
  manifests:
    - apiVersion: v1
      kind: Pod
      metadata: { name: pidder }
      spec:
        terminationGracePeriodSeconds: 1
        containers:
          - name: main
            image: localhost/outpost-busybox:latest
            command: ["sh", "-c", "echo $$$$ > ${pids}/{{ edge.name }}.pid && exec sleep 100000"]
---
apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata:
  name: web
spec:
  edgeSelector:
    matchLabels: { role: web }
  workloads: [pidder]
`;

const getJson = async (...args: string[]): Promise<any> => JSON.parse(await ok(['get', ...args, '-o', 'json'], env));
const items = (x: any): any[] => x.items ?? x;

/** The pid a workload wrote on edge `e`, once it runs there. */
function pidOn(e: EdgeN): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(pids, `${e}.pid`), 'utf8'));
    if (pid > 0) seenPids.add(pid);
    return pid > 0 && pidAlive(pid) ? pid : null;
  } catch {
    return null;
  }
}

/** The placement once the hub reports READY 2/2 on exactly the edges `on`. */
async function readyOn(on: EdgeN[]): Promise<any> {
  return waitFor(
    async () => {
      const p = await getJson('placement', 'web');
      if (p.status?.summary?.ready !== 2 || p.status.summary.total !== 2) return null;
      const list = items(await getJson('edges'));
      const running = list
        .filter((e: any) => (e.status.workloads ?? []).some((w: any) => w.name === 'pidder' && w.state === 'Ready'))
        .map((e: any) => e.metadata.name)
        .sort();
      return JSON.stringify(running) === JSON.stringify(on) ? p : null;
    },
    { timeout: 45_000, interval: 300, what: `READY 2/2 on ${on.join(', ')}` },
  );
}

beforeAll(async () => {
  await buildOnce();
  dir = tempDir('outpost-e2e-');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  hubDir = path.join(dir, 'hub');
  port = await freePort();
  ({ proc: hub, url: hubUrl } = await startHub(hubDir, port));
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
}, 240_000);

afterAll(async () => {
  // Workloads outlive their agents by design: remove the placement and let the edges stop them.
  if (hub?.alive) {
    await run(['delete', 'placement', 'web'], env);
    await waitFor(() => [...seenPids].every((p) => !pidAlive(p)), { timeout: 30_000, what: 'workloads stopped' }).catch(
      () => undefined,
    );
  }
  for (const e of edges.values()) await e.kill('SIGTERM');
  await hub?.kill('SIGTERM');
  for (const p of seenPids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* already gone, as it should be */
    }
  }
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 90_000);

describe('a fleet through the packaged executable', () => {
  it('login pins the hub CA; a join token brings up three labelled edges', async () => {
    expect(hubUrl).toBe(`https://127.0.0.1:${port}`);
    const token = fs.readFileSync(path.join(hubDir, 'admin.token'), 'utf8').trim();
    await ok(['login', '--hub', hubUrl, '--token', token], env);
    expect(fs.statSync(env.OUTPOST_CONFIG).mode & 0o777).toBe(0o600);
    const join = (await ok(['token', 'create', '--uses', '3', '--ttl', '10m'], env)).trim();
    expect(join).toMatch(/^opj1\./);
    await Promise.all(
      (Object.keys(EDGES) as EdgeN[]).map(async (e) => {
        edges.set(
          e,
          await startEdge(path.join(dir, e), [
            '--hub',
            hubUrl,
            '--join-token',
            join,
            '--name',
            e,
            '--labels',
            EDGES[e],
            '--driver',
            'process',
          ]),
        );
      }),
    );
    const online = await waitFor(
      async () => {
        const list = items(await getJson('edges'));
        return list.length === 3 && list.every((e: any) => e.status.phase === 'Online') ? list : null;
      },
      { timeout: 30_000, what: 'three edges Online' },
    );
    expect(Object.fromEntries(online.map((e: any) => [e.metadata.name, e.metadata.labels.role]))).toEqual({
      e1: 'web',
      e2: 'web',
      e3: 'spare',
    });
  });

  it('apply -f: the placement runs the workload on the two selected edges, READY 2/2', async () => {
    const f = path.join(dir, 'pidder.yaml');
    fs.writeFileSync(f, workloadYaml());
    expect(await ok(['apply', '-f', f], env)).toBe(
      'workload/pidder created\nplacement/web created\n' +
        '  rollout: 1 edge at a time of 2 (maxUnavailable 25%, the default); pauses after 1 failure\n',
    );
    const p = await readyOn(['e1', 'e2']);
    expect(p.status.summary.worst).toBe('Ready');
    expect(await waitFor(() => pidOn('e1') && pidOn('e2'), { what: 'pids of e1 and e2' })).toBeTruthy();
    expect(pidOn('e3')).toBeNull();
  });

  it('relabelling moves the workload: e3 gets it, e2 loses it, e1 is not touched', async () => {
    const e1 = pidOn('e1')!;
    const e2 = pidOn('e2')!;
    expect(await ok(['edge', 'label', 'e2', 'role=spare'], env)).toMatch(/edge\/e2 labeled/);
    expect(await ok(['edge', 'label', 'e3', 'role=web'], env)).toMatch(/edge\/e3 labeled/);
    await readyOn(['e1', 'e3']);
    await waitFor(() => !pidAlive(e2), { timeout: 30_000, what: "e2's workload to stop" });
    await waitFor(() => pidOn('e3'), { what: "e3's workload to run" });
    expect(pidOn('e1')).toBe(e1);
  });

  it('the hub is killed -9 and restarted on the same data dir and port: nothing lost, nothing restarted', async () => {
    const before = {
      workloads: items(await getJson('workloads')).map((w: any) => ({ metadata: w.metadata, spec: w.spec })),
      placement: await getJson('placement', 'web'),
      edges: Object.fromEntries(
        items(await getJson('edges')).map((e: any) => [
          e.metadata.name,
          {
            labels: e.metadata.labels,
            workloads: (e.status.workloads ?? []).map((w: any) => ({
              name: w.name,
              since: w.since,
              restarts: w.restarts,
              state: w.state,
            })),
          },
        ]),
      ),
      pids: { e1: pidOn('e1'), e3: pidOn('e3') },
    };
    expect(before.pids.e1).toBeTruthy();
    expect(before.pids.e3).toBeTruthy();

    await hub.kill('SIGKILL');
    // The edges notice and keep running their workloads without the hub.
    await waitFor(async () => (await run(['get', 'edges'], env)).code === 1, { what: 'the CLI to see the hub gone' });
    const restartedAt = Date.now();
    ({ proc: hub, url: hubUrl } = await startHub(hubDir, port));
    expect(hubUrl).toBe(`https://127.0.0.1:${port}`);

    // The CLI's login (pinned CA, token) still works: the hub kept its CA and tokens.
    const edgesAfter = await waitFor(
      async () => {
        const list = items(await getJson('edges'));
        const back = list.every(
          (e: any) => e.status.phase === 'Online' && Date.parse(e.status.connectedSince) >= restartedAt - 1_000,
        );
        return list.length === 3 && back ? list : null;
      },
      { timeout: 45_000, interval: 300, what: 'all three edges to reconnect to the restarted hub' },
    );

    const placement = await readyOn(['e1', 'e3']);
    expect({ metadata: placement.metadata, spec: placement.spec }).toEqual({
      metadata: before.placement.metadata,
      spec: before.placement.spec,
    });
    expect(placement.status.summary).toEqual(before.placement.status.summary);
    expect(items(await getJson('workloads')).map((w: any) => ({ metadata: w.metadata, spec: w.spec }))).toEqual(
      before.workloads,
    );
    const after = Object.fromEntries(
      edgesAfter.map((e: any) => [
        e.metadata.name,
        {
          labels: e.metadata.labels,
          workloads: (e.status.workloads ?? []).map((w: any) => ({
            name: w.name,
            since: w.since,
            restarts: w.restarts,
            state: w.state,
          })),
        },
      ]),
    );
    // Same labels, same workload states since the same instants, no restarts.
    expect(after).toEqual(before.edges);
    expect(after.e1.workloads).toEqual([expect.objectContaining({ name: 'pidder', restarts: 0, state: 'Ready' })]);
    expect({ e1: pidOn('e1'), e3: pidOn('e3') }).toEqual(before.pids);
    for (const e of edges.values()) expect(e.alive, e.tail()).toBe(true);
  });
});
