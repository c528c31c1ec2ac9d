/**
 * @module When a `ReplicaStore` announces its changes (its `afterChange` hook): right after each
 * change's own transaction commits, or, for the changes made inside `batch`, after the one
 * transaction of the whole batch commits, so nothing is announced (sent to a peer) that is not on
 * disk. A batch that fails drops every document it changed from memory, to be reloaded from disk.
 */
import type { DocId } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import type { DocCache } from './doc-cache.js';
import { inTransaction, type SqliteDatabase } from './sqlite.js';

const log = createLogger('sync:store');

type Origin = 'local' | 'remote';

export class ChangeBatch {
  /** Set inside `batch`: documents changed and notifications held until the commit. */
  private batched: { touched: Set<DocId>; after: [DocId, Origin, string | undefined][] } | undefined;

  /** `hooks`: the store's options, read at each announcement. */
  constructor(
    private readonly db: SqliteDatabase,
    private readonly cache: DocCache,
    private readonly hooks: { afterChange?: (id: DocId, origin: Origin, peer?: string) => void },
  ) {}

  /** Runs fn as one batch (`ReplicaStore.batch`); nested calls join the outer one. */
  batch(fn: () => void): void {
    if (this.batched) return fn();
    this.batched = { touched: new Set(), after: [] };
    const b = this.batched;
    try {
      inTransaction(this.db, fn);
    } catch (err) {
      this.batched = undefined;
      for (const id of b.touched) this.cache.evict(id);
      throw err;
    }
    this.batched = undefined;
    for (const [id, origin, peer] of b.after) {
      try {
        this.hooks.afterChange?.(id, origin, peer);
      } catch (err) {
        // Committed already: one failing hook must not keep the others from running.
        log.error({ err, doc: id }, 'after-change hook failed');
      }
    }
  }

  /** The document is being written: a batch that fails drops it from memory. */
  touch(id: DocId): void {
    this.batched?.touched.add(id);
  }

  /** Calls `afterChange` now, or after the batch commits. */
  announce(id: DocId, origin: Origin, peer?: string): void {
    if (this.batched) this.batched.after.push([id, origin, peer]);
    else this.hooks.afterChange?.(id, origin, peer);
  }
}
