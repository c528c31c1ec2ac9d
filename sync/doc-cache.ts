/**
 * @module The documents a `ReplicaStore` holds loaded in memory: least-recently-used first out
 * under a byte budget, each counted at an estimate of what it costs resident. An evicted document
 * is freed in wasm (`A.free`) because Automerge's wasm memory only grows.
 */
import * as A from '@automerge/automerge/slim';
import type { DocId } from '../core/ids.js';
import { keepWasmHeadroom } from './wasm-heap.js';

export type AnyDoc = A.Doc<Record<string, unknown>>;

/**
 * Resident cost of a loaded document: ~6 KiB, ~20 bytes per byte of its snapshot and ~1 byte per
 * byte of incremental chunks (a change's chunk repeats what a snapshot stores once, compressed
 * across changes). Measured with 10,000-20,000 loaded mailbox documents and the wasm heap kept from
 * growing in small steps (sync/wasm-heap.ts): a one-workload spec (579-byte snapshot) 15.4 KiB
 * without its JS view, 16.8 KiB with; a one-workload report (413 B) 15.1 / 15.8 KiB; a 20-workload
 * spec (1,474 B) 34 / 47 KiB; a one-workload spec after 30 generations 24.5 KiB (an 817-byte
 * snapshot, or 12.6 KB as chunks). The estimate used before (28 KiB + 40 B per stored byte, from
 * a run whose wasm heap grew 64 KiB at a time) was 3-10 times too high: a 10,000-edge hub kept a
 * third of its 20,000 mailboxes loaded and a fleet-wide change, which touches each once in order
 * (an LRU scanned cyclically hits nothing), reloaded every one of them.
 */
const DOC_BASE_COST = 6 * 1024;
const DOC_SNAPSHOT_BYTE_COST = 20;
const DOC_CHUNK_BYTE_COST = 1;

function docCost(snapshotBytes: number, chunkBytes: number): number {
  return DOC_BASE_COST + snapshotBytes * DOC_SNAPSHOT_BYTE_COST + chunkBytes * DOC_CHUNK_BYTE_COST;
}

export interface Loaded {
  doc: AnyDoc;
  epoch: string;
  cost: number;
  /** Bytes stored for the document (snapshot and chunks). */
  size: number;
  /** Changed through its backend since `doc` was built: the JS view lags until the next `get`. */
  stale?: boolean;
}

export class DocCache {
  private readonly docs = new Map<DocId, Loaded>();
  private cost = 0;

  /** `budget`: evict loaded documents beyond this estimate of resident bytes. */
  constructor(private readonly budget: number) {}

  /** The loaded document, if it is in memory (its place in the eviction order unchanged). */
  get(id: DocId): Loaded | undefined {
    return this.docs.get(id);
  }

  has(id: DocId): boolean {
    return this.docs.has(id);
  }

  /** The loaded document, if it is in memory, made the most recently used. */
  use(id: DocId): Loaded | undefined {
    const hit = this.docs.get(id);
    if (hit) {
      this.docs.delete(id);
      this.docs.set(id, hit);
    }
    return hit;
  }

  /** Keeps `doc` as the loaded document `id` (the most recently used), evicting others over the budget. */
  remember(id: DocId, doc: AnyDoc, epoch: string, snapshotBytes: number, chunkBytes: number, stale = false): void {
    // Every load and every write ends here: the place to keep Automerge's heap from growing in
    // small steps (sync/wasm-heap.ts).
    keepWasmHeadroom();
    const cur = this.docs.get(id);
    if (cur) {
      this.docs.delete(id);
      this.cost -= cur.cost;
    }
    const cost = docCost(snapshotBytes, chunkBytes);
    // A view that lagged before this change still lags (the same handle, changed again).
    this.docs.set(id, {
      doc,
      epoch,
      cost,
      size: snapshotBytes + chunkBytes,
      stale: stale || (cur?.doc === doc && cur.stale),
    });
    this.cost += cost;
    for (const [victim] of this.docs) {
      if (this.cost <= this.budget || this.docs.size <= 1) break;
      if (victim === id) continue;
      this.evict(victim);
    }
  }

  /** Drops a document from memory; `live` is the current handle when the cached one was outdated by a change. */
  evict(id: DocId, live?: AnyDoc): void {
    const cur = this.docs.get(id);
    if (cur) {
      this.docs.delete(id);
      this.cost -= cur.cost;
    }
    const handle = live ?? cur?.doc;
    if (!handle) return;
    try {
      A.free(handle);
    } catch {
      /* an outdated handle owns nothing */
    }
  }

  /** Drops every document from memory. */
  evictAll(): void {
    for (const id of [...this.docs.keys()]) this.evict(id);
  }

  /** Number and estimated bytes of loaded documents. */
  stats(): { docs: number; bytes: number } {
    return { docs: this.docs.size, bytes: this.cost };
  }
}
