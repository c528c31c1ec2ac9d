/**
 * @module The replica store: Automerge documents persisted in one SQLite file, with sync states per
 * (peer, document) and a hook for projection tables.
 *
 * Transaction boundary: applying a received sync message, saving the document's new bytes, saving
 * the sync state and updating projections (the `onChange` hook) happen in ONE SQLite transaction,
 * so after a crash at any point the replica is before or after that message, never torn.
 *
 * Memory: documents are loaded on demand and evicted least-recently-used under a byte budget;
 * evicted documents are freed in wasm (`A.free`) because Automerge's wasm memory only grows.
 *
 * Storage: each document is a snapshot plus incremental chunks (`saveSince`); when chunks pile up
 * they are folded into a new snapshot in the same transaction as the write that crossed the line.
 */
import { randomBytes } from 'node:crypto';
import * as A from '@automerge/automerge/slim';
import type { DocId } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import { buildInfo } from '../core/version.js';
import { initAutomerge } from './native.js';
import { inSavepoint, inTransaction, migrate, openDatabase, type SqliteDatabase } from './sqlite.js';
import { keepWasmHeadroom } from './wasm-heap.js';
import * as wasmSync from './wasm-sync.js';
import type { SyncHandle } from './wasm-sync.js';

const log = createLogger('sync:store');

const MIGRATIONS = [
  {
    version: 1,
    sql: `
      CREATE TABLE docs (
        id TEXT PRIMARY KEY,
        epoch TEXT NOT NULL,
        snapshot BLOB NOT NULL,
        heads TEXT NOT NULL,
        chunk_count INTEGER NOT NULL DEFAULT 0,
        chunk_bytes INTEGER NOT NULL DEFAULT 0,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE doc_chunks (
        doc_id TEXT NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (doc_id, seq)
      );
      CREATE TABLE sync_states (
        peer TEXT NOT NULL,
        doc_id TEXT NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
        epoch TEXT NOT NULL,
        state BLOB NOT NULL,
        PRIMARY KEY (peer, doc_id)
      );
    `,
  },
  {
    version: 2,
    // Deleting or resetting a document (foreign-key cascade and dropSync) looked sync states up by
    // document alone: a scan of the whole table, 3.6 ms per reset with 10,000 edges, which every
    // first connect of an edge does once (it adopts the edge's report epoch).
    sql: 'CREATE INDEX sync_states_by_doc ON sync_states (doc_id);',
  },
  {
    version: 3,
    // Facts about a document at given heads (`note`): what a writer of one part of it wrote there,
    // so that checking it again needs no load (the hub's orders at every handshake on a replica).
    sql: `CREATE TABLE doc_notes (
      doc_id TEXT NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
      key TEXT NOT NULL,
      heads TEXT NOT NULL,
      value TEXT NOT NULL,
      PRIMARY KEY (doc_id, key)
    );`,
  },
];

/** Fold chunks into a snapshot past this many, or once they outweigh the snapshot. */
const COMPACT_CHUNK_COUNT = 64;

/** Documents whose metadata and notes `ReplicaStore` keeps in memory (three per edge on a hub). */
const MAX_REMEMBERED_READS = 100_000;
/** Notes longer than this are not kept in memory (`noted` reads them again). */
const LARGE_NOTE = 1024;
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
/**
 * Sync states after a message that changed nothing (an acknowledgement) are written at most
 * this often, in one transaction for all of them, and when the session closes. After a crash
 * the persisted state is at most this old: its shared heads are still heads both sides have, so
 * the next connection only exchanges a little more than it would have.
 */
const SYNC_STATE_FLUSH_MS = 1_000;

export type AnyDoc = A.Doc<Record<string, unknown>>;

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

interface Loaded {
  doc: AnyDoc;
  epoch: string;
  cost: number;
  /** Bytes stored for the document (snapshot and chunks). */
  size: number;
  /** Changed through its backend since `doc` was built: the JS view lags until the next `get`. */
  stale?: boolean;
}

interface DocRow {
  id: string;
  epoch: string;
  snapshot: Buffer;
  heads: string;
  chunk_count: number;
  chunk_bytes: number;
}

export function newEpoch(): string {
  return `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export class ReplicaStore {
  readonly db: SqliteDatabase;
  private readonly cache = new Map<DocId, Loaded>();
  private cacheCost = 0;
  private readonly budget: number;
  private readonly opts: ReplicaStoreOptions;
  private closed = false;
  private readonly stmt;
  /** Sync states changed by acknowledgements, not yet persisted: key `peer\0docId`. */
  private readonly dirtySync = new Map<
    string,
    { peer: string; id: DocId; epoch: string | undefined; state: SyncHandle }
  >();
  private syncFlushTimer: NodeJS.Timeout | undefined;
  /**
   * What `meta` and `noted` last read of a document, while it is unchanged: a handshake on a hub
   * replica asks several of them per edge, a query each. Forgotten at every write of the document
   * (`forgetReads`); filled only outside a transaction (a write rolled back must leave no read of
   * it behind), and emptied when it holds MAX_REMEMBERED_READS documents.
   */
  private readonly reads = new Map<
    DocId,
    {
      meta?: { epoch: string; heads: A.Heads; size: number } | null;
      /** Every note at the document's heads; null for a large value, read again when asked. */
      notes?: Map<string, string | null>;
    }
  >();
  /** Set inside `batch`: documents changed and notifications held until the commit. */
  private batched: { touched: Set<DocId>; after: [DocId, 'local' | 'remote', string | undefined][] } | undefined;

  private constructor(db: SqliteDatabase, opts: ReplicaStoreOptions) {
    this.db = db;
    this.opts = opts;
    this.budget = opts.memoryBudgetBytes ?? 256 * 1024 * 1024;
    this.stmt = {
      getDoc: db.prepare('SELECT id, epoch, snapshot, heads, chunk_count, chunk_bytes FROM docs WHERE id = ?'),
      docMeta: db.prepare('SELECT epoch, heads, length(snapshot) + chunk_bytes AS size FROM docs WHERE id = ?'),
      chunks: db.prepare('SELECT data FROM doc_chunks WHERE doc_id = ? ORDER BY seq'),
      insertDoc: db.prepare('INSERT INTO docs (id, epoch, snapshot, heads, updated_at) VALUES (?, ?, ?, ?, ?)'),
      addChunk: db.prepare(
        'INSERT INTO doc_chunks (doc_id, seq, data) VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM doc_chunks WHERE doc_id = ?), ?)',
      ),
      // One statement for the bump and the counts the fold decision needs (was an UPDATE and a SELECT).
      bumpDoc: db.prepare(
        'UPDATE docs SET heads = ?, chunk_count = chunk_count + 1, chunk_bytes = chunk_bytes + ?, updated_at = ? WHERE id = ? RETURNING chunk_count, chunk_bytes, length(snapshot) AS snap',
      ),
      snapshot: db.prepare(
        'UPDATE docs SET snapshot = ?, heads = ?, chunk_count = 0, chunk_bytes = 0, updated_at = ? WHERE id = ?',
      ),
      dropChunks: db.prepare('DELETE FROM doc_chunks WHERE doc_id = ?'),
      deleteDoc: db.prepare('DELETE FROM docs WHERE id = ?'),
      listDocs: db.prepare('SELECT id, epoch FROM docs WHERE id LIKE ? ORDER BY id'),
      getSync: db.prepare('SELECT epoch, state FROM sync_states WHERE peer = ? AND doc_id = ?'),
      putSync: db.prepare(
        'INSERT INTO sync_states (peer, doc_id, epoch, state) VALUES (?, ?, ?, ?) ON CONFLICT(peer, doc_id) DO UPDATE SET epoch = excluded.epoch, state = excluded.state',
      ),
      dropSync: db.prepare('DELETE FROM sync_states WHERE doc_id = ?'),
      putNote: db.prepare(
        'INSERT INTO doc_notes (doc_id, key, heads, value) SELECT id, ?, heads, ? FROM docs WHERE id = ? ON CONFLICT(doc_id, key) DO UPDATE SET heads = excluded.heads, value = excluded.value',
      ),
      getNotes: db.prepare(
        // The document's heads as a scalar subquery: 2-3x faster than the same as a join here.
        'SELECT key, value FROM doc_notes WHERE doc_id = ? AND heads = (SELECT heads FROM docs WHERE id = ?)',
      ),
      getNote: db.prepare(
        'SELECT value FROM doc_notes WHERE doc_id = ? AND key = ? AND heads = (SELECT heads FROM docs WHERE id = ?)',
      ),
      dropNotes: db.prepare('DELETE FROM doc_notes WHERE doc_id = ?'),
      keepNotes: db.prepare(
        'UPDATE doc_notes SET heads = (SELECT heads FROM docs WHERE id = ?) WHERE doc_id = ? AND key <> ?',
      ),
    };
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
    if (this.batched) return fn();
    this.batched = { touched: new Set(), after: [] };
    const b = this.batched;
    try {
      this.transaction(fn);
    } catch (err) {
      this.batched = undefined;
      for (const id of b.touched) this.evict(id);
      throw err;
    }
    this.batched = undefined;
    for (const [id, origin, peer] of b.after) {
      try {
        this.opts.afterChange?.(id, origin, peer);
      } catch (err) {
        // Committed already: one failing hook must not keep the others from running.
        log.error({ err, doc: id }, 'after-change hook failed');
      }
    }
  }

  private announce(id: DocId, origin: 'local' | 'remote', peer?: string): void {
    if (this.batched) this.batched.after.push([id, origin, peer]);
    else this.opts.afterChange?.(id, origin, peer);
  }

  has(id: DocId): boolean {
    return this.cache.has(id) || this.meta(id) !== undefined;
  }

  /** Epoch, heads and stored size without loading the document. */
  meta(id: DocId): { epoch: string; heads: A.Heads; size: number } | undefined {
    let m = this.reads.get(id)?.meta;
    if (m === undefined) {
      const r = this.stmt.docMeta.get(id) as { epoch: string; heads: string; size: number } | undefined;
      m = r ? { epoch: r.epoch, heads: JSON.parse(r.heads) as A.Heads, size: r.size } : null;
      const kept = this.keptReads(id);
      if (kept) kept.meta = m;
    }
    return m ? { ...m, heads: [...m.heads] } : undefined;
  }

  /** The entry of `reads` to fill for the document, unless in a transaction (or too many). */
  private keptReads(id: DocId): NonNullable<ReturnType<typeof this.reads.get>> | undefined {
    if (this.db.inTransaction) return undefined;
    let r = this.reads.get(id);
    if (!r) {
      if (this.reads.size >= MAX_REMEMBERED_READS) this.reads.clear();
      this.reads.set(id, (r = {}));
    }
    return r;
  }

  /** The document is written: what was read of it is not to be answered again. */
  private forgetReads(id: DocId): void {
    this.reads.delete(id);
  }

  /** Bytes stored for the document (snapshot and chunks), without a query when it is loaded. */
  storedSize(id: DocId): number | undefined {
    return this.cache.get(id)?.size ?? this.meta(id)?.size;
  }

  /** True when the document is in memory (using it costs no load). */
  isLoaded(id: DocId): boolean {
    return this.cache.has(id);
  }

  list(prefix = ''): { id: DocId; epoch: string }[] {
    return (this.stmt.listDocs.all(`${prefix}%`) as { id: DocId; epoch: string }[]).map((r) => ({
      id: r.id,
      epoch: r.epoch,
    }));
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
    const hit = this.cache.get(id);
    if (hit) {
      this.cache.delete(id);
      this.cache.set(id, hit);
      return hit.doc as A.Doc<T>;
    }
    const row = this.stmt.getDoc.get(id) as DocRow | undefined;
    if (!row) return undefined;
    const chunks = (this.stmt.chunks.all(id) as { data: Buffer }[]).map((c) => c.data);
    let doc: AnyDoc;
    try {
      // The snapshot and its chunks at once, without a JS view: it is built (whole, as A.load
      // would) only when something `get`s the document; a hub reads few of the spec documents
      // it writes.
      doc = wasmSync.loadLazy<Record<string, unknown>>(
        chunks.length ? concat([row.snapshot, ...chunks]) : row.snapshot,
      );
    } catch (err) {
      throw new Error(`document ${id} in ${this.db.name} cannot be loaded: restore the data directory from a backup`, {
        cause: err,
      });
    }
    this.remember(id, doc, row.epoch, row.snapshot.length, row.chunk_bytes, true);
    return doc as A.Doc<T>;
  }

  epoch(id: DocId): string | undefined {
    return this.cache.get(id)?.epoch ?? this.meta(id)?.epoch;
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
    this.batched?.touched.add(id);
    this.forgetReads(id);
    this.transaction(() => {
      this.stmt.insertDoc.run(id, epoch, bytes, JSON.stringify(A.getHeads(doc)), Date.now());
      if (opts.init) this.opts.onChange?.({ id, doc, origin: 'local', db: this.db });
    });
    this.remember(id, doc, epoch, bytes.length, 0);
    if (opts.init) this.announce(id, 'local');
    return doc as A.Doc<T>;
  }

  /** Replaces a document by an empty (or initialized) one in a new epoch, dropping its sync states. */
  reset<T>(id: DocId, epoch: string, init?: (d: T) => void): A.Doc<T> {
    this.transaction(() => this.delete(id));
    return this.create<T>(id, { epoch, init });
  }

  /** A local change, persisted with projections in one transaction. Returns false when fn changed nothing. */
  change<T>(id: DocId, fn: (d: T) => void, message?: string): boolean {
    const before = this.get<Record<string, unknown>>(id);
    if (!before) throw new Error(`document ${id} does not exist`);
    const heads = A.getHeads(before);
    const after = A.change(before, message ? { message } : {}, fn as unknown as A.ChangeFn<Record<string, unknown>>);
    if (wasmSync.sameHeads(heads, A.getHeads(after))) return false;
    // One A.change makes exactly one change: its bytes are at hand (saveSince would re-encode them,
    // five times the cost).
    this.persist(id, after, heads, 'local', undefined, A.getLastLocalChange(after));
    this.announce(id, 'local');
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
    if (part !== undefined) this.stmt.keepNotes.run(id, id, part);
    this.announce(id, 'local');
    return true;
  }

  /** The persisted sync state for (peer, doc), or a fresh one when absent or from another epoch. */
  loadSyncState(peer: string, id: DocId): SyncHandle {
    const pending = this.dirtySync.get(`${peer}\0${id}`);
    if (pending && pending.epoch === this.epoch(id)) return pending.state;
    const row = this.stmt.getSync.get(peer, id) as { epoch: string; state: Buffer } | undefined;
    if (row && row.epoch === this.epoch(id)) {
      try {
        return wasmSync.decodeSyncState(row.state);
      } catch (err) {
        log.warn({ err, peer, doc: id }, 'discarding unreadable sync state');
      }
    }
    return wasmSync.newSyncState();
  }

  saveSyncState(peer: string, id: DocId, state: SyncHandle): void {
    this.dirtySync.delete(`${peer}\0${id}`);
    const epoch = this.epoch(id);
    if (epoch === undefined) return;
    this.stmt.putSync.run(peer, id, epoch, wasmSync.encodeSyncState(state));
  }

  /** Persists the sync states kept back by `receive`, in one transaction. */
  flushSyncStates(): void {
    if (this.syncFlushTimer) clearTimeout(this.syncFlushTimer);
    this.syncFlushTimer = undefined;
    if (this.dirtySync.size === 0 || this.closed) return;
    const pending = [...this.dirtySync.values()];
    this.dirtySync.clear();
    this.transaction(() => {
      // A state of an epoch the document has left describes nothing: drop it.
      for (const p of pending)
        if (p.epoch !== undefined && this.epoch(p.id) === p.epoch) this.saveSyncState(p.peer, p.id, p.state);
    });
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
      this.evict(id);
      throw new Error(`invalid sync message for ${id}`, { cause: err });
    }
    const changed = after !== before;
    if (changed && !opts.mayAddChanges) {
      const added = A.getChangesMetaSince(after, heads).length;
      this.evict(id, after);
      throw new WriteViolation(`${peer} may not write ${id}: the message would add ${added} change(s)`);
    }
    if (!changed) {
      keepWasmHeadroom();
      // An acknowledgement: nothing to write but the sync state, which can wait (SYNC_STATE_FLUSH_MS).
      this.dirtySync.set(`${peer}\0${id}`, { peer, id, epoch: this.epoch(id), state });
      this.syncFlushTimer ??= setTimeout(() => this.flushSafely(), SYNC_STATE_FLUSH_MS).unref();
      return { changed };
    }
    try {
      // A savepoint inside a batch (the hub's inbox receives many messages in one transaction):
      // a message that cannot be kept is undone alone, the others stay.
      inSavepoint(this.db, () => {
        this.persist(id, after, heads, 'remote', peer);
        this.saveSyncState(peer, id, state);
      });
    } catch (err) {
      this.evict(id, after);
      throw err;
    }
    this.announce(id, 'remote', peer);
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
    const kept = this.reads.get(id);
    if (kept) kept.notes = undefined;
    this.stmt.putNote.run(key, value, id);
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
    let notes = this.reads.get(id)?.notes;
    if (!notes) {
      const kept = this.keptReads(id);
      if (!kept) return (this.stmt.getNote.get(id, key, id) as { value: string } | undefined)?.value;
      // All of the document's notes in one read (a handshake asks for three); large values (an
      // order's JSON past LARGE_NOTE characters) are left to be read again when asked.
      const rows = this.stmt.getNotes.all(id, id) as { key: string; value: string }[];
      notes = kept.notes = new Map(rows.map((r) => [r.key, r.value.length <= LARGE_NOTE ? r.value : null]));
    }
    const value = notes.get(key);
    if (value !== null) return value;
    return (this.stmt.getNote.get(id, key, id) as { value: string } | undefined)?.value;
  }

  /** Deletes a document and its sync states. */
  delete(id: DocId): void {
    this.forgetReads(id);
    this.transaction(() => {
      this.stmt.dropNotes.run(id);
      this.stmt.dropSync.run(id);
      this.stmt.dropChunks.run(id);
      this.stmt.deleteDoc.run(id);
    });
    this.evict(id);
  }

  /** Number and estimated bytes of loaded documents (for metrics and tests). */
  loadedStats(): { docs: number; bytes: number } {
    return { docs: this.cache.size, bytes: this.cacheCost };
  }

  close(): void {
    if (this.closed) return;
    this.flushSafely();
    for (const id of [...this.cache.keys()]) this.evict(id);
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
    this.batched?.touched.add(id);
    this.forgetReads(id);
    let snap = 0;
    let chunkBytes = 0;
    const run = () => {
      const inc = change ?? A.saveSince(doc, prevHeads);
      this.stmt.addChunk.run(id, id, inc);
      const c = this.stmt.bumpDoc.get(heads, inc.length, now, id) as {
        chunk_count: number;
        chunk_bytes: number;
        snap: number;
      };
      snap = c.snap;
      chunkBytes = c.chunk_bytes;
      if (c.chunk_count >= COMPACT_CHUNK_COUNT || c.chunk_bytes > Math.max(c.snap, 16 * 1024)) {
        const snapshot = A.save(doc);
        this.stmt.snapshot.run(snapshot, heads, now, id);
        this.stmt.dropChunks.run(id);
        snap = snapshot.length;
        chunkBytes = 0;
      }
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
      this.evict(id, live);
      throw err;
    }
    const epoch = this.cache.get(id)?.epoch ?? this.meta(id)?.epoch;
    if (epoch !== undefined) this.remember(id, live, epoch, snap, chunkBytes, stale);
  }

  private remember(
    id: DocId,
    doc: AnyDoc,
    epoch: string,
    snapshotBytes: number,
    chunkBytes: number,
    stale = false,
  ): void {
    // Every load and every write ends here: the place to keep Automerge's heap from growing in
    // small steps (sync/wasm-heap.ts).
    keepWasmHeadroom();
    const cur = this.cache.get(id);
    if (cur) {
      this.cache.delete(id);
      this.cacheCost -= cur.cost;
    }
    const cost = docCost(snapshotBytes, chunkBytes);
    // A view that lagged before this change still lags (the same handle, changed again).
    this.cache.set(id, {
      doc,
      epoch,
      cost,
      size: snapshotBytes + chunkBytes,
      stale: stale || (cur?.doc === doc && cur.stale),
    });
    this.cacheCost += cost;
    for (const [victim] of this.cache) {
      if (this.cacheCost <= this.budget || this.cache.size <= 1) break;
      if (victim === id) continue;
      this.evict(victim);
    }
  }

  /** Drops a document from memory; `live` is the current handle when the cached one was outdated by a change. */
  private evict(id: DocId, live?: AnyDoc): void {
    const cur = this.cache.get(id);
    if (cur) {
      this.cache.delete(id);
      this.cacheCost -= cur.cost;
    }
    const handle = live ?? cur?.doc;
    if (!handle) return;
    try {
      A.free(handle);
    } catch {
      /* an outdated handle owns nothing */
    }
  }

  private flushSafely(): void {
    try {
      this.flushSyncStates();
    } catch (err) {
      log.warn({ err }, 'could not persist sync states (the next connection will exchange a little more)');
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('replica store is closed');
  }
}
