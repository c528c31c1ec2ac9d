/**
 * The worker thread of SyncPostgres (sync-client.ts; started by worker-channel.ts): owns one `pg`
 * connection and runs the statements the main thread posts, one at a time, waking the main thread
 * through the shared flag after each answer. Loaded by Node directly (type stripping): erasable TypeScript only, and no
 * imports but `pg` and Node's own modules.
 *
 * On request (a `session` message on the events port) it also keeps a second connection, the
 * replica session (hub/replicas/): it LISTENs on the replicas' channel and posts every
 * notification to the main thread, holds the scheduler leader's advisory lock when it can get it,
 * and pings the server so a lost connection (and with it the lock) is known within a ping.
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';

interface Init {
  url: string;
  flag: SharedArrayBuffer;
  port: MessagePort;
  /** Asynchronous messages both ways: the replica session's requests and its events. */
  events: MessagePort;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
}

/** What the main thread asks of the replica session (worker-channel.ts ReplicaSessionOptions). */
interface SessionRequest {
  session?: { channel: string; leaderKey: number; pingMs: number; retryMs: number; name: string };
  stop?: boolean;
}

interface Request {
  /** Echoed in the answer: the main thread reads only the answer to the statement it waits for. */
  id?: number;
  sql?: string;
  params?: unknown[];
  close?: boolean;
  /** Reads given ahead (sync-client.ts `prefetch`), all in this round trip, each answered in `results`. */
  reads?: { sql: string; params: unknown[] }[];
  /** Deferred writes (sync-client.ts `defer`), run in order before `sql`. */
  before?: { sql: string; params: unknown[] }[];
}

const { url, flag, port, events, connectTimeoutMs, statementTimeoutMs } = workerData as Init;
// BIGINT (int8: timestamps in milliseconds, COUNT(*)) as a JS number, as better-sqlite3 gives it:
// the hub's integers are all below 2^53.
pg.types.setTypeParser(20, (v: string) => Number(v));
// BYTEA as bytes of their own: the default parser's Buffer is a slice of Node's shared 64 KB pool,
// and posting it to the main thread copied the whole pool with each value (the view is cloned with
// its ArrayBuffer). The main thread makes it a Buffer again (statements.ts asBuffer).
const byteA = pg.types.getTypeParser(17, 'text') as (v: string) => Uint8Array;
pg.types.setTypeParser(17, (v: string) => {
  const b = byteA(v);
  return b.byteLength === b.buffer.byteLength ? b : new Uint8Array(b);
});
const done = new Int32Array(flag);
let client: pg.Client | undefined;

function answerWith(msg: unknown): void {
  port.postMessage(msg);
  Atomics.store(done, 0, 1);
  Atomics.notify(done, 0);
}

async function connected(): Promise<pg.Client> {
  if (client) return client;
  const c = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: connectTimeoutMs,
    statement_timeout: statementTimeoutMs,
    pipeline: true,
  });
  // A connection that breaks or ends (a reset, the server shutting down) is dropped here and made
  // again by the next statement.
  const drop = () => {
    if (client === c) client = undefined;
  };
  c.on('error', drop);
  c.on('end', drop);
  await c.connect();
  client = c;
  return c;
}

/** A refusal or a lost connection, as the main thread reads it. */
function failure(err: unknown, sql?: string): { error: string; code?: string; sql?: string } {
  const e = err as Error & { code?: string };
  return { error: e.message, code: e.code, ...(sql !== undefined ? { sql } : {}) };
}

// Each request's deferred writes and its statement are sent together, pipelined (the client's
// `pipeline` mode: every query with its own Sync, so outside a transaction a refused write stands
// alone, and inside one PostgreSQL refuses the rest as before): one round trip and one write to the
// socket for all of them, instead of one each. The server runs them in the order sent.
port.on('message', (req: Request) => {
  const answer = (msg: object) => answerWith({ ...msg, id: req.id });
  // Closing ends the connection after the last deferred writes, if any, went.
  const close = async (beforeErrors?: object[]) => {
    await client?.end().catch(() => undefined);
    client = undefined;
    answer({ closed: true, beforeErrors });
  };
  void (async () => {
    if (req.close && !req.before?.length) return close();
    let c: pg.Client;
    try {
      c = await connected();
    } catch (err) {
      // Which errors mean the database is gone is decided once, by the main thread
      // (sync-client.ts connectionLost); a broken connection is dropped by its own events.
      // None of the deferred writes ran: each is answered so (the main thread sends again only those).
      const f = failure(err);
      const beforeErrors = req.before?.map((d, index) => ({ ...f, index, sql: d.sql }));
      answer({ ...f, ...(beforeErrors?.length ? { beforeErrors } : {}) });
      return;
    }
    // node-postgres writes each protocol message of a statement to the socket as it goes (five
    // system calls a statement); corked, a request's statements leave in one write.
    const socket = (c as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection
      ?.stream;
    socket?.cork?.();
    // Every refusal among the deferred writes is answered, with its place (`beforeErrors`): the
    // main thread tells those before a deferred BEGIN (logged) from those inside the transaction.
    const before = (req.before ?? []).map((d, index) =>
      c.query({ text: d.sql, values: d.params }).then(
        () => undefined,
        (err: unknown) => ({ ...failure(err, d.sql), index }),
      ),
    );
    const reads = req.reads?.map((r) =>
      c.query({ text: r.sql, values: r.params }).then(
        (res) => ({ rows: res.rows }),
        (err: unknown) => failure(err),
      ),
    );
    // Without parameters: the simple protocol, which takes several statements (migrations).
    const main =
      req.sql === undefined
        ? undefined
        : (req.params ? c.query({ text: req.sql, values: req.params }) : c.query(req.sql)).then(
            (r) => ({ rows: r.rows, rowCount: r.rowCount ?? 0 }),
            (err: unknown) => failure(err),
          );
    socket?.uncork?.();
    const failed = (await Promise.all(before)).filter((f) => f !== undefined);
    const beforeErrors = failed.length ? failed : undefined;
    if (req.close) return close(beforeErrors);
    if (reads) return answer({ results: await Promise.all(reads), beforeErrors });
    answer({ ...((await main) ?? { rowCount: 0 }), beforeErrors });
  })();
});

// The replica session: a connection of its own (a LISTEN and a session advisory lock live as long
// as their connection), made again after a loss. Events posted: {up}, {down, error}, {leader},
// {notify}. `up` after a `down` means notifications may have been missed meanwhile.
let session: pg.Client | undefined;
let sessionTimer: NodeJS.Timeout | undefined;
let stopped = false;

function post(msg: unknown): void {
  events.postMessage(msg);
}

async function runSession(o: NonNullable<SessionRequest['session']>): Promise<void> {
  let leader = false;
  const lost = (c: pg.Client, err: unknown) => {
    if (session !== c) return;
    session = undefined;
    clearTimeout(sessionTimer);
    void c.end().catch(() => undefined);
    if (leader) post({ leader: false });
    leader = false;
    post({ down: true, error: (err as Error | undefined)?.message ?? 'the connection ended' });
    if (!stopped) sessionTimer = setTimeout(() => void connect(), o.retryMs);
  };
  const tick = async (c: pg.Client) => {
    try {
      // Asked again while not the leader; while it is, the ping shows the lock is still held.
      if (!leader) {
        const r = await c.query('SELECT pg_try_advisory_lock($1) AS got', [o.leaderKey]);
        if (r.rows[0]?.got === true) {
          leader = true;
          post({ leader: true });
        }
      } else await c.query('SELECT 1');
      if (session === c && !stopped) sessionTimer = setTimeout(() => void tick(c), o.pingMs);
    } catch (err) {
      lost(c, err);
    }
  };
  const connect = async () => {
    if (stopped) return;
    const c = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: connectTimeoutMs,
      statement_timeout: statementTimeoutMs,
      keepAlive: true,
      // Who holds the leader's lock, in pg_stat_activity (docs/operations.md).
      application_name: o.name,
    });
    session = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c, undefined));
    c.on('notification', (n) => {
      if (n.channel === o.channel) post({ notify: n.payload ?? '' });
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${o.channel}`);
      post({ up: true });
      await tick(c);
    } catch (err) {
      lost(c, err);
    }
  };
  await connect();
}

events.on('message', (req: SessionRequest) => {
  if (req.session && !session) void runSession(req.session);
  if (req.stop) {
    stopped = true;
    clearTimeout(sessionTimer);
    const c = session;
    session = undefined;
    void c?.end().catch(() => undefined);
  }
});
