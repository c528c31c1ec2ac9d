/**
 * @module The rows of reads SyncPostgres ran ahead (sync-client.ts `prefetch`), kept by statement
 * and parameters until the end of the turn of the event loop or a write to their table: which
 * reads one round trip runs (the same read once, a group of keyed reads as one read of all their
 * keys), the rows each read is answered with, and what a write makes stale.
 */
import type { Read } from '../read.js';
import type { Write } from './merge-writes.js';
import { asRows, numberPlaceholders, type Param } from './statements.js';

/** The parameters of a read, as a key among the reads of one statement. */
const paramsKey = (params: readonly Param[]): string => JSON.stringify(params);

export class PrefetchCache {
  /**
   * Rows of reads made ahead, by statement (numbered placeholders) and then parameters; forgotten
   * at the next write to a table the statement reads.
   */
  private readonly prefetched = new Map<string, Map<string, Record<string, unknown>[]>>();
  /**
   * Per table written since the reads were given, the statements of `prefetched` that name it:
   * found once per table and kept up to date as statements are added (a batch of handshakes reads
   * thousands of rows ahead and writes hundreds of times; a scan of every statement at every write
   * was quadratic).
   */
  private readonly prefetchedByTable = new Map<string, { word: RegExp; texts: Set<string> }>();

  /** The rows read ahead for this statement (numbered placeholders) and parameters, if any. */
  rows<Row>(text: string, params: Param[]): Row[] | undefined {
    if (!this.prefetched.size) return undefined;
    const hit = this.prefetched.get(text)?.get(paramsKey(params));
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
    type Keyed = { text: string; params: Param[]; pk: string };
    const singles = new Map<string, Keyed>();
    const groups = new Map<string, { many: NonNullable<Read['many']>; members: Map<string, Keyed & { read: Read }> }>();
    for (const r of reads) {
      const k = { text: numberPlaceholders(r.sql), params: r.params, pk: paramsKey(r.params) };
      const key = `${k.text}\0${k.pk}`;
      if (!r.many) singles.set(key, k);
      else
        (
          groups.get(r.many.group) ?? groups.set(r.many.group, { many: r.many, members: new Map() }).get(r.many.group)!
        ).members.set(key, { ...k, read: r });
    }
    const batched: { text: string; params: Param[]; column: string; members: (Keyed & { read: Read })[] }[] = [];
    for (const g of groups.values()) {
      if (g.members.size === 1) for (const [key, m] of g.members) singles.set(key, m);
      else {
        const members = [...g.members.values()];
        const all = g.many.read([...new Set(members.map((m) => m.read.many!.key))]);
        batched.push({ text: numberPlaceholders(all.sql), params: all.params, column: g.many.column, members });
      }
    }
    const one = [...singles.values()];
    const results = send([...one, ...batched].map((r) => ({ sql: r.text, params: r.params })));
    if (!this.prefetched.size) setImmediate(() => this.clear());
    // A read that failed is run again when asked, and fails there with its own error.
    one.forEach((k, i) => {
      const rows = results[i]?.rows;
      if (rows) this.remember(k, asRows(rows));
    });
    batched.forEach((b, i) => {
      const rows = results[one.length + i]?.rows;
      if (!rows) return;
      const byKey = new Map<string, Record<string, unknown>[]>();
      for (const row of asRows<Record<string, unknown>>(rows)) {
        const k = String(row[b.column]);
        (byKey.get(k) ?? byKey.set(k, []).get(k)!).push(row);
      }
      for (const m of b.members) this.remember(m, byKey.get(m.read.many!.key) ?? []);
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
      t = { word, texts: new Set([...this.prefetched.keys()].filter((text) => word.test(text))) };
      this.prefetchedByTable.set(table, t);
    }
    for (const text of t.texts) this.prefetched.delete(text);
    t.texts.clear();
  }

  private remember(k: { text: string; pk: string }, rows: Record<string, unknown>[]): void {
    let byParams = this.prefetched.get(k.text);
    if (!byParams) {
      this.prefetched.set(k.text, (byParams = new Map()));
      for (const t of this.prefetchedByTable.values()) if (t.word.test(k.text)) t.texts.add(k.text);
    }
    byParams.set(k.pk, rows);
  }

  /** Forgets every row read ahead. */
  private clear(): void {
    this.prefetched.clear();
    this.prefetchedByTable.clear();
  }
}
