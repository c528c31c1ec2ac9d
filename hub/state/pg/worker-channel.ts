/**
 * @module The main thread's end of SyncPostgres's worker thread (worker.ts, which runs the `pg`
 * client): starts it, posts a request and waits on a shared flag (Atomics.wait) for the answer,
 * read with receiveMessageOnPort, up to a deadline; and carries the replica session's requests and
 * events on a second port. sync-client.ts decides what is sent and what an answer means.
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
import { packagedAsset } from '../../../sync/native.js';
import type { Write } from './merge-writes.js';
import type { Param } from './statements.js';

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

/** What the main thread asks the worker (worker.ts): a statement, reads given ahead, or to close. */
export interface WorkerRequest {
  sql?: string;
  params?: Param[];
  close?: boolean;
  reads?: Write[];
}

/** What the worker answers a statement with (worker.ts). */
export interface Answer {
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

export class WorkerChannel {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly events: MessagePort;
  private readonly done: Int32Array;
  /** How long a request waits for its answer. */
  readonly waitMs: number;
  /** The id of the last request sent (answers carry it): also how many round trips were made. */
  private seq = 0;

  constructor(url: string, o: { connectTimeoutMs: number; statementTimeoutMs: number }) {
    const { connectTimeoutMs, statementTimeoutMs } = o;
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

  /** Requests sent so far. */
  get sent(): number {
    return this.seq;
  }

  /**
   * Posts `req` (with the deferred writes `before` it, when given) and waits for its answer;
   * undefined when none came within `waitMs`.
   */
  request(req: WorkerRequest, before?: Write[]): Answer | undefined {
    const id = ++this.seq;
    Atomics.store(this.done, 0, 0);
    this.port.postMessage(before ? { ...req, id, before } : { ...req, id });
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
    return msg;
  }

  /** Starts the replica session (SyncPostgres `startSession`); its events go to `onEvent`. */
  startSession(o: ReplicaSessionOptions, onEvent: (e: ReplicaSessionEvent) => void): void {
    if (!/^[a-z_][a-z0-9_]*$/.test(o.channel)) throw new Error(`bad channel name ${o.channel}`);
    this.events.on('message', onEvent);
    this.events.unref();
    this.events.postMessage({ session: o });
  }

  /** Ends the replica session (the worker's second connection), if one runs. */
  stopSession(): void {
    this.events.postMessage({ stop: true });
  }

  /** Ends the worker (after its connection was closed with a `close` request). */
  async terminate(): Promise<void> {
    this.events.close();
    await this.worker.terminate();
  }
}
