/**
 * @module The sync states of a replica file (table sync_states), one per (peer, document) and valid
 * for the document's epoch only. A state changed by a message that changed the document is saved
 * with that change, in its transaction; one changed by an acknowledgement is kept back and saved
 * later with the others (SYNC_STATE_FLUSH_MS), since losing it costs only a little more exchange.
 */
import type { DocId } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import { inTransaction, type SqliteDatabase } from './sqlite.js';
import * as wasmSync from './wasm-sync.js';
import type { SyncHandle } from './wasm-sync.js';

const log = createLogger('sync:store');

/**
 * Sync states after a message that changed nothing (an acknowledgement) are written at most
 * this often, in one transaction for all of them, and when the session closes. After a crash
 * the persisted state is at most this old: its shared heads are still heads both sides have, so
 * the next connection only exchanges a little more than it would have.
 */
const SYNC_STATE_FLUSH_MS = 1_000;

export class SyncStates {
  private readonly stmt;
  /** Sync states changed by acknowledgements, not yet persisted: key `peer\0docId`. */
  private readonly dirtySync = new Map<
    string,
    { peer: string; id: DocId; epoch: string | undefined; state: SyncHandle }
  >();
  private syncFlushTimer: NodeJS.Timeout | undefined;
  private closed = false;

  /** `docs.epoch`: the document's current epoch (undefined when it does not exist). */
  constructor(
    private readonly db: SqliteDatabase,
    private readonly docs: { epoch(id: DocId): string | undefined },
  ) {
    this.stmt = {
      getSync: db.prepare('SELECT epoch, state FROM sync_states WHERE peer = ? AND doc_id = ?'),
      putSync: db.prepare(
        'INSERT INTO sync_states (peer, doc_id, epoch, state) VALUES (?, ?, ?, ?) ON CONFLICT(peer, doc_id) DO UPDATE SET epoch = excluded.epoch, state = excluded.state',
      ),
      dropSync: db.prepare('DELETE FROM sync_states WHERE doc_id = ?'),
    };
  }

  /** The persisted sync state for (peer, doc), or a fresh one when absent or from another epoch. */
  load(peer: string, id: DocId): SyncHandle {
    const pending = this.dirtySync.get(`${peer}\0${id}`);
    if (pending && pending.epoch === this.docs.epoch(id)) return pending.state;
    const row = this.stmt.getSync.get(peer, id) as { epoch: string; state: Buffer } | undefined;
    if (row && row.epoch === this.docs.epoch(id)) {
      try {
        return wasmSync.decodeSyncState(row.state);
      } catch (err) {
        log.warn({ err, peer, doc: id }, 'discarding unreadable sync state');
      }
    }
    return wasmSync.newSyncState();
  }

  save(peer: string, id: DocId, state: SyncHandle): void {
    this.dirtySync.delete(`${peer}\0${id}`);
    const epoch = this.docs.epoch(id);
    if (epoch === undefined) return;
    this.stmt.putSync.run(peer, id, epoch, wasmSync.encodeSyncState(state));
  }

  /** Keeps back the state after an acknowledgement: saved by the next flush (SYNC_STATE_FLUSH_MS). */
  saveLater(peer: string, id: DocId, state: SyncHandle): void {
    this.dirtySync.set(`${peer}\0${id}`, { peer, id, epoch: this.docs.epoch(id), state });
    this.syncFlushTimer ??= setTimeout(() => this.flushSafely(), SYNC_STATE_FLUSH_MS).unref();
  }

  /** Persists the sync states kept back by `saveLater`, in one transaction. */
  flush(): void {
    if (this.syncFlushTimer) clearTimeout(this.syncFlushTimer);
    this.syncFlushTimer = undefined;
    if (this.dirtySync.size === 0 || this.closed) return;
    const pending = [...this.dirtySync.values()];
    this.dirtySync.clear();
    inTransaction(this.db, () => {
      // A state of an epoch the document has left describes nothing: drop it.
      for (const p of pending)
        if (p.epoch !== undefined && this.docs.epoch(p.id) === p.epoch) this.save(p.peer, p.id, p.state);
    });
  }

  /** Deletes every sync state of the document (inside the caller's transaction). */
  drop(id: DocId): void {
    this.stmt.dropSync.run(id);
  }

  /** Persists what is kept back, as far as it can; no flush after this. */
  close(): void {
    this.flushSafely();
    this.closed = true;
  }

  private flushSafely(): void {
    try {
      this.flush();
    } catch (err) {
      log.warn({ err }, 'could not persist sync states (the next connection will exchange a little more)');
    }
  }
}
