/**
 * @module The tables of the replica file (`ReplicaStore`), as forward-only migrations: documents
 * (a snapshot and its incremental chunks), sync states per (peer, document) and notes about a
 * document at given heads. The statements that write each table live with the module that owns it:
 * sync/doc-storage.ts (docs, doc_chunks), sync/sync-states.ts (sync_states), sync/doc-reads.ts
 * (doc_notes).
 */
import type { Migration } from './sqlite.js';

export const MIGRATIONS: Migration[] = [
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
