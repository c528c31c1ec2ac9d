/**
 * Quiet reconnect: an edge whose heads equal the hub's at the handshake skips the first sync
 * round, and the hub does not even load its documents; whatever either side changes afterwards
 * (or changed between the hello and the welcome) still arrives. Real sockets, real SQLite files,
 * the hub "restarted" by reopening its store file.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as A from '@automerge/automerge/slim';
import { afterEach, describe, expect, it } from 'vitest';
import { edgeName, mailboxDocId } from '../core/ids.js';
import {
  putReportWorkload,
  putSpecWorkload,
  readReport,
  readSpec,
  type ReportDoc,
  type SpecDoc,
} from '../core/mailbox.js';
import { tempDir, waitFor } from '../test/helpers.js';
import { SyncClient } from './client.js';
import { ensureMailbox } from './mailbox.js';
import type { WelcomeMessage } from './messages.js';
import { ReplicaStore } from './store.js';
import { listenSyncServer, type ListeningSyncServer } from '../test/fixtures/sync-server.js';
import { sameHeads } from './wasm-sync.js';

const EDGE = edgeName('quiet-1');
const SPEC = mailboxDocId(EDGE, 'spec');
const REPORT = mailboxDocId(EDGE, 'report');

interface Hub extends ListeningSyncServer {
  store: ReplicaStore;
}

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function startHub(file: string, port = 0): Promise<Hub> {
  let listening: ListeningSyncServer | undefined;
  const store = await ReplicaStore.open(file, { afterChange: (id) => listening?.server.notify(id) });
  listening = await listenSyncServer(
    { store, hubVersion: 'test', authenticate: (t) => (t === 'tok' ? { edge: EDGE } : null) },
    port,
  );
  return { ...listening, store };
}

async function stopHub(hub: Hub): Promise<void> {
  await hub.close();
  hub.store.close();
}

/** A hub on a fresh file holding the edge's mailbox; `port` to restart it on. */
async function hubWithMailbox(dir: string): Promise<{ hub: Hub; port: number }> {
  const hub = await startHub(path.join(dir, 'hub.db'));
  ensureMailbox(hub.store, EDGE, 'hub');
  return { hub, port: hub.port };
}

/** A real edge replica and client; every welcome it receives is kept. */
async function startEdge(
  dir: string,
  url: string,
): Promise<{ edgeStore: ReplicaStore; edge: SyncClient; welcomes: WelcomeMessage[] }> {
  const edgeStore = await ReplicaStore.open(path.join(dir, 'edge.db'), { afterChange: (id) => edge.notify(id) });
  cleanup.push(() => edgeStore.close());
  const edge: SyncClient = new SyncClient({ url, token: 'tok', edge: EDGE, store: edgeStore, agentVersion: 'test' });
  cleanup.push(() => edge.stop());
  const welcomes: WelcomeMessage[] = [];
  edge.on('welcome', (w: WelcomeMessage) => welcomes.push(w));
  edge.start();
  return { edgeStore, edge, welcomes };
}

describe('quiet reconnect', () => {
  it('skips the first round when heads agree, loads nothing on the hub, and later changes flow both ways', async () => {
    const dir = tempDir();
    cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const first = await hubWithMailbox(dir);
    const port = first.port;
    let hub = first.hub;
    hub.store.change<SpecDoc>(SPEC, (d) =>
      putSpecWorkload(d, { name: 'web', generation: 1, revision: 1, manifests: [] }),
    );

    const { edgeStore, edge, welcomes } = await startEdge(dir, hub.url);
    await waitFor(
      () =>
        edge.state === 'connected' &&
        !!edgeStore.get(SPEC) &&
        readSpec(edgeStore.get<SpecDoc>(SPEC)!).workloads.web !== undefined,
      { what: 'first sync' },
    );
    edgeStore.change<ReportDoc>(REPORT, (d) =>
      putReportWorkload(d, 'web', { observedGeneration: 1, phase: 'Ready', restarts: 0, objects: {} }),
    );
    await waitFor(
      () => !!hub.store.get(REPORT) && readReport(hub.store.get<ReportDoc>(REPORT)!).workloads.web?.phase === 'Ready',
      { what: 'report at the hub' },
    );
    await waitFor(() => edge.session!.inSync(), { what: 'in sync before the restart' });
    expect(welcomes[0].quiet ?? []).toEqual([]); // the edge's replica was empty at the first hello

    // Restart the hub on the same port and file: nothing is loaded until someone changes something.
    await stopHub(hub);
    hub = await startHub(path.join(dir, 'hub.db'), port);
    cleanup.push(() => stopHub(hub));
    await waitFor(() => welcomes.length === 2 && edge.state === 'connected', { what: 'reconnected' });
    expect([...(welcomes[1].quiet ?? [])].sort()).toEqual([REPORT, SPEC].sort());
    const conn = hub.server.connection(EDGE)!;
    expect(edge.session!.inSync()).toBe(true);
    expect(edge.session!.stats.messagesOut).toBe(0);
    expect(conn.session.stats.messagesOut).toBe(0);
    expect(hub.store.isLoaded(SPEC)).toBe(false);
    expect(hub.store.isLoaded(REPORT)).toBe(false);

    // Both sides change after the quiet start; both changes arrive and the heads converge.
    hub.store.change<SpecDoc>(SPEC, (d) =>
      putSpecWorkload(d, { name: 'api', generation: 1, revision: 1, manifests: [] }),
    );
    edgeStore.change<ReportDoc>(REPORT, (d) =>
      putReportWorkload(d, 'web', {
        observedGeneration: 1,
        phase: 'Failed',
        message: 'crashed',
        restarts: 1,
        objects: {},
      }),
    );
    await waitFor(() => readSpec(edgeStore.get<SpecDoc>(SPEC)!).workloads.api !== undefined, {
      what: 'hub change at the edge',
    });
    await waitFor(() => readReport(hub.store.get<ReportDoc>(REPORT)!).workloads.web?.phase === 'Failed', {
      what: 'edge change at the hub',
    });
    await waitFor(() => edge.session!.inSync(), { what: 'in sync again' });
    for (const id of [SPEC, REPORT])
      expect(sameHeads(A.getHeads(hub.store.get(id)!), A.getHeads(edgeStore.get(id)!))).toBe(true);
  });

  it('is not quiet when the heads differ: the edge changed while the hub was away', async () => {
    const dir = tempDir();
    cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const first = await hubWithMailbox(dir);
    const port = first.port;
    let hub = first.hub;
    const { edgeStore, edge, welcomes } = await startEdge(dir, hub.url);
    await waitFor(() => edge.state === 'connected' && edge.session!.inSync(), { what: 'first sync' });

    await stopHub(hub);
    await waitFor(() => edge.state !== 'connected', { what: 'edge noticed' });
    edgeStore.change<ReportDoc>(REPORT, (d) =>
      putReportWorkload(d, 'web', { observedGeneration: 0, phase: 'Pending', restarts: 0, objects: {} }),
    );
    hub = await startHub(path.join(dir, 'hub.db'), port);
    cleanup.push(() => stopHub(hub));
    await waitFor(() => welcomes.length === 2 && edge.state === 'connected', { what: 'reconnected' });
    expect(welcomes[1].quiet).toEqual([SPEC]);
    await waitFor(
      () => !!hub.store.get(REPORT) && readReport(hub.store.get<ReportDoc>(REPORT)!).workloads.web?.phase === 'Pending',
      { what: 'offline change at the hub' },
    );
  });
});
