/**
 * @module What a replica file answers about a document without loading it: its epoch, heads and
 * stored size (`meta`), and its notes (table doc_notes: `note`, `noted`), facts remembered at the
 * document's heads. The last of these reads are kept in memory while the document is unchanged, so
 * a hub replica's handshake, which asks several of them per edge, costs no query for most.
 */
import type * as A from '@automerge/automerge/slim';
import type { DocId } from '../core/ids.js';
import type { SqliteDatabase } from './sqlite.js';

/** Documents whose metadata and notes `ReplicaStore` keeps in memory (three per edge on a hub). */
const MAX_REMEMBERED_READS = 100_000;
/** Notes longer than this are not kept in memory (`noted` reads them again). */
const LARGE_NOTE = 1024;

export class DocReads {
  private readonly stmt;
  /**
   * What `meta` and `noted` last read of a document, while it is unchanged: a handshake on a hub
   * replica asks several of them per edge, a query each. Forgotten at every write of the document
   * (`forget`); filled only outside a transaction (a write rolled back must leave no read of
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

  constructor(private readonly db: SqliteDatabase) {
    this.stmt = {
      docMeta: db.prepare('SELECT epoch, heads, length(snapshot) + chunk_bytes AS size FROM docs WHERE id = ?'),
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

  /** The document is written: what was read of it is not to be answered again. */
  forget(id: DocId): void {
    this.reads.delete(id);
  }

  /** Remembers `value` under `key` for the document at its current heads (`ReplicaStore.note`). */
  note(id: DocId, key: string, value: string): void {
    const kept = this.reads.get(id);
    if (kept) kept.notes = undefined;
    this.stmt.putNote.run(key, value, id);
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

  /** Moves the notes of the document other than `part` to its new heads (the change wrote only `part`). */
  keepNotes(id: DocId, part: string): void {
    this.stmt.keepNotes.run(id, id, part);
  }

  /** Deletes every note of the document (inside the caller's transaction). */
  dropNotes(id: DocId): void {
    this.stmt.dropNotes.run(id);
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
}
