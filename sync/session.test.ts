/**
 * The sync session's answers when the hub applies a burst of frames before answering (sync/inbox.ts
 * `deferFlush`): two real replica stores, the frames carried by hand so that each side's reads
 * are batched exactly as a loaded hub's event loop batches them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../core/logger.js';
import { edgeName, mailboxDocId, type DocId } from '../core/ids.js';
import { putReportWorkload, readReport, type ReportDoc } from '../core/mailbox.js';
import { tempDir } from '../test/helpers.js';
import { adoptEpochs, ensureMailbox } from './mailbox.js';
import { decodeBinary } from './messages.js';
import { SyncSession } from './session.js';
import { ReplicaStore } from './store.js';

const E = edgeName('burst-1');
const REPORT = mailboxDocId(E, 'report');
const SPEC = mailboxDocId(E, 'spec');
const log = createLogger('test:session');

let dir: string;
let hub: ReplicaStore;
let edge: ReplicaStore;
/** Frames each side sent and the other has not read yet. */
let toHub: Buffer[];
let toEdge: Buffer[];
let hubSession: SyncSession;
let edgeSession: SyncSession;

function docs(side: 'hub' | 'edge'): { id: DocId; weWrite: boolean }[] {
  return [
    { id: SPEC, weWrite: side === 'hub' },
    { id: REPORT, weWrite: side === 'edge' },
  ];
}

/** The hub reads every frame waiting for it in one burst, then answers once per document (sync/inbox.ts). */
function hubReadsBurst(): number {
  const burst = toHub.splice(0);
  const answer = new Set<DocId>();
  hub.batch(() => {
    for (const f of burst) {
      const d = decodeBinary(f);
      if (d.kind !== 'sync') throw new Error('not a sync frame');
      const id = hubSession.receive(d.frame, f.length, { deferFlush: true });
      if (id) answer.add(id);
    }
  });
  for (const id of answer) hubSession.flush(id);
  return burst.length;
}

/** The edge reads every frame waiting for it, answering each at once (sync/client.ts). */
function edgeReads(): number {
  const frames = toEdge.splice(0);
  for (const f of frames) {
    const d = decodeBinary(f);
    if (d.kind !== 'sync') throw new Error('not a sync frame');
    edgeSession.receive(d.frame, f.length);
  }
  return frames.length;
}

function reportChange(i: number): void {
  edge.change<ReportDoc>(REPORT, (d) => {
    putReportWorkload(d, `w${i % 5}`, { observedGeneration: i, phase: 'Ready', restarts: i, objects: {} });
  });
  edgeSession.notify(REPORT);
}

beforeEach(async () => {
  dir = tempDir();
  hub = await ReplicaStore.open(path.join(dir, 'hub.db'));
  edge = await ReplicaStore.open(path.join(dir, 'edge.db'));
  // As the handshake leaves them: each side takes the epoch of the documents the other writes.
  const atHub = ensureMailbox(hub, E, 'hub');
  const atEdge = ensureMailbox(edge, E, 'edge');
  adoptEpochs(hub, atHub, atEdge);
  adoptEpochs(edge, atEdge, atHub);
  toHub = [];
  toEdge = [];
  hubSession = new SyncSession(hub, E, docs('hub'), (f) => void toEdge.push(f), log);
  edgeSession = new SyncSession(edge, 'hub', docs('edge'), (f) => void toHub.push(f), log);
  hubSession.start();
  edgeSession.start();
  for (let i = 0; i < 20 && hubReadsBurst() + edgeReads() > 0; i++);
  expect(edgeSession.inSync()).toBe(true);
});

afterEach(() => {
  hub.close();
  edge.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a burst of frames of one document, answered after it is applied', () => {
  it('still tells the edge that the hub holds all of its report', () => {
    // The edge writes while the hub is busy: its changes reach the hub in one burst, which the
    // hub answers.
    for (let i = 0; i < 3; i++) reportChange(i);
    hubReadsBurst();
    // More changes; before the hub reads them, the edge reads that answer and, its last message
    // unanswered, says again which heads it has: a frame with no change, last in the next burst.
    for (let i = 3; i < 6; i++) reportChange(i);
    edgeReads();
    hubReadsBurst();
    for (let i = 0; i < 50 && hubReadsBurst() + edgeReads() > 0; i++);
    expect(readReport(hub.get<ReportDoc>(REPORT)!)).toEqual(readReport(edge.get<ReportDoc>(REPORT)!));
    // The hub holds the whole report: the edge must know it (sync/client.ts `inSync`), or it waits
    // for an answer that never comes until its next change.
    expect(edgeSession.inSync([REPORT])).toBe(true);
  });
});
