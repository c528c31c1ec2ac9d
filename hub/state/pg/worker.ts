/**
 * The worker thread of SyncPostgres (sync-client.ts): owns one `pg` connection and runs the
 * statements the main thread posts, one at a time, waking the main thread through the shared flag
 * after each answer. Loaded by Node directly (type stripping): erasable TypeScript only, and no
 * imports but `pg` and Node's own modules.
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';

interface Init {
  url: string;
  flag: SharedArrayBuffer;
  port: MessagePort;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
}

interface Request {
  sql?: string;
  params?: unknown[];
  close?: boolean;
}

const { url, flag, port, connectTimeoutMs, statementTimeoutMs } = workerData as Init;
// BIGINT (int8: timestamps in milliseconds, COUNT(*)) as a JS number, as better-sqlite3 gives it:
// the hub's integers are all below 2^53.
pg.types.setTypeParser(20, (v: string) => Number(v));
const done = new Int32Array(flag);
let client: pg.Client | undefined;

function answer(msg: unknown): void {
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

port.on('message', (req: Request) => {
  void (async () => {
    if (req.close) {
      await client?.end().catch(() => undefined);
      client = undefined;
      answer({ closed: true });
      return;
    }
    try {
      const c = await connected();
      // Without parameters: the simple protocol, which takes several statements (migrations).
      const r = req.params ? await c.query({ text: req.sql!, values: req.params }) : await c.query(req.sql!);
      answer({ rows: r.rows, rowCount: r.rowCount ?? 0 });
    } catch (err) {
      // Which errors mean the database is gone is decided once, by the main thread
      // (sync-client.ts connectionLost); a broken connection is dropped by its own events above.
      const e = err as Error & { code?: string };
      answer({ error: e.message, code: e.code });
    }
  })();
});
