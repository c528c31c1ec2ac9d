/**
 * @module A synchronous PostgreSQL client for the hub's state layer (issue #22, groundwork): the
 * hub's state modules are synchronous by design (one SQLite transaction per write, called from
 * deep in the scheduler and the edges' lifecycle), so their PostgreSQL implementation calls this.
 * The `pg` client runs in a worker thread (worker.ts); each statement is posted to it and the main
 * thread waits on a shared flag (Atomics.wait) for the answer, read with receiveMessageOnPort. The
 * event loop is blocked for one round trip per statement: the cost the benchmarks of #22 measure.
 *
 * Every statement has a deadline: a database that is down or does not answer gives one error,
 * `DatabaseUnavailable`, instead of a hub that hangs. Placeholders are written `?` as for SQLite
 * and numbered here (`$1`...), outside quoted strings.
 *
 * The worker runs worker.ts beside this file when run from source (Node's type stripping, as in
 * the tests); in the single executable, and beside dist/outpost.cjs, it is the side bundle
 * `side/pg-worker.cjs` (build/sea/bundle.ts WORKER_BUNDLES).
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  MessageChannel,
  receiveMessageOnPort,
  Worker,
  type MessagePort,
  type WorkerOptions,
} from 'node:worker_threads';
import { PG_GATHER_MS } from '../../../core/durations.js';
import { createLogger } from '../../../core/logger.js';
import type { Read } from '../sql.js';
import { mergeWrites, type MergedWrite, type Write } from './merge-writes.js';
import { packagedAsset } from '../../../sync/native.js';
import {
  asRows,
  connectionLost,
  DatabaseError,
  DatabaseUnavailable,
  numberPlaceholders,
  type Param,
  prefetchKey,
  redactUrl,
} from './statements.js';

const log = createLogger('hub:db');

export interface SyncPostgresOptions {
  /** How long connecting may take. */
  connectTimeoutMs?: number;
  /** How long one statement may take, on the server and in the wait here. */
  statementTimeoutMs?: number;
}

/** The worker thread: worker.ts from source, else the bundled side/pg-worker.cjs (in the executable or beside the bundle). */
function startWorker(options: WorkerOptions): Worker {
  const source = new URL('./worker.ts', import.meta.url);
  if (fs.existsSync(fileURLToPath(source))) return new Worker(source, options);
  const bundled = new URL('./side/pg-worker.cjs', import.meta.url);
  let code = packagedAsset('side/pg-worker.cjs')?.toString('utf8');
  try {
    code ??= fs.readFileSync(bundled, 'utf8');
  } catch (err) {
    throw new Error(
      `cannot load the PostgreSQL client ${fileURLToPath(bundled)} (${(err as Error).message}): npm run build writes it beside the bundle; keep the side/ folder next to it`,
      { cause: err },
    );
  }
  return new Worker(code, { ...options, eval: true });
}

/** What the worker answers a statement with (worker.ts). */
interface Answer {
  id?: number;
  rows?: Record<string, unknown>[];
  rowCount?: number;
  error?: string;
  code?: string;
  /** The rows of each read given ahead (`prefetch`), or why it failed. */
  results?: { rows?: Record<string, unknown>[]; error?: string; code?: string }[];
  /** Refused deferred writes, each with its place among the request's `before`. */
  beforeErrors?: { error: string; code?: string; sql: string; index: number }[];
}

/** The replica session's settings (worker.ts; hub/replicas/ uses it). */
export interface ReplicaSessionOptions {
  /** The channel LISTENed to (an SQL identifier). */
  channel: string;
  /** The session advisory lock whose holder leads. */
  leaderKey: number;
  /** How often the session pings (or asks for the lock while it does not hold it). */
  pingMs: number;
  /** How long after a lost connection it connects again. */
  retryMs: number;
  /** The session's application_name (pg_stat_activity shows which replica holds the lock). */
  name: string;
}

/** What the replica session reports: connected, lost, leadership taken or lost, a notification. */
export type ReplicaSessionEvent =
  { up: true } | { down: true; error: string } | { leader: boolean } | { notify: string };

/**
 * At most this many writes wait to go with the next round trip (sql.ts `runLater`): past it the
 * oldest are dropped, logged. Each is an idempotent write of current state, made again by the
 * next change it stands for.
 */
export const MAX_DEFERRED_WRITES = 20_000;

type Deferred = Write;

export class SyncPostgres {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly events: MessagePort;
  private readonly done: Int32Array;
  private readonly waitMs: number;
  private depth = 0;
  private closed = false;
  /** The id of the last statement sent (answers carry it): also how many round trips were made. */
  private seq = 0;
  /** Writes that go with the next round trip, before its statement (runLater). */
  private deferred: Deferred[] = [];
  /** Rows of reads made ahead (`prefetch`), by statement and parameters; forgotten at the next write. */
  private readonly prefetched = new Map<string, Record<string, unknown>[]>();
  /**
   * Per table written since the reads were given, the keys of `prefetched` that name it: found
   * once per table and kept up to date as rows are added (a batch of handshakes reads thousands
   * of rows ahead and writes hundreds of times; a scan of every key at every write was quadratic).
   */
  private readonly prefetchedByTable = new Map<string, { word: RegExp; keys: Set<string> }>();
  /** The open transaction's BEGIN, while it waits among the deferred writes or rides with them. */
  private begin: Deferred | undefined;
  private flushing: NodeJS.Immediate | NodeJS.Timeout | undefined;

  constructor(
    private readonly url: string,
    o: SyncPostgresOptions = {},
  ) {
    const connectTimeoutMs = o.connectTimeoutMs ?? 5_000;
    const statementTimeoutMs = o.statementTimeoutMs ?? 10_000;
    // Connecting and the statement may both take their full time on the first statement.
    this.waitMs = connectTimeoutMs + statementTimeoutMs + 1_000;
    const flag = new SharedArrayBuffer(4);
    this.done = new Int32Array(flag);
    const { port1, port2 } = new MessageChannel();
    const events = new MessageChannel();
    this.port = port1;
    this.events = events.port1;
    this.worker = startWorker({
      workerData: { url, flag, port: port2, events: events.port2, connectTimeoutMs, statementTimeoutMs },
      transferList: [port2, events.port2],
    });
    this.worker.unref();
    this.port.unref();
    this.events.unref();
  }

  /**
   * Starts the replica session (worker.ts): a second connection that LISTENs on `channel`, holds
   * the advisory lock `leaderKey` when it can, and reconnects after a loss. Its events arrive on
   * the event loop, never inside a statement.
   */
  startSession(o: ReplicaSessionOptions, onEvent: (e: ReplicaSessionEvent) => void): void {
    if (!/^[a-z_][a-z0-9_]*$/.test(o.channel)) throw new Error(`bad channel name ${o.channel}`);
    this.events.on('message', onEvent);
    this.events.unref();
    this.events.postMessage({ session: o });
  }

  private call(req: { sql?: string; params?: Param[]; close?: boolean; reads?: Deferred[] }): Answer {
    if (this.closed) throw new DatabaseUnavailable('the database client is closed');
    // Deferred writes go first, in the same message: one round trip for all of them.
    const before = this.deferred;
    if (before.length) this.deferred = [];
    // Writes of one table that may go as one statement do (merge-writes.ts); `from` maps back.
    const sent: MergedWrite[] | undefined = before.length > 1 ? mergeWrites(before) : undefined;
    const id = ++this.seq;
    Atomics.store(this.done, 0, 0);
    const wire = sent ? sent.map((w) => ({ sql: w.sql, params: w.params })) : before;
    this.port.postMessage(before.length ? { ...req, id, before: wire } : { ...req, id });
    // Only an answer carrying this id is this statement's. One to a statement given up on earlier
    // (it came after its deadline) is dropped: read as this one's, it would shift every later
    // statement's answer by one. The flag only says some answer was posted: the worker sets it,
    // then notifies, and a notify for an earlier answer may wake this wait with nothing to read.
    const deadline = Date.now() + this.waitMs;
    let msg: Answer | undefined;
    for (;;) {
      const m = receiveMessageOnPort(this.port)?.message as Answer | undefined;
      if (m) {
        if (m.id === id) {
          msg = m;
          break;
        }
        continue;
      }
      // Set for an answer already read and dropped: cleared, then the port is looked at again
      // before waiting (an answer posted meanwhile is in the port, or sets the flag afterwards).
      if (Atomics.load(this.done, 0) === 1) {
        Atomics.store(this.done, 0, 0);
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) break;
      Atomics.wait(this.done, 0, 0, left);
    }
    if (!msg) {
      this.requeue(before);
      throw new DatabaseUnavailable(
        `the database at ${redactUrl(this.url)} did not answer within ${this.waitMs / 1000}s`,
      );
    }
    if (msg.beforeErrors) {
      // A deferred BEGIN among them: refusals before it were outside the transaction.
      const beginAt = this.begin ? before.indexOf(this.begin) : -1;
      // The database went away before they ran: they all go with the next round trip.
      const lost = msg.beforeErrors.some((e) => connectionLost(e.code));
      if (lost) this.requeue(before);
      const again: number[] = [];
      for (const e of msg.beforeErrors) {
        if (connectionLost(e.code)) continue;
        // The writes the refused statement stood for (several when merged).
        const from = sent?.[e.index]?.from ?? [e.index];
        if (this.depth > 0 && from[0]! >= beginAt)
          // Inside a transaction, which PostgreSQL has aborted: the transaction fails whole.
          throw new DatabaseError(`${e.error} (in a deferred write: ${e.sql.slice(0, 80)})`, e.code);
        // A merged statement refused for one of its rows: each write goes alone with the next
        // round trip (idempotent writes, none of which ran), and only the bad one is refused then.
        if (from.length > 1 && !lost) again.push(...from);
        else log.error({ error: e.error, code: e.code, sql: e.sql.slice(0, 200) }, 'a deferred write was refused');
      }
      // In their first order, once.
      if (again.length) this.requeue(again.sort((a, b) => a - b).map((i) => ({ ...before[i]!, single: true })));
    }
    if (msg.error !== undefined) {
      if (connectionLost(msg.code))
        throw new DatabaseUnavailable(`the database at ${redactUrl(this.url)} is unreachable: ${msg.error}`);
      throw new DatabaseError(msg.error, msg.code);
    }
    return msg;
  }

  /** Every row of one statement (`?` placeholders). */
  all<Row>(sql: string, ...params: Param[]): Row[] {
    const text = numberPlaceholders(sql);
    if (this.prefetched.size) {
      const hit = this.prefetched.get(prefetchKey(text, params));
      // A copy: the caller may change the rows it is given, and a later read is given them again.
      if (hit) return hit.map((r) => ({ ...r })) as Row[];
    }
    // A write with RETURNING: what was read ahead of what it writes may be out of date.
    this.forgetPrefetched(text);
    return asRows<Row>(this.call({ sql: text, params }).rows);
  }

  /**
   * Runs `reads` now, all in one round trip, and answers the same statements (same text, same
   * parameters) from their rows for the rest of this turn of the event loop, until the next write.
   * For a sequence of reads made by different state modules that does not depend on their
   * results: an edge's handshake on a hub replica (hub/state/index.ts `handshakeReads`), a dozen
   * round trips each before. As fresh as the reads themselves would be (PostgreSQL's read
   * committed isolation gives each statement what is committed when it runs, and this turn runs
   * nothing in between but them). Not inside a transaction, where a read may be meant to lock.
   */
  prefetch(reads: Read[]): void {
    if (!reads.length || this.depth > 0) return;
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
    const { results = [] } = this.call({ reads: numbered });
    if (!this.prefetched.size) setImmediate(() => this.forgetAllPrefetched());
    // A read that failed is run again when asked, and fails there with its own error.
    [...singles.keys()].forEach((key, i) => {
      const rows = results[i]?.rows;
      if (rows) this.rememberPrefetched(key, asRows(rows));
    });
    batched.forEach((b, i) => {
      const rows = results[singles.size + i]?.rows;
      if (!rows) return;
      const byKey = new Map<string, Record<string, unknown>[]>();
      for (const row of asRows<Record<string, unknown>>(rows)) {
        const k = String(row[b.column]);
        (byKey.get(k) ?? byKey.set(k, []).get(k)!).push(row);
      }
      for (const [cacheKey, r] of b.members) this.rememberPrefetched(cacheKey, byKey.get(r.many!.key) ?? []);
    });
  }

  /** The first row, or undefined. */
  one<Row>(sql: string, ...params: Param[]): Row | undefined {
    return this.all<Row>(sql, ...params)[0];
  }

  /**
   * Runs a write with the next round trip instead of one of its own (sql.ts `runLater`): inside a
   * transaction before its next statement or its COMMIT; outside, before the next statement or
   * after PG_GATHER_MS, whichever comes first. For idempotent writes of current
   * state whose result nobody reads (a status row, a digest): a refusal is logged (or fails the
   * transaction it was in), and writes the database was away for go with the next round trip.
   */
  defer(sql: string, ...params: Param[]): void {
    this.forgetPrefetched(sql);
    this.deferred.push({ sql: numberPlaceholders(sql), params });
    // Inside a transaction nothing is dropped (its BEGIN and writes go whole or not at all).
    if (this.deferred.length > MAX_DEFERRED_WRITES && this.depth === 0) {
      const dropped = this.deferred.splice(0, this.deferred.length - MAX_DEFERRED_WRITES);
      log.error({ dropped: dropped.length }, 'too many writes waiting for the database: the oldest were dropped');
    }
    this.scheduleFlush(PG_GATHER_MS);
  }

  /**
   * A write is coming: forgets the rows read ahead from the table it writes (all of them when the
   * statement does not say plainly which table that is).
   */
  private forgetPrefetched(sql: string): void {
    // Ending a transaction writes nothing its statements did not write (and forget) already; a
    // SELECT (a read, pg_notify) writes no table.
    if (!this.prefetched.size || /^\s*(?:begin|commit|rollback)\s*$|^\s*select\b/i.test(sql)) return;
    const table = /^\s*(?:insert\s+into|update|delete\s+from)\s+([a-z_][a-z0-9_]*)[\s(]/i.exec(sql)?.[1];
    if (!table) return this.forgetAllPrefetched();
    let t = this.prefetchedByTable.get(table);
    if (!t) {
      const word = new RegExp(`\\b${table}\\b`, 'i');
      t = { word, keys: new Set([...this.prefetched.keys()].filter((k) => word.test(k))) };
      this.prefetchedByTable.set(table, t);
    }
    for (const k of t.keys) this.prefetched.delete(k);
    t.keys.clear();
  }

  private rememberPrefetched(key: string, rows: Record<string, unknown>[]): void {
    this.prefetched.set(key, rows);
    for (const t of this.prefetchedByTable.values()) if (t.word.test(key)) t.keys.add(key);
  }

  private forgetAllPrefetched(): void {
    this.prefetched.clear();
    this.prefetchedByTable.clear();
  }

  /** Sends the deferred writes on their own after `delayMs` (0: at the end of this turn), unless a statement takes them first. */
  private scheduleFlush(delayMs: number): void {
    if (this.flushing || this.closed) return;
    const go = () => {
      this.flushing = undefined;
      // Inside a transaction its next statement or COMMIT carries them.
      if (!this.deferred.length || this.depth > 0 || this.closed) return;
      try {
        this.call({});
      } catch (err) {
        log.warn({ err, waiting: this.deferred.length }, 'deferred writes wait for the database');
        this.scheduleFlush(1_000);
      }
    };
    this.flushing = delayMs ? setTimeout(go, delayMs).unref() : setImmediate(go);
  }

  private requeue(before: Deferred[]): void {
    if (!before.length) return;
    this.deferred = [...before, ...this.deferred].slice(-MAX_DEFERRED_WRITES);
    this.scheduleFlush(1_000);
  }

  /** Runs a write; how many rows it changed. */
  run(sql: string, ...params: Param[]): number {
    this.forgetPrefetched(sql);
    return this.call({ sql: numberPlaceholders(sql), params }).rowCount ?? 0;
  }

  /** Runs SQL without parameters, several statements at once (schema migrations). */
  exec(sql: string): void {
    this.forgetPrefetched(sql);
    this.call({ sql });
  }

  /** Round trips to the database so far (each request with the writes it carries). */
  get roundTrips(): number {
    return this.seq;
  }

  /** Whether a transaction is open (its writes may still be rolled back). */
  get inTransaction(): boolean {
    return this.depth > 0;
  }

  /**
   * Runs `fn` in one transaction, joining an open one; a throw rolls the whole of it back. BEGIN
   * goes with the transaction's first statement (or its COMMIT), after the writes deferred before
   * it: a transaction of reads and deferred writes, such as an edge's connection history, was a
   * round trip more than it needed (docs/benchmarks.md, issue #22).
   */
  transaction<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    const begin: Deferred = { sql: 'BEGIN', params: [] };
    this.deferred.push(begin);
    this.begin = begin;
    this.depth++;
    try {
      const out = fn();
      // COMMIT carries the writes deferred inside: a refusal of one fails the transaction (depth > 0).
      this.run('COMMIT');
      this.depth--;
      this.begin = undefined;
      return out;
    } catch (err) {
      this.depth = 0;
      // Writes deferred inside it go with it; those deferred before it stay.
      const at = this.deferred.indexOf(begin);
      const sent = at < 0;
      this.deferred = sent ? [] : this.deferred.slice(0, at);
      this.begin = undefined;
      if (sent)
        try {
          this.run('ROLLBACK');
        } catch {
          /* the connection is gone: the server rolled back already */
        }
      if (this.deferred.length) this.scheduleFlush(PG_GATHER_MS);
      throw err;
    }
  }

  /** Ends the connection and the worker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.events.postMessage({ stop: true });
    if (this.flushing) {
      clearImmediate(this.flushing as NodeJS.Immediate);
      clearTimeout(this.flushing as NodeJS.Timeout);
    }
    try {
      this.call({ close: true });
    } catch {
      /* going anyway */
    }
    this.closed = true;
    this.events.close();
    await this.worker.terminate();
  }
}
