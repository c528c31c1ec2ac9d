/**
 * @module The documents of a replica file on disk (tables docs and doc_chunks): each is a snapshot
 * plus incremental chunks (`saveSince`); when chunks pile up they are folded into a new snapshot in
 * the same transaction as the write that crossed the line. Writes run inside the caller's
 * transaction (`ReplicaStore`), which also persists projections and sync states with them.
 */
import * as A from '@automerge/automerge/slim';
import type { DocId } from '../core/ids.js';
import type { AnyDoc } from './doc-cache.js';
import type { SqliteDatabase } from './sqlite.js';
import * as wasmSync from './wasm-sync.js';

/** Fold chunks into a snapshot past this many, or once they outweigh the snapshot. */
const COMPACT_CHUNK_COUNT = 64;

export interface DocRow {
  id: string;
  epoch: string;
  snapshot: Buffer;
  heads: string;
  chunk_count: number;
  chunk_bytes: number;
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

export class DocStorage {
  private readonly stmt;

  constructor(private readonly db: SqliteDatabase) {
    this.stmt = {
      getDoc: db.prepare('SELECT id, epoch, snapshot, heads, chunk_count, chunk_bytes FROM docs WHERE id = ?'),
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
    };
  }

  /** The stored row of a document (its snapshot, not its chunks), if it exists. */
  row(id: DocId): DocRow | undefined {
    return this.stmt.getDoc.get(id) as DocRow | undefined;
  }

  /** Loads the document `id` (stored as `row`) with its chunks. */
  load(id: DocId, row: DocRow): AnyDoc {
    const chunks = (this.stmt.chunks.all(id) as { data: Buffer }[]).map((c) => c.data);
    try {
      // The snapshot and its chunks at once, without a JS view: it is built (whole, as A.load
      // would) only when something `get`s the document; a hub reads few of the spec documents
      // it writes.
      return wasmSync.loadLazy<Record<string, unknown>>(
        chunks.length ? concat([row.snapshot, ...chunks]) : row.snapshot,
      );
    } catch (err) {
      throw new Error(`document ${id} in ${this.db.name} cannot be loaded: restore the data directory from a backup`, {
        cause: err,
      });
    }
  }

  insert(id: DocId, epoch: string, snapshot: Uint8Array, heads: A.Heads, now: number): void {
    this.stmt.insertDoc.run(id, epoch, snapshot, JSON.stringify(heads), now);
  }

  /**
   * Appends one change (`chunk`, the bytes `doc` gained) at `heads` (JSON), folding the chunks into
   * a snapshot of `doc` when they pile up. Returns the bytes now stored as snapshot and as chunks.
   */
  append(id: DocId, doc: AnyDoc, heads: string, chunk: Uint8Array, now: number): { snap: number; chunk_bytes: number } {
    this.stmt.addChunk.run(id, id, chunk);
    const c = this.stmt.bumpDoc.get(heads, chunk.length, now, id) as {
      chunk_count: number;
      chunk_bytes: number;
      snap: number;
    };
    if (c.chunk_count >= COMPACT_CHUNK_COUNT || c.chunk_bytes > Math.max(c.snap, 16 * 1024)) {
      const snapshot = A.save(doc);
      this.stmt.snapshot.run(snapshot, heads, now, id);
      this.stmt.dropChunks.run(id);
      c.snap = snapshot.length;
      c.chunk_bytes = 0;
    }
    return c;
  }

  /** Deletes the document and its chunks (inside the caller's transaction). */
  delete(id: DocId): void {
    this.stmt.dropChunks.run(id);
    this.stmt.deleteDoc.run(id);
  }

  list(prefix: string): { id: DocId; epoch: string }[] {
    return (this.stmt.listDocs.all(`${prefix}%`) as { id: DocId; epoch: string }[]).map((r) => ({
      id: r.id,
      epoch: r.epoch,
    }));
  }
}
