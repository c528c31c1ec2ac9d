/**
 * @module The rows of reads SyncPostgres ran ahead (sync-client.ts `prefetch`), kept by statement
 * and parameters until the end of the turn of the event loop or a write to their table: which
 * reads one round trip runs (the same read once, a group of keyed reads as one read of all their
 * keys), the rows each read is answered with, and what a write makes stale.
 */
import type { Read } from '../sql.js';
import type { Write } from './merge-writes.js';
import { asRows, numberPlaceholders, type Param, prefetchKey } from './statements.js';

export class PrefetchCache {
  /** Rows of reads made ahead, by statement and parameters; forgotten at the next write. */
  private readonly prefetched = new Map<string, Record<string, unknown>[]>();
  /**
   * Per table written since the reads were given, the keys of `prefetched` that name it: found
   * once per table and kept up to date as rows are added (a batch of handshakes reads thousands
   * of rows ahead and writes hundreds of times; a scan of every key at every write was quadratic).
   */
  private readonly prefetchedByTable = new Map<string, { word: RegExp; keys: Set<string> }>();

  /** The rows read ahead for this statement (numbered placeholders) and parameters, if any. */
  rows<Row>(text: string, params: Param[]): Row[] | undefined {
    if (!this.prefetched.size) return undefined;
    const hit = this.prefetched.get(prefetchKey(text, params));
    // A copy: the caller may change the rows it is given, and a later read is given them again.
    return hit ? (hit.map((r) => ({ ...r })) as Row[]) : undefined;
  }

  /**
   * Runs `reads` with `send` (one round trip: the statements, numbered) and keeps their rows for
   * the rest of this turn of the event loop.
   */
  load(reads: Read[], send: (statements: Write[]) => { rows?: Record<string, unknown>[] }[]): void {
    // The same read asked twice (edges of one project read the project's list) runs once; the
    // reads of one group of keyed reads (sql.ts `keyed`) run as one read of all their keys, and a
    // group of one as itself.
    const singles = new Map<string, { sql: string; params: Param[] }>();
    const groups = new Map<string, { many: NonNullable<Read['many']>; members: Map<string, Read> }>();
    for (const r of reads) {
      const key = prefetchKey(numberPlaceholders(r.sql), r.params);
      if (!r.many) singles.set(key, r);
      else
        (
          groups.get(r.many.group) ?? groups.set(r.many.group, { many: r.many, members: new Map() }).get(r.many.group)!
        ).members.set(key, r);
    }
    const batched: { sql: string; params: Param[]; column: string; members: Map<string, Read> }[] = [];
    for (const g of groups.values()) {
      if (g.members.size === 1) for (const [key, r] of g.members) singles.set(key, r);
      else {
        const all = g.many.read([...new Set([...g.members.values()].map((r) => r.many!.key))]);
        batched.push({ sql: all.sql, params: all.params, column: g.many.column, members: g.members });
      }
    }
    const numbered = [...singles.values(), ...batched].map((r) => ({
      sql: numberPlaceholders(r.sql),
      params: r.params,
    }));
    const results = send(numbered);
    if (!this.prefetched.size) setImmediate(() => this.clear());
    // A read that failed is run again when asked, and fails there with its own error.
    [...singles.keys()].forEach((key, i) => {
      const rows = results[i]?.rows;
      if (rows) this.remember(key, asRows(rows));
    });
    batched.forEach((b, i) => {
      const rows = results[singles.size + i]?.rows;
      if (!rows) return;
      const byKey = new Map<string, Record<string, unknown>[]>();
      for (const row of asRows<Record<string, unknown>>(rows)) {
        const k = String(row[b.column]);
        (byKey.get(k) ?? byKey.set(k, []).get(k)!).push(row);
      }
      for (const [cacheKey, r] of b.members) this.remember(cacheKey, byKey.get(r.many!.key) ?? []);
    });
  }

  /**
   * A write is coming: forgets the rows read ahead from the table it writes (all of them when the
   * statement does not say plainly which table that is).
   */
  forget(sql: string): void {
    // Ending a transaction writes nothing its statements did not write (and forget) already; a
    // SELECT (a read, pg_notify) writes no table.
    if (!this.prefetched.size || /^\s*(?:begin|commit|rollback)\s*$|^\s*select\b/i.test(sql)) return;
    const table = /^\s*(?:insert\s+into|update|delete\s+from)\s+([a-z_][a-z0-9_]*)[\s(]/i.exec(sql)?.[1];
    if (!table) return this.clear();
    let t = this.prefetchedByTable.get(table);
    if (!t) {
      const word = new RegExp(`\\b${table}\\b`, 'i');
      t = { word, keys: new Set([...this.prefetched.keys()].filter((k) => word.test(k))) };
      this.prefetchedByTable.set(table, t);
    }
    for (const k of t.keys) this.prefetched.delete(k);
    t.keys.clear();
  }

  private remember(key: string, rows: Record<string, unknown>[]): void {
    this.prefetched.set(key, rows);
    for (const t of this.prefetchedByTable.values()) if (t.word.test(key)) t.keys.add(key);
  }

  /** Forgets every row read ahead. */
  private clear(): void {
    this.prefetched.clear();
    this.prefetchedByTable.clear();
  }
}
