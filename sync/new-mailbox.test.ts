/**
 * An edge that comes to a hub that never served it (a replica taking it over, issue #22) with a
 * spec it already holds from another hub: the hub's `beforeWelcome` writes the spec before the
 * handshake is answered, so the edge moves to the new epoch without ever seeing an empty spec
 * (which its reconciler would obey by stopping every workload).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { edgeName, mailboxDocId, type DocId } from '../core/ids.js';
import { putSpecWorkload, readSpec, type SpecDoc } from '../core/mailbox.js';
import { listenSyncServer, type ListeningSyncServer } from '../test/fixtures/sync-server.js';
import { tempDir, waitFor } from '../test/helpers.js';
import { SyncClient } from './client.js';
import { ensureMailbox } from './mailbox.js';
import { ReplicaStore } from './store.js';

const EDGE = edgeName('edge-t');
const SPEC = mailboxDocId(EDGE, 'spec');
const web = { name: 'web', generation: 1, revision: 1, manifests: [] };
const closers: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

/** A hub (store and sync server); `beforeWelcome` writes the spec as the real hub's scheduler would. */
async function hubWith(
  dir: string,
  writeOnNew: boolean,
): Promise<{ store: ReplicaStore; server: ListeningSyncServer }> {
  let server: ListeningSyncServer | undefined;
  const store = await ReplicaStore.open(path.join(dir, 'hub.db'), { afterChange: (id) => server?.server.notify(id) });
  server = await listenSyncServer({
    store,
    hubVersion: 'test',
    authenticate: (t) => (t === 'tok' ? { edge: EDGE } : null),
    ...(writeOnNew
      ? {
          beforeWelcome: (e, fresh) => {
            if (fresh) store.change<SpecDoc>(mailboxDocId(e, 'spec'), (d) => void putSpecWorkload(d, web));
          },
        }
      : {}),
  });
  closers.push(
    () => store.close(),
    () => server!.close(),
  );
  return { store, server };
}

/** The workload counts of every spec the edge's replica held, in order. */
async function specsSeenTaking(from: ListeningSyncServer, edgeStore: ReplicaStore, seen: number[]): Promise<void> {
  const client = new SyncClient({ url: from.url, token: 'tok', edge: EDGE, store: edgeStore, agentVersion: 'test' });
  client.start();
  await waitFor(() => client.state === 'connected' && seen.at(-1) === 1 && client.session?.inSync(), {
    what: 'the edge in sync with the new hub',
  });
  await client.stop();
}

describe('a hub that never served the edge', () => {
  for (const writeOnNew of [true, false])
    it(`${writeOnNew ? 'writes its spec before answering: the edge never sees an empty one' : 'without beforeWelcome the edge sees an empty spec first (the failure this prevents)'}`, async () => {
      const dir = tempDir('outpost-new-mailbox-');
      closers.push(() => fs.rmSync(dir, { recursive: true, force: true }));
      // The edge holds the spec of another hub, with one workload: it synced with it first.
      const seen: number[] = [];
      const edgeStore = await ReplicaStore.open(path.join(dir, 'edge.db'), {
        afterChange: (id: DocId) => {
          if (id === SPEC) seen.push(Object.keys(readSpec(edgeStore.get<SpecDoc>(SPEC)!).workloads).length);
        },
      });
      closers.push(() => edgeStore.close());
      ensureMailbox(edgeStore, EDGE, 'edge');
      fs.mkdirSync(path.join(dir, 'other'));
      const other = await hubWith(path.join(dir, 'other'), true);
      await specsSeenTaking(other.server, edgeStore, seen);
      seen.length = 0;
      const hub = await hubWith(dir, writeOnNew);
      if (!writeOnNew)
        // What the real hub's scheduler does a moment later.
        setTimeout(() => hub.store.change<SpecDoc>(SPEC, (d) => void putSpecWorkload(d, web)), 300);
      await specsSeenTaking(hub.server, edgeStore, seen);
      if (writeOnNew) expect(seen.every((n) => n === 1)).toBe(true);
      else expect(seen).toContain(0);
      expect(seen.at(-1)).toBe(1);
    });
});
