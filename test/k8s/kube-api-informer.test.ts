/**
 * A client-go shared informer (test/kube/informer, built with the pinned client-go) on the hub's
 * placements, through a hub restart: it lists, watches, and after the restart resumes its watch
 * from the last resourceVersion it saw, so it gets each change made while it was away exactly once
 * (a relist would replay every object as an update).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../../hub/hub.js';
import { kubeBinary } from '../kube/harness.js';
import { kubeconfigFor, kubectl } from '../fixtures/kubectl.js';
import { tempDir, waitFor } from '../helpers.js';

let dir: string;
let hub: Hub;
let admin: string;
let informer: ChildProcess | undefined;
let lines: { event: string; name?: string; resourceVersion?: string }[] = [];

const WORKLOAD = `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata: { name: web }
spec:
  manifests:
    - { apiVersion: v1, kind: Pod, metadata: { name: web }, spec: { containers: [{ name: main, image: "nginx:1.27" }] } }
`;
const placement = (name: string, label = 'a') => `apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata: { name: ${name}, labels: { v: "${label}" } }
spec: { edgeSelector: {}, workloads: [web] }
`;

async function ok(args: string[], stdin?: string): Promise<void> {
  const r = await kubectl(admin, args, stdin === undefined ? {} : { stdin });
  expect(r.code, r.stderr).toBe(0);
}

const events = () => lines.filter((l) => l.event !== 'synced').map((l) => `${l.event} ${l.name}`);

beforeAll(async () => {
  dir = tempDir('outpost-kube-informer-');
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0' });
  admin = await kubeconfigFor(hub, dir, 'admin', hub.adminToken);
  await ok(['apply', '-f', '-'], WORKLOAD);
});

afterAll(async () => {
  informer?.kill();
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a client-go informer', () => {
  it('lists and watches placements through a hub restart without missing or repeating an event', async () => {
    await ok(['apply', '-f', '-'], placement('p1'));
    await ok(['apply', '-f', '-'], placement('p2'));
    informer = spawn(kubeBinary('informer'), ['--kubeconfig', admin, '--namespace', 'default'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let buf = '';
    let stderr = '';
    informer.stdout!.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buf.slice(0, nl)));
        buf = buf.slice(nl + 1);
      }
    });
    informer.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    await waitFor(() => lines.some((l) => l.event === 'synced'), { what: `the informer's first list (${stderr})` });
    expect(events().sort()).toEqual(['add p1', 'add p2']);

    await ok(['apply', '-f', '-'], placement('p3'));
    await ok(['label', 'placement', 'p1', 'v=b', '--overwrite']);
    await waitFor(() => events().length === 4, { what: 'the watched changes' });
    expect(events().slice(2)).toEqual(['add p3', 'update p1']);

    // The same port and data: the informer's kubeconfig stays valid.
    const listen = new URL(hub.url).host;
    await hub.close();
    hub = await startHub({ dataDir: path.join(dir, 'hub'), listen });
    // Changed before the informer is back: it must get these from its watch's resourceVersion.
    await ok(['apply', '-f', '-'], placement('p4'));
    await ok(['delete', 'placement', 'p2']);
    await ok(['label', 'placement', 'p3', 'v=c', '--overwrite']);
    await waitFor(() => events().length >= 7, { timeout: 60_000, what: `the changes after the restart (${stderr})` });
    // A moment for anything that would come twice (a relist replays every object as an update).
    await ok(['apply', '-f', '-'], placement('p5'));
    await waitFor(() => events().includes('add p5'), { timeout: 30_000, what: 'a change after the resumed ones' });
    expect(events().slice(4)).toEqual(['add p4', 'delete p2', 'update p3', 'add p5']);
    // Each event carries a newer resourceVersion than the one before it.
    const rvs = lines.filter((l) => l.event !== 'synced' && l.event !== 'delete').map((l) => Number(l.resourceVersion));
    expect(rvs.slice(2)).toEqual([...rvs.slice(2)].sort((a, b) => a - b));
  }, 120_000);
});
