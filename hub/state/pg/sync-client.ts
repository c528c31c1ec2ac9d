/**
 * @module A synchronous PostgreSQL client for the hub's state layer (issue #22, groundwork): the
 * hub's state modules are synchronous by design (one SQLite transaction per write, called from
 * deep in the scheduler and the edges' lifecycle), so their PostgreSQL implementation calls this.
 * The `pg` client runs in a worker thread (worker.ts); each statement is posted to it and the main
 * thread waits for the answer (worker-channel.ts). The event loop is blocked for one round trip
 * per statement: the cost the benchmarks of #22 measure, which the unit of work (`defer`, the queue
 * of writes nobody reads: hub/state/sql.ts `write`) and reads given ahead (`prefetch`,
 * prefetch-cache.ts) save.
 *
 * Every statement has a deadline: a database that is down or does not answer gives one error,
 * `DatabaseUnavailable`, instead of a hub that hangs. Placeholders are written `?` as for SQLite
 * and numbered here (`$1`...), outside quoted strings.
 */
import { PG_GATHER } from '../../../core/durations.js';
import { GatherPace } from '../../../core/gather.js';
import { createLogger } from '../../../core/logger.js';
import type { Read } from '../read.js';
import { mergeWrites, type MergedWrite, type Write } from './merge-writes.js';
import { PrefetchCache } from './prefetch-cache.js';
import {
  asRows,
  connectionLost,
  DatabaseError,
  DatabaseUnavailable,
  numberPlaceholders,
  type Param,
  redactUrl,
} from './statements.js';
import {
  WorkerChannel,
  type Answer,
  type ReplicaSessionEvent,
  type ReplicaSessionOptions,
  type WorkerRequest,
} from './worker-channel.js';

export type { ReplicaSessionEvent, ReplicaSessionOptions } from './worker-channel.js';

const log = createLogger('hub:db');

export interface SyncPostgresOptions {
  /** How long connecting may take. */
  connectTimeoutMs?: number;
  /** How long one statement may take, on the server and in the wait here. */
  statementTimeoutMs?: number;
}

/**
 * At most this many writes wait outside a transaction to go with the next round trip (sql.ts
 * `write`, while the database is away): past it the oldest are dropped, logged and counted
 * (`lostWrites`). Most are writes of current state, made again by the next change they stand for.
 */
export const MAX_DEFERRED_WRITES = 20_000;

type Deferred = Write;

export class SyncPostgres {
  private readonly worker: WorkerChannel;
  private depth = 0;
  private closed = false;
  /** The unit of work: writes that go with the next round trip, before its statement (sql.ts `write`). */
  private deferred: Deferred[] = [];
  /** Queued writes refused or dropped outside a transaction, so far (`lostWrites`). */
  private lost = 0;
  /** How long deferred writes wait for a round trip to carry them before going on their own. */
  private readonly pace = new GatherPace(PG_GATHER);
  /** Rows of reads made ahead (`prefetch`); forgotten at the next write. */
  private readonly prefetched = new PrefetchCache();
  /** The open transaction's BEGIN, while it waits among the deferred writes or rides with them. */
  private begin: Deferred | undefined;
  private flushing: NodeJS.Immediate | NodeJS.Timeout | undefined;

  constructor(
    private readonly url: string,
    o: SyncPostgresOptions = {},
  ) {
    this.worker = new WorkerChannel(url, {
      connectTimeoutMs: o.connectTimeoutMs ?? 5_000,
      statementTimeoutMs: o.statementTimeoutMs ?? 10_000,
    });
  }

  /**
   * Starts the replica session (worker.ts): a second connection that LISTENs on `channel`, holds
   * the advisory lock `leaderKey` when it can, and reconnects after a loss. Its events arrive on
   * the event loop, never inside a statement.
   */
  startSession(o: ReplicaSessionOptions, onEvent: (e: ReplicaSessionEvent) => void): void {
    this.worker.startSession(o, onEvent);
  }

  private call(req: WorkerRequest): Answer {
    if (this.closed) throw new DatabaseUnavailable('the database client is closed');
    // Deferred writes go first, in the same message: one round trip for all of them.
    const before = this.deferred;
    if (before.length) {
      this.deferred = [];
      this.pace.taken(before.length);
    }
    // Writes of one table that may go as one statement do (merge-writes.ts); `from` maps back.
    const sent: MergedWrite[] | undefined = before.length > 1 ? mergeWrites(before) : undefined;
    const wire = sent ? sent.map((w) => ({ sql: w.sql, params: w.params })) : before;
    const msg = this.worker.request(req, before.length ? wire : undefined);
    if (!msg) {
      this.requeue(before);
      throw new DatabaseUnavailable(
        `the database at ${redactUrl(this.url)} did not answer within ${this.worker.waitMs / 1000}s`,
      );
    }
    if (msg.beforeErrors) {
      // A deferred BEGIN among them: refusals before it were outside the transaction.
      const beginAt = this.begin ? before.indexOf(this.begin) : -1;
      // The database went away before they ran, or before their answer came: they go with the next
      // round trip. Outside a transaction only those: a write whose answer came ran, and is not sent
      // twice (an event is no idempotent write). Inside one all (the server rolled it back, and
      // `transaction` keeps only the writes queued before its BEGIN).
      const lostAt = msg.beforeErrors
        .filter((e) => connectionLost(e.code))
        .flatMap((e) => sent?.[e.index]?.from ?? [e.index]);
      const requeueAll = lostAt.length > 0 && this.depth > 0;
      if (requeueAll) this.requeue(before);
      const again = new Map<number, Deferred>(requeueAll ? [] : lostAt.map((i) => [i, before[i]!]));
      for (const e of msg.beforeErrors) {
        if (connectionLost(e.code)) continue;
        // The writes the refused statement stood for (several when merged).
        const from = sent?.[e.index]?.from ?? [e.index];
        if (this.depth > 0 && from[0]! >= beginAt)
          // Inside a transaction, which PostgreSQL has aborted: the transaction fails whole.
          throw new DatabaseError(`${e.error} (in a deferred write: ${e.sql.slice(0, 80)})`, e.code);
        // A merged statement refused for one of its rows: each write goes alone with the next
        // round trip (none of them ran), and only the bad one is refused then.
        if (from.length > 1) {
          if (!requeueAll) for (const i of from) again.set(i, { ...before[i]!, single: true });
        } else {
          this.lost++;
          log.error({ error: e.error, code: e.code, sql: e.sql.slice(0, 200) }, 'a deferred write was refused');
        }
      }
      // In their first order, once.
      if (again.size) this.requeue([...again.keys()].sort((x, y) => x - y).map((i) => again.get(i)!));
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
    const hit = this.prefetched.rows<Row>(text, params);
    if (hit) return hit;
    // A write with RETURNING: what was read ahead of what it writes may be out of date.
    this.prefetched.forget(text);
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
    this.prefetched.load(reads, (numbered) => this.call({ reads: numbered }).results ?? []);
  }

  /** The first row, or undefined. */
  one<Row>(sql: string, ...params: Param[]): Row | undefined {
    return this.all<Row>(sql, ...params)[0];
  }

  /**
   * Queues a write in the unit of work, to go with the next round trip instead of one of its own
   * (sql.ts `write`): inside a transaction before its next statement or its COMMIT; outside, before
   * the next statement or after PG_GATHER (longer while writes keep coming), whichever comes first.
   * For writes whose result nobody reads: a refusal fails the transaction it was in, or outside one
   * is logged and counted (`lostWrites`); writes the database was away for go with the next round
   * trip.
   */
  defer(sql: string, ...params: Param[]): void {
    this.prefetched.forget(sql);
    this.deferred.push({ sql: numberPlaceholders(sql), params });
    // Inside a transaction nothing is dropped (its BEGIN and writes go whole or not at all).
    if (this.deferred.length > MAX_DEFERRED_WRITES && this.depth === 0) {
      const dropped = this.deferred.splice(0, this.deferred.length - MAX_DEFERRED_WRITES);
      this.lost += dropped.length;
      log.error({ dropped: dropped.length }, 'too many writes waiting for the database: the oldest were dropped');
    }
    this.scheduleFlush(this.pace.nextMs);
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
    const all = [...before, ...this.deferred];
    this.lost += Math.max(0, all.length - MAX_DEFERRED_WRITES);
    this.deferred = all.slice(-MAX_DEFERRED_WRITES);
    this.scheduleFlush(1_000);
  }

  /** Runs a write; how many rows it changed. */
  run(sql: string, ...params: Param[]): number {
    this.prefetched.forget(sql);
    return this.call({ sql: numberPlaceholders(sql), params }).rowCount ?? 0;
  }

  /** Runs SQL without parameters, several statements at once (schema migrations). */
  exec(sql: string): void {
    this.prefetched.forget(sql);
    this.call({ sql });
  }

  /**
   * Queued writes lost outside a transaction so far: refused (logged) or dropped while the
   * database was away. What a cache of writes made (sql.ts `alreadyWritten`) must not outlive.
   */
  get lostWrites(): number {
    return this.lost;
  }

  /** Round trips to the database so far (each request with the writes it carries). */
  get roundTrips(): number {
    return this.worker.sent;
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
      if (this.deferred.length) this.scheduleFlush(this.pace.nextMs);
      throw err;
    }
  }

  /** Ends the connection and the worker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.worker.stopSession();
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
    await this.worker.terminate();
  }
}
