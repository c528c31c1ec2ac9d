/**
 * @module Which documents make up an edge's mailbox, who writes each, and how both sides make sure
 * they exist. The writer of a document owns its epoch: on connect, the reader adopts the writer's
 * epoch (resetting its replica if it held another one).
 */
import type { EdgeName, DocId } from '../core/ids.js';
import { mailboxDocId } from '../core/ids.js';
import { initReport, initSpec, type ReportDoc, type SpecDoc } from '../core/mailbox.js';
import type { SessionDoc } from './session.js';
import type { ReplicaStore } from './store.js';

export type Side = 'hub' | 'edge';

export interface MailboxDoc extends SessionDoc {
  epoch: string;
}

/** Makes sure both documents exist on this side: the one we write initialized, the other an empty replica. */
export function ensureMailbox(store: ReplicaStore, edge: EdgeName, side: Side): MailboxDoc[] {
  const spec = mailboxDocId(edge, 'spec');
  const report = mailboxDocId(edge, 'report');
  if (!store.has(spec)) {
    if (side === 'hub') store.create<SpecDoc>(spec, { init: (d) => initSpec(d, edge) });
    else store.create(spec);
  }
  if (!store.has(report)) {
    if (side === 'edge') store.create<ReportDoc>(report, { init: (d) => initReport(d, edge) });
    else store.create(report);
  }
  return [
    { id: spec, weWrite: side === 'hub', epoch: store.epoch(spec)! },
    { id: report, weWrite: side === 'edge', epoch: store.epoch(report)! },
  ];
}

/**
 * Adopts the peer's epoch for every document the peer writes. Returns the ids that were reset.
 * A reset replica is empty and the sync that follows fills it from the writer.
 */
export function adoptEpochs(store: ReplicaStore, docs: MailboxDoc[], remote: { id: string; epoch: string }[]): DocId[] {
  const reset: DocId[] = [];
  for (const d of docs) {
    if (d.weWrite) continue;
    const theirs = remote.find((r) => r.id === d.id);
    if (theirs && theirs.epoch !== store.epoch(d.id)) {
      store.reset(d.id, theirs.epoch);
      d.epoch = theirs.epoch;
      reset.push(d.id);
    }
  }
  return reset;
}
