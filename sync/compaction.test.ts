/**
 * Epoch compaction over a real WebSocket on loopback: the writer restarts a grown document as a
 * new epoch from its materialized state, the reader follows, nothing is lost, including report
 * changes an offline edge held while the hub compacted its spec.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as A from '@automerge/automerge/slim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { edgeName, mailboxDocId } from '../core/ids.js';
import {
  addIntent,
  materializeReport,
  materializeSpec,
  putReportWorkload,
  putSpecWorkload,
  readReport,
  readSpec,
  type ReportDoc,
  type SpecDoc,
} from '../core/mailbox.js';
import { tempDir, waitFor } from '../test/helpers.js';
import { SyncClient } from './client.js';
import { compactIfLarge } from './compaction.js';
import { ensureMailbox } from './mailbox.js';
import { ReplicaStore } from './store.js';
import { listenSyncServer, type ListeningSyncServer } from '../test/fixtures/sync-server.js';

const E = edgeName('edge-c');
const SPEC = mailboxDocId(E, 'spec');
const REPORT = mailboxDocId(E, 'report');
let dir: string;
let hub: ReplicaStore;
let edge: ReplicaStore;
let hubServer: ListeningSyncServer;
let client: SyncClient;

beforeEach(async () => {
  dir = tempDir();
  hub = await ReplicaStore.open(path.join(dir, 'hub.db'), { afterChange: (id) => hubServer.server.notify(id) });
  hubServer = await listenSyncServer({
    store: hub,
    hubVersion: 'test',
    authenticate: (t) => (t === 'tok' ? { edge: E } : null),
  });
  edge = await ReplicaStore.open(path.join(dir, 'edge.db'), { afterChange: (id) => client.notify(id) });
  client = new SyncClient({ url: hubServer.url, token: 'tok', edge: E, store: edge, agentVersion: 'test' });
  ensureMailbox(hub, E, 'hub');
  client.start();
  await waitFor(() => client.state === 'connected', { what: 'connected' });
});

afterEach(async () => {
  await client.stop();
  await hubServer.close();
  hub.close();
  edge.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function churnReport(n: number, from = 0): void {
  for (let i = from; i < from + n; i++) {
    edge.change<ReportDoc>(REPORT, (d) => {
      putReportWorkload(d, `w${i % 7}`, {
        observedGeneration: i,
        phase: i % 3 ? 'Ready' : 'Degraded',
        message: i % 3 ? undefined : `crashed at ${i}`,
        restarts: i,
        objects: { [`Pod/w${i % 7}`]: { ready: i % 3 !== 0 } },
      });
    });
  }
}
/** A low threshold keeps the test quick; the product's is COMPACT_THRESHOLD_BYTES. */
const LIMIT = 4 * 1024;
const same = (a: A.Heads, b: A.Heads) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

describe('epoch compaction', () => {
  it('the edge compacts its report once the hub has all of it; the hub follows and keeps the same content', async () => {
    churnReport(300);
    edge.change<ReportDoc>(
      REPORT,
      (d) =>
        void addIntent(d, {
          workload: 'w1',
          action: 'override',
          set: { 'spec.replicas': 2 },
          at: 1,
          origin: 'local:test',
        }),
    );
    expect(edge.meta(REPORT)!.size).toBeGreaterThan(LIMIT);
    await waitFor(() => client.inSync(REPORT), { what: 'hub holds the whole report' });
    const before = readReport(hub.get<ReportDoc>(REPORT)!);
    const oldEpoch = edge.epoch(REPORT);
    const epoch = compactIfLarge<ReportDoc>(
      edge,
      REPORT,
      (doc) => materializeReport(readReport(doc), doc.intentSeq),
      LIMIT,
    );
    expect(epoch).toBeTruthy();
    client.announceEpoch(REPORT);
    await waitFor(
      () => hub.epoch(REPORT) === epoch && same(A.getHeads(hub.get(REPORT)!), A.getHeads(edge.get(REPORT)!)),
      { what: 'hub on the new epoch with equal heads' },
    );
    expect(epoch).not.toBe(oldEpoch);
    expect(readReport(hub.get<ReportDoc>(REPORT)!)).toEqual(before);
    expect(hub.meta(REPORT)!.size).toBeLessThan(LIMIT / 2);
    // Changes after the epoch change keep flowing, and the intent sequence goes on.
    edge.change<ReportDoc>(
      REPORT,
      (d) => void addIntent(d, { workload: 'w2', action: 'pause', at: 2, origin: 'local:test' }),
    );
    await waitFor(
      () =>
        readReport(hub.get<ReportDoc>(REPORT)!)
          .intents.map((i) => i.seq)
          .join() === '1,2',
      { what: 'intent #2 at hub' },
    );
  });

  it('the hub compacts a spec while the edge is offline holding unsent report changes: on reconnect both arrive intact', async () => {
    await client.stop();
    for (let i = 0; i < 150; i++) {
      hub.change<SpecDoc>(
        SPEC,
        (d) =>
          void putSpecWorkload(d, {
            name: `w${i % 10}`,
            generation: i + 1,
            revision: i,
            manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}` }, data: { i: String(i) } }],
          }),
      );
    }
    churnReport(100); // the edge works offline: these are unsent
    const unsent = readReport(edge.get<ReportDoc>(REPORT)!);
    const specBefore = readSpec(hub.get<SpecDoc>(SPEC)!);
    const epoch = compactIfLarge<SpecDoc>(hub, SPEC, (doc) => materializeSpec(readSpec(doc)), LIMIT);
    expect(epoch).toBeTruthy();
    client.start();
    await waitFor(
      () =>
        edge.epoch(SPEC) === epoch &&
        same(A.getHeads(edge.get(SPEC)!), A.getHeads(hub.get(SPEC)!)) &&
        same(A.getHeads(hub.get(REPORT)!), A.getHeads(edge.get(REPORT)!)),
      { what: 'both documents converged after reconnect' },
    );
    expect(readSpec(edge.get<SpecDoc>(SPEC)!)).toEqual(specBefore);
    expect(readReport(hub.get<ReportDoc>(REPORT)!)).toEqual(unsent);
  });

  it('a mailbox stays bounded however long it lives', async () => {
    let written = 0;
    for (let round = 0; round < 3; round++) {
      churnReport(200, written);
      written += 200;
      hub.change<SpecDoc>(
        SPEC,
        (d) => void putSpecWorkload(d, { name: 'w', generation: round + 1, revision: round, manifests: [] }),
      );
      await waitFor(() => client.inSync(REPORT), { what: 'report in sync' });
      if (compactIfLarge<ReportDoc>(edge, REPORT, (doc) => materializeReport(readReport(doc), doc.intentSeq), LIMIT))
        client.announceEpoch(REPORT);
      await waitFor(() => hub.epoch(REPORT) === edge.epoch(REPORT) && client.inSync(REPORT), { what: 'hub follows' });
      // Bounded whatever the total written: the writer holds at most the threshold; the reader's
      // copy of a fresh epoch arrives as several sync chunks, a little larger than one snapshot.
      expect(edge.meta(REPORT)!.size).toBeLessThanOrEqual(LIMIT);
      expect(hub.meta(REPORT)!.size).toBeLessThan(2 * LIMIT);
    }
    // The last status of each workload survived every epoch change.
    const last = written - 1;
    expect(readReport(hub.get<ReportDoc>(REPORT)!).workloads[`w${last % 7}`].observedGeneration).toBe(last);
  });
});
