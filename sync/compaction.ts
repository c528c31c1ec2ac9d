/**
 * @module Epoch compaction: Automerge never forgets history (automerge#348), so a mailbox that lives
 * for years would grow without bound. When a document passes COMPACT_THRESHOLD_BYTES, its writer
 * replaces it by a fresh document holding only the materialized state, in a new epoch, and tells
 * the reader (`epoch` message); the reader drops its replica and resyncs the small new document.
 *
 * Safety: only the writer compacts, and a reader never writes, so the reader has nothing unsent
 * to lose. The edge compacts its report only when the hub has all of it (in sync); the hub may
 * compact an edge's spec at any time, since the edge's copy is only a replica. Frames carry their
 * epoch, so a frame about the old epoch still in flight is dropped, never merged into the new one.
 */
import * as A from '@automerge/automerge/slim';
import type { DocId } from '../core/ids.js';
import { materializeSpec, readSpec, type SpecDoc } from '../core/mailbox.js';
import { createLogger } from '../core/logger.js';
import { newEpoch, type ReplicaStore } from './store.js';

const log = createLogger('sync:compaction');

/** A mailbox document is compacted past this size, so both together stay well under 64 KB. */
export const COMPACT_THRESHOLD_BYTES = 24 * 1024;

/**
 * Replaces `id` by a fresh document written by `materialize` in a new epoch if it is larger than
 * the threshold. Returns the new epoch, or undefined when nothing was done.
 */
export function compactIfLarge<T>(
  store: ReplicaStore,
  id: DocId,
  materialize: (doc: A.Doc<T>) => (d: T) => void,
  threshold = COMPACT_THRESHOLD_BYTES,
): string | undefined {
  const size = store.storedSize(id);
  if (size === undefined || size <= threshold) return undefined;
  const doc = store.get<T>(id);
  if (!doc) return undefined;
  const init = materialize(doc);
  const epoch = newEpoch();
  store.reset<T>(id, epoch, init);
  log.info({ doc: id, before: size, after: store.meta(id)?.size, epoch }, 'compacted a document into a new epoch');
  return epoch;
}

/**
 * The hub's compaction of an edge's spec: past `threshold` (-1: whatever its size, to start a new
 * epoch from the current state), a fresh spec holding what the old one says.
 */
export function compactSpec(store: ReplicaStore, id: DocId, threshold = COMPACT_THRESHOLD_BYTES): string | undefined {
  return compactIfLarge<SpecDoc>(store, id, (doc) => materializeSpec(readSpec(doc)), threshold);
}
