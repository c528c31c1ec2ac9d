/**
 * A hub restored from a backup is behind its edges on the documents it writes: an edge's spec
 * holds changes the restored hub never made. The first sync is refused (write_violation, the
 * hub's replica unchanged); at the edge's next handshake the hub starts a new spec epoch from what
 * it has, the edge adopts it, and from then on they sync normally.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as A from '@automerge/automerge/slim';
import { afterEach, expect, it } from 'vitest';
import { edgeName, mailboxDocId } from '../core/ids.js';
import { materializeSpec, putSpecWorkload, readSpec, type SpecDoc } from '../core/mailbox.js';
import { tempDir, waitFor } from '../test/helpers.js';
import { SyncClient } from './client.js';
import { compactIfLarge } from './compaction.js';
import { ensureMailbox } from './mailbox.js';
import { ReplicaStore } from './store.js';
import { listenSyncServer, type ListeningSyncServer } from '../test/fixtures/sync-server.js';

const E = edgeName('edge-r');
const SPEC = mailboxDocId(E, 'spec');
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function hubOn(file: string, port: number) {
  let listening: ListeningSyncServer | undefined;
  const store: ReplicaStore = await ReplicaStore.open(file, { afterChange: (id) => listening?.server.notify(id) });
  const refusals: string[] = [];
  listening = await listenSyncServer(
    {
      store,
      hubVersion: 'test',
      authenticate: (t) => (t === 'tok' ? { edge: E } : null),
      onRefused: (_e, code) => refusals.push(code),
      restartEpoch: (id) => void compactIfLarge<SpecDoc>(store, id, (doc) => materializeSpec(readSpec(doc)), -1),
    },
    port,
  );
  ensureMailbox(store, E, 'hub');
  const { server, close } = listening;
  return {
    store,
    server,
    refusals,
    port: listening.port,
    close: async () => {
      await close();
      store.close();
    },
  };
}

const spec = (store: ReplicaStore, gen: number) =>
  store.change<SpecDoc>(
    SPEC,
    (d) =>
      void putSpecWorkload(d, {
        name: 'web',
        generation: gen,
        revision: gen,
        manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { gen: String(gen) } }],
      }),
  );
const same = (a: A.Heads, b: A.Heads) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

it('an edge ahead of a restored hub is brought onto a new spec epoch, and sync goes on', async () => {
  const dir = tempDir();
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  let hub = await hubOn(path.join(dir, 'hub.db'), 0);
  const port = hub.port;
  const edge = await ReplicaStore.open(path.join(dir, 'edge.db'), { afterChange: (id) => client.notify(id) });
  const client: SyncClient = new SyncClient({
    url: `ws://127.0.0.1:${port}/api/v1/sync`,
    token: 'tok',
    edge: E,
    store: edge,
    agentVersion: 'test',
  });
  cleanups.push(() => edge.close());
  cleanups.push(() => client.stop());
  client.start();
  spec(hub.store, 1);
  await waitFor(() => readSpec(edge.get<SpecDoc>(SPEC)!).workloads.web?.generation === 1, {
    what: 'gen 1 at the edge',
  });

  await hub.store.db.backup(path.join(dir, 'backup.db'));
  spec(hub.store, 2);
  await waitFor(() => readSpec(edge.get<SpecDoc>(SPEC)!).workloads.web?.generation === 2, {
    what: 'gen 2 at the edge',
  });

  // Restore: the hub comes back from the backup, which never saw generation 2.
  await hub.close();
  fs.copyFileSync(path.join(dir, 'backup.db'), path.join(dir, 'restored.db'));
  hub = await hubOn(path.join(dir, 'restored.db'), port);
  const restored = hub;
  cleanups.push(() => restored.close());
  await waitFor(() => restored.refusals.includes('write_violation'), { what: 'the first sync refused' });
  expect(readSpec(restored.store.get<SpecDoc>(SPEC)!).workloads.web.generation).toBe(1);
  await waitFor(
    () =>
      edge.epoch(SPEC) === restored.store.epoch(SPEC) &&
      same(A.getHeads(edge.get(SPEC)!), A.getHeads(restored.store.get(SPEC)!)),
    { timeout: 30_000, what: 'edge on the new epoch' },
  );
  expect(readSpec(edge.get<SpecDoc>(SPEC)!).workloads.web.generation).toBe(1);
  spec(restored.store, 3);
  await waitFor(() => readSpec(edge.get<SpecDoc>(SPEC)!).workloads.web?.generation === 3, {
    what: 'gen 3 at the edge',
  });
});
