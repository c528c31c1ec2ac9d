/**
 * @module The replica store: Automerge documents persisted in one SQLite file, with sync states per
 * (peer, document) and a hook for projection tables.
 *
 * Transaction boundary: applying a received sync message, saving the document's new bytes, saving
 * the sync state and updating projections (the `onChange` hook) happen in ONE SQLite transaction,
 * so after a crash at any point the replica is before or after that message, never torn.
 *
 * Memory: documents are loaded on demand and evicted least-recently-used under a byte budget;
 * evicted documents are freed in wasm (`A.free`) because Automerge's wasm memory only grows
 * (sync/doc-cache.ts).
 *
 * Storage: each document is a snapshot plus incremental chunks (`saveSince`); when chunks pile up
 * they are folded into a new snapshot in the same transaction as the write that crossed the line
 * (sync/doc-storage.ts). The tables are in sync/store-schema.ts, sync states in sync/sync-states.ts,
 * metadata and notes read without a load in sync/doc-reads.ts.
 */
import { randomBytes } from 'node:crypto';
import * as A from '@automerge/automerge/slim';
import type { DocId } from '../core/ids.js';
import { buildInfo } from '../core/version.js';
import { ChangeBatch } from './change-batch.js';
import { DocCache, type AnyDoc } from './doc-cache.js';
import { DocReads } from './doc-reads.js';
import { DocStorage } from './doc-storage.js';
import { initAutomerge } from './native.js';
import { inSavepoint, inTransaction, migrate, openDatabase, type SqliteDatabase } from './sqlite.js';
import { MIGRATIONS } from './store-schema.js';
import { SyncStates } from './sync-states.js';
import { keepWasmHeadroom } from './wasm-heap.js';
import * as wasmSync from './wasm-sync.js';
import type { SyncHandle } from './wasm-sync.js';

export type { AnyDoc };

export interface DocChange {
  id: DocId;
  doc: AnyDoc;
  origin: 'local' | 'remote';
  /** The peer whose message caused the change (origin remote). */
  peer?: string;
  db: SqliteDatabase;
}

export interface ReplicaStoreOptions {
  /** Evict loaded documents beyond this estimate of resident bytes. Default 256 MiB. */
  memoryBudgetBytes?: number;
  /** Called inside the write transaction of every change: update projection tables here. */
  onChange?: (change: DocChange) => void;
  /** Called after the transaction committed (notify sessions, schedule work). */
  afterChange?: (id: DocId, origin: 'local' | 'remote', peer?: string) => void;
  /** WAL pages before an automatic checkpoint (default SQLite's 1,000; see openDatabase). */
  walAutocheckpointPages?: number;
}

export class WriteViolation extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WriteViolation';
  }
}

export function newEpoch(): string {
  return `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

export class ReplicaStore {
  readonly db: SqliteDatabase;
  private readonly cache: DocCache;
  private readonly opts: ReplicaStoreOptions;
  private closed = false;
  private readonly storage: DocStorage;
  private readonly syncStates: SyncStates;
  private readonly reads: DocReads;
  private readonly batches: ChangeBatch;

  private constructor(db: SqliteDatabase, opts: ReplicaStoreOptions) {
    this.db = db;
    this.opts = opts;
    this.cache = new DocCache(opts.memoryBudgetBytes ?? 256 * 1024 * 1024);
    this.storage = new DocStorage(db);
    this.syncStates = new SyncStates(db, this);
    this.reads = new DocReads(db);
    this.batches = new ChangeBatch(db, this.cache, opts);
  }

  /** Opens the store file (creating it), after making sure Automerge's wasm is initialized. */
  static async open(file: string, opts: ReplicaStoreOptions = {}): Promise<ReplicaStore> {
    await initAutomerge();
    const db = openDatabase(file, { walAutocheckpointPages: opts.walAutocheckpointPages });
    migrate(db, 'replica', MIGRATIONS, buildInfo().version);
    return new ReplicaStore(db, opts);
  }

  /** Runs fn in a transaction (nested calls join the outer one). */
  transaction<T>(fn: () => T): T {
    return inTransaction(this.db, fn);
  }

  /**
   * Runs many changes in ONE transaction (one commit instead of one per change). `afterChange` of
   * the changes made inside runs after the commit, so nothing is announced (sent to a peer) that
   * is not on disk. If fn throws, everything it wrote is rolled back, every document it changed is
   * dropped from memory (reloaded from disk on next use) and the error is rethrown.
   */
  batch(fn: () => void): void {
    this.batches.batch(fn);
  }

  has(id: DocId): boolean {
    return this.cache.has(id) || this.reads.meta(id) !== undefined;
  }

  /** Epoch, heads and stored size without loading the document. */
  meta(id: DocId): { epoch: string; heads: A.Heads; size: number } | undefined {
    return this.reads.meta(id);
  }

  /** Bytes stored for the document (snapshot and chunks), without a query when it is loaded. */
  storedSize(id: DocId): number | undefined {
    return this.cache.get(id)?.size ?? this.reads.meta(id)?.size;
  }

  /** True when the document is in memory (using it costs no load). */
  isLoaded(id: DocId): boolean {
    return this.cache.has(id);
  }

  list(prefix = ''): { id: DocId; epoch: string }[] {
    return this.storage.list(prefix);
  }

  /** The document, its JS view up to date (loaded from disk when not in memory). */
  get<T = Record<string, unknown>>(id: DocId): A.Doc<T> | undefined {
    const doc = this.handle(id);
    const e = this.cache.get(id);
    if (doc && e?.stale) {
      e.doc = wasmSync.catchUp(doc);
      e.stale = false;
      return e.doc as A.Doc<T>;
    }
    return doc as A.Doc<T> | undefined;
  }

  /**
   * The document for what only needs its backend (heads, sync messages, saves): its JS view may
   * lag behind after `changeBackend`, and bringing it forward costs a patch nobody may read.
   * Never `A.toJS` or `materialize` it: Automerge would consume the patches the lagging view is
   * waiting for (its diff cursor moves), and the next `get` would return stale contents.
   */
  handle<T = Record<string, unknown>>(id: DocId): A.Doc<T> | undefined {
    this.assertOpen();
    const hit = this.cache.use(id);
    if (hit) return hit.doc as A.Doc<T>;
    const row = this.storage.row(id);
    if (!row) return undefined;
    const doc = this.storage.load(id, row);
    this.cache.remember(id, doc, row.epoch, row.snapshot.length, row.chunk_bytes, true);
    return doc as A.Doc<T>;
  }

  epoch(id: DocId): string | undefined {
    return this.cache.get(id)?.epoch ?? this.reads.meta(id)?.epoch;
  }

  /**
   * Creates a document. With `init` the local side is its writer and makes the first change;
   * without, it is an empty replica that sync will fill.
   */
  create<T>(id: DocId, opts: { epoch?: string; init?: (d: T) => void } = {}): A.Doc<T> {
    this.assertOpen();
    const epoch = opts.epoch ?? newEpoch();
    let doc = A.init<Record<string, unknown>>();
    if (opts.init)
      doc = A.change(doc, { message: 'create' }, opts.init as unknown as A.ChangeFn<Record<string, unknown>>);
    const bytes = A.save(doc);
    this.batches.touch(id);
    this.reads.forget(id);
    this.transaction(() => {
      this.storage.insert(id, epoch, bytes, A.getHeads(doc), Date.now());
      if (opts.init) this.opts.onChange?.({ id, doc, origin: 'local', db: this.db });
    });
    this.cache.remember(id, doc, epoch, bytes.length, 0);
    if (opts.init) this.batches.announce(id, 'local');
    return doc as A.Doc<T>;
  }

  /** Replaces a document by an empty (or initialized) one in a new epoch, dropping its sync states. */
  reset<T>(id: DocId, epoch: string, init?: (d: T) => void): A.Doc<T> {
    this.transaction(() => this.delete(id));
    return this.create<T>(id, { epoch, init });
  }

  /**
   * A local change, persisted with projections in one transaction. Returns false when fn changed
   * nothing. `fn` gets the change's proxy and the document's plain view as it was before it: what
   * a writer only compares is read there for free, where each read of the proxy is a call into
   * Automerge (core/mailbox/report.ts `putReportWorkload`).
   */
  change<T>(id: DocId, fn: (d: T, was: Readonly<T>) => void, message?: string): boolean {
    const before = this.get<T>(id);
    if (!before) throw new Error(`document ${id} does not exist`);
    const heads = A.getHeads(before);
    const after = A.change<T>(before, message ? { message } : {}, (d) => fn(d as T, before as Readonly<T>));
    if (wasmSync.sameHeads(heads, A.getHeads(after))) return false;
    // One A.change makes exactly one change: its bytes are at hand (saveSince would re-encode them,
    // five times the cost).
    this.persist(id, after, heads, 'local', undefined, A.getLastLocalChange(after));
    this.batches.announce(id, 'local');
    return true;
  }

  /**
   * A local change made directly on the document's backend (`fn` calls put/putObject/delete): a
   * third of the cost of `change` through Automerge's proxies, and no patch for the JS view, which
   * is brought up to date only when something `get`s the document. Returns false when fn changed
   * nothing. Same transaction, projections and announcements as `change`.
   */
  changeBackend(
    id: DocId,
    fn: (backend: ReturnType<typeof A.getBackend>) => void,
    message?: string,
    /**
     * The part of the document this change writes, as `note` keys it: notes about the other parts
     * stay true and are kept (moved to the new heads). Without it every note is dropped.
     */
    part?: string,
  ): boolean {
    const doc = this.handle(id);
    if (!doc) throw new Error(`document ${id} does not exist`);
    const backend = A.getBackend(doc);
    const heads = backend.getHeads();
    try {
      fn(backend);
    } catch (err) {
      backend.rollback();
      throw err;
    }
    if (backend.pendingOps() === 0) return false;
    backend.commit(message, Math.floor(Date.now() / 1000));
    this.persist(id, doc, heads, 'local', undefined, A.getLastLocalChange(doc), true);
    // After the change is stored: a failure in between leaves the notes at the old heads (unused).
    if (part !== undefined) this.reads.keepNotes(id, part);
    this.batches.announce(id, 'local');
    return true;
  }

  /** The persisted sync state for (peer, doc), or a fresh one when absent or from another epoch. */
  loadSyncState(peer: string, id: DocId): SyncHandle {
    return this.syncStates.load(peer, id);
  }

  saveSyncState(peer: string, id: DocId, state: SyncHandle): void {
    this.syncStates.save(peer, id, state);
  }

  /** Persists the sync states kept back by `receive`, in one transaction. */
  flushSyncStates(): void {
    this.syncStates.flush();
  }

  /**
   * Applies a sync message from `peer`, updating `state` in place. With `mayAddChanges: false`
   * (the peer is not this document's writer) a message that would add any change is refused with
   * WriteViolation and the replica stays exactly as it was (the caller must drop `state`, which
   * saw the refused message).
   */
  receive(
    peer: string,
    id: DocId,
    state: SyncHandle,
    message: Uint8Array,
    opts: { mayAddChanges: boolean },
  ): { changed: boolean } {
    const before = this.handle(id);
    if (!before) throw new Error(`document ${id} does not exist`);
    const heads = A.getHeads(before);
    let after: AnyDoc;
    try {
      after = wasmSync.receive(before, state, message);
    } catch (err) {
      // The handle may be half-updated; reload from disk on next use.
      this.cache.evict(id);
      throw new Error(`invalid sync message for ${id}`, { cause: err });
    }
    const changed = after !== before;
    if (changed && !opts.mayAddChanges) {
      const added = A.getChangesMetaSince(after, heads).length;
      this.cache.evict(id, after);
      throw new WriteViolation(`${peer} may not write ${id}: the message would add ${added} change(s)`);
    }
    if (!changed) {
      keepWasmHeadroom();
      // An acknowledgement: nothing to write but the sync state, which can wait (SYNC_STATE_FLUSH_MS).
      this.syncStates.saveLater(peer, id, state);
      return { changed };
    }
    try {
      // A savepoint inside a batch (the hub's inbox receives many messages in one transaction):
      // a message that cannot be kept is undone alone, the others stay.
      inSavepoint(this.db, () => {
        this.persist(id, after, heads, 'remote', peer);
        this.syncStates.save(peer, id, state);
      });
    } catch (err) {
      this.cache.evict(id, after);
      throw err;
    }
    this.batches.announce(id, 'remote', peer);
    return { changed };
  }

  /**
   * Remembers `value` under `key` for the document as it is now (its heads): `noted` answers it
   * until the document changes, without loading it. For a writer of one part of a document that
   * checks often whether the part holds what it should: the hub's data, upgrade and staging orders,
   * checked at every handshake on a hub replica, where loading each edge's spec to compare was a
   * fifth of a reconnect storm's CPU (docs/benchmarks.md). The heads say everything of a
   * document's contents, so a note is never wrong; at other heads it is simply not there.
   */
  note(id: DocId, key: string, value: string): void {
    this.reads.note(id, key, value);
  }

  /**
   * Writes one part of a document so that it holds what `value` stands for (its JSON, say), unless
   * the document was noted holding it (`noted`), in which case it is not even loaded: `fn` writes
   * the part through the backend (`changeBackend` with `part`, keeping the notes of the other
   * parts), and the value is noted afterwards. Returns whether the document changed.
   */
  changePart(
    id: DocId,
    part: string,
    value: string,
    fn: (backend: ReturnType<typeof A.getBackend>) => void,
    message?: string,
  ): boolean {
    if (this.noted(id, part) === value) return false;
    const changed = this.changeBackend(id, fn, message, part);
    this.note(id, part, value);
    return changed;
  }

  /** What `note` remembered under `key`, if the document has not changed since. */
  noted(id: DocId, key: string): string | undefined {
    return this.reads.noted(id, key);
  }

  /** Deletes a document and its sync states. */
  delete(id: DocId): void {
    this.reads.forget(id);
    this.transaction(() => {
      this.reads.dropNotes(id);
      this.syncStates.drop(id);
      this.storage.delete(id);
    });
    this.cache.evict(id);
  }

  /** Number and estimated bytes of loaded documents (for metrics and tests). */
  loadedStats(): { docs: number; bytes: number } {
    return this.cache.stats();
  }

  /** False once closed (an agent or hub stopping): work still in flight then has nowhere to write. */
  get isOpen(): boolean {
    return !this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.syncStates.close();
    this.cache.evictAll();
    this.closed = true;
    this.db.close();
  }

  // -------------------------------------------------------------------------------------------

  /**
   * Writes a change of `doc` (its backend is ahead of prevHeads) with projections in one
   * transaction. `stale`: the JS view of `doc` lags its backend (changeBackend); a projection
   * hook that reads the document gets an up-to-date view, built only then.
   */
  private persist(
    id: DocId,
    doc: AnyDoc,
    prevHeads: A.Heads,
    origin: 'local' | 'remote',
    peer?: string,
    change?: Uint8Array,
    stale = false,
  ): void {
    const now = Date.now();
    const heads = JSON.stringify(A.getHeads(doc));
    this.batches.touch(id);
    this.reads.forget(id);
    let snap = 0;
    let chunkBytes = 0;
    const run = () => {
      const c = this.storage.append(id, doc, heads, change ?? A.saveSince(doc, prevHeads), now);
      snap = c.snap;
      chunkBytes = c.chunk_bytes;
      if (this.opts.onChange) {
        const db = this.db;
        this.opts.onChange({
          id,
          origin,
          peer,
          db,
          get doc() {
            if (stale) {
              live = wasmSync.catchUp(live);
              stale = false;
            }
            return live;
          },
        });
      }
    };
    let live = doc;
    try {
      this.transaction(run);
    } catch (err) {
      this.cache.evict(id, live);
      throw err;
    }
    const epoch = this.cache.get(id)?.epoch ?? this.reads.meta(id)?.epoch;
    if (epoch !== undefined) this.cache.remember(id, live, epoch, snap, chunkBytes, stale);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('replica store is closed');
  }
}
