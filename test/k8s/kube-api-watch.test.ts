/**
 * Watches on the hub's Kubernetes API: `kubectl get -w` printing changes as they happen, resuming
 * from a resourceVersion (also after a hub restart), DELETED with a resourceVersion of its own,
 * the initial-events-end bookmark, and 410 Gone (Expired) for a resourceVersion older than the
 * changes kept. kube-api-watch.postgres.test.ts runs it again with the hub's tables in PostgreSQL.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../../hub/hub.js';
import { sqlKubeApiState } from '../../hub/state/kube-api.js';
import { SyncPostgres } from '../../hub/state/pg/sync-client.js';
import { hubDatabaseOption } from '../fixtures/backend.js';
import { runCli } from '../fixtures/cli.js';
import { kubeconfigFor, kubectl, kubectlStream, kubeRequest, watchEvents } from '../fixtures/kubectl.js';
import { tempDir, waitFor } from '../helpers.js';

let dir: string;
let hub: Hub;
let admin: string;

const placement = (name: string, label = 'a') => `apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata: { name: ${name}, labels: { v: "${label}" } }
spec: { edgeSelector: {}, workloads: [web] }
`;
const WORKLOAD = `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata: { name: web }
spec:
  manifests:
    - { apiVersion: v1, kind: Pod, metadata: { name: web }, spec: { containers: [{ name: main, image: "nginx:1.27" }] } }
`;
const PL = '/apis/outpost.dev/v1alpha1/namespaces/default/placements';
let database: { database?: string } = {};
const start = () => startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0', ...database });

beforeAll(async () => {
  dir = tempDir('outpost-kube-watch-');
  database = await hubDatabaseOption();
  hub = await start();
  admin = await kubeconfigFor(hub, dir, 'admin', hub.adminToken);
  const w = await kubectl(admin, ['apply', '-f', '-'], { stdin: WORKLOAD });
  expect(w.stderr).toBe('');
});

afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const rvOfList = async () =>
  (await kubeRequest(hub, hub.adminToken, 'GET', PL)).json().metadata.resourceVersion as string;

describe('watch', () => {
  it('kubectl get -w prints each change as it happens', async () => {
    expect((await kubectl(admin, ['apply', '-f', '-'], { stdin: placement('w1') })).stdout).toContain('created');
    const w = kubectlStream(admin, ['get', 'placements', '-w']);
    try {
      await waitFor(() => /w1\s+0\/0/.test(w.output()), { what: 'the listed placement' });
      await kubectl(admin, ['apply', '-f', '-'], { stdin: placement('w2') });
      await waitFor(() => /w2\s+0\/0/.test(w.output()), { what: 'the created placement' });
      expect(w.output().split('\n')[0]).toMatch(/^NAME\s+READY\s+WORST\s+ROLLOUT\s+EDGES\s+AGE/);
    } finally {
      w.stop();
    }
  });

  it('resumes from a resourceVersion: every change after it, a deletion with its own resourceVersion', async () => {
    const from = await rvOfList();
    await kubectl(admin, ['apply', '-f', '-'], { stdin: placement('w3') });
    await kubectl(admin, ['label', 'placement', 'w3', 'v=b', '--overwrite']);
    await kubectl(admin, ['delete', 'placement', 'w3']);
    const events = await watchEvents(
      hub,
      hub.adminToken,
      `${PL}?watch=true&resourceVersion=${from}`,
      (e) => e.length >= 3,
    );
    expect(events.map((e) => [e.type, e.object.metadata.name])).toEqual([
      ['ADDED', 'w3'],
      ['MODIFIED', 'w3'],
      ['DELETED', 'w3'],
    ]);
    const rvs = events.map((e) => Number(e.object.metadata.resourceVersion));
    expect(rvs[0]).toBeGreaterThan(Number(from));
    expect(rvs[1]).toBeGreaterThan(rvs[0]);
    expect(rvs[2]).toBeGreaterThan(rvs[1]);
    expect(events[1].object.metadata.labels.v).toBe('b');
  });

  it('with a label selector, an object leaving it is DELETED', async () => {
    const from = await rvOfList();
    await kubectl(admin, ['apply', '-f', '-'], { stdin: placement('w4', 'keep') });
    await kubectl(admin, ['label', 'placement', 'w4', 'v=gone', '--overwrite']);
    const events = await watchEvents(
      hub,
      hub.adminToken,
      `${PL}?watch=true&resourceVersion=${from}&labelSelector=v%3Dkeep`,
      (e) => e.length >= 2,
    );
    expect(events.map((e) => [e.type, e.object.metadata.name])).toEqual([
      ['ADDED', 'w4'],
      ['DELETED', 'w4'],
    ]);
  });

  it('sends the objects and then the initial-events-end bookmark', async () => {
    const events = await watchEvents(
      hub,
      hub.adminToken,
      `${PL}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`,
      (e) => e.some((x) => x.type === 'BOOKMARK'),
    );
    const names = events.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata.name);
    expect(names).toEqual(['w1', 'w2', 'w4']);
    const last = events[events.length - 1];
    expect(last.type).toBe('BOOKMARK');
    expect(last.object.metadata.annotations['k8s.io/initial-events-end']).toBe('true');
  });

  it('resumes through a hub restart', async () => {
    const from = await rvOfList();
    await kubectl(admin, ['delete', 'placement', 'w1']);
    await hub.close();
    hub = await start();
    admin = await kubeconfigFor(hub, dir, 'admin', hub.adminToken);
    await kubectl(admin, ['apply', '-f', '-'], { stdin: placement('w5') });
    const events = await watchEvents(
      hub,
      hub.adminToken,
      `${PL}?watch=true&resourceVersion=${from}`,
      (e) => e.length >= 2,
    );
    expect(events.map((e) => [e.type, e.object.metadata.name])).toEqual([
      ['DELETED', 'w1'],
      ['ADDED', 'w5'],
    ]);
  });

  it('ends a watch when its token is revoked', async () => {
    const env = { OUTPOST_CONFIG: path.join(dir, 'admin.cli.json') };
    const created = await runCli(['token', 'create', '--api', '--role', 'viewer'], { env });
    const token = created.stdout.trim();
    const id = token.split('.')[2];
    let seen = 0;
    const watching = watchEvents(hub, token, `${PL}?watch=true`, (e) => ((seen = e.length), false));
    // The watch is open once its initial objects came; then the token goes.
    await waitFor(() => seen > 0, { what: 'the initial objects of the watch' });
    expect((await runCli(['token', 'revoke', id], { env })).code).toBe(0);
    const events = await watching;
    expect(events.filter((e) => e.type === 'ADDED').length).toBeGreaterThan(0);
    expect((await kubeRequest(hub, token, 'GET', PL)).status).toBe(401);
  });

  it('answers a resourceVersion older than the changes kept with 410 Gone (Expired)', async () => {
    const old = '1';
    // Compaction as the hub does it every few hundred changes, here keeping only the newest change.
    const pg = database.database ? new SyncPostgres(database.database) : undefined;
    try {
      sqlKubeApiState(pg ?? hub.store.db).prune(1);
    } finally {
      await pg?.close();
    }
    const events = await watchEvents(
      hub,
      hub.adminToken,
      `${PL}?watch=true&resourceVersion=${old}`,
      (e) => e.length >= 1,
    );
    expect(events[0].type).toBe('ERROR');
    expect(events[0].object).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
  });
});
