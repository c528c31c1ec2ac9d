/**
 * @module The edge's local operator API, on a unix socket in the data directory (DATA/agent.sock,
 * mode 0600): status, local intents, logs and metrics. It answers from the local replica and the
 * runtime, so it works with the hub unreachable. The edge never listens on a network port.
 *
 * Plain `node:http`, not a web framework: four routes do not need one, and a fetch-style framework
 * brings in the WHATWG Request/Response classes (Node's bundled undici, several MB of an agent's
 * heap; docs/benchmarks.md, footprint).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { Registry } from 'prom-client';
import { diskFullError, isDiskFull, OutpostError } from '../core/errors.js';
import { mailboxDocId, type EdgeName } from '../core/ids.js';
import {
  addIntent,
  INTENT_ACTIONS,
  localState,
  readReport,
  readSpec,
  type IntentAction,
  type ReportDoc,
  type SpecDoc,
} from '../core/mailbox.js';
import type { ReplicaStore } from '../sync/store.js';
import type { Driver } from './drivers/driver.js';
import type { Reconciler } from './reconciler.js';
import { blobRoute } from './blobs/local-routes.js';
import type { EdgeTransfers } from './blobs/transfers.js';
import type { EgressState } from './data/egress.js';

export interface LocalApiDeps {
  edge: EdgeName;
  /** The hub URL the agent dials now. */
  hub: () => string;
  store: ReplicaStore;
  driver: Driver;
  reconciler: Reconciler;
  connection(): string;
  /** Why the last attempt to reach the hub failed, until one succeeds (TLS reason, refusal). */
  lastError?(): { message: string; at: string } | undefined;
  /** Set once the hub decommissioned this edge (edge/decommission.ts). */
  decommissioned?(): { at: string; message: string } | undefined;
  registry: Registry;
  transfers?: EdgeTransfers;
  /** The export directories' upload state per workload (edge/data/egress.ts). */
  egress?: { states(): EgressState[] };
  /** The agent's release switch: the state (edge/upgrade/switch.ts) and `POST /upgrade`. */
  upgrade?: {
    state(): unknown;
    request(body: unknown): Promise<{ status: number; body: unknown }>;
  };
}

/** The largest request body the API reads (an intent with its overrides); larger ones get 413. */
export const LOCAL_BODY_LIMIT = 64 * 1024;

const ROUTES =
  'GET /status, POST /intents, GET /logs?workload=NAME, GET /metrics, GET /blobs, POST /blobs/push, POST /blobs/pull, DELETE /blobs/DIGEST, POST /upgrade';

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': data.length });
  res.end(data);
}

const sendError = (res: http.ServerResponse, status: number, message: string): void =>
  sendJson(res, status, { error: { message } });

/** The request body as JSON; null when it is not JSON. Throws 413 past LOCAL_BODY_LIMIT. */
async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > LOCAL_BODY_LIMIT)
      throw new HttpError(413, `request body larger than ${LOCAL_BODY_LIMIT} bytes; send fewer --set values`);
    chunks.push(c);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return null;
  }
}

export function localApp(d: LocalApiDeps): http.RequestListener {
  const spec = () => readSpec(d.store.get<SpecDoc>(mailboxDocId(d.edge, 'spec'))!);
  const report = () => readReport(d.store.get<ReportDoc>(mailboxDocId(d.edge, 'report'))!);

  function status(res: http.ServerResponse): void {
    const s = spec();
    const r = report();
    const local = localState(r, s);
    sendJson(res, 200, {
      edge: d.edge,
      hub: d.hub(),
      connection: d.connection(),
      ...(d.lastError?.() ? { lastError: d.lastError() } : {}),
      ...(d.decommissioned?.() ? { decommissioned: d.decommissioned() } : {}),
      driver: d.driver.name,
      ...(d.upgrade?.state() ? { upgrade: d.upgrade.state() } : {}),
      workloads: Object.values(s.workloads).map((w) => ({
        name: w.name,
        generation: w.generation,
        ...(w.error ? { error: w.error } : {}),
        status: r.workloads[w.name] ?? null,
        local: local[w.name] ?? null,
      })),
      // DataObjects the hub delivers here (edge/data/delivery.ts), as reported.
      data: r.data ?? {},
      // Files of the export directories on their way to the hub, per workload: what waits here
      // while the hub is out of reach.
      exports: d.egress?.states() ?? [],
    });
  }

  async function intents(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const b = (await readJson(req)) as {
      workload?: string;
      action?: string;
      set?: Record<string, unknown>;
      origin?: string;
    } | null;
    if (typeof b !== 'object' || !b?.workload || !b.action)
      return sendError(res, 400, 'body must be {"workload", "action"}');
    if (!(INTENT_ACTIONS as readonly string[]).includes(b.action))
      return sendError(res, 400, `action must be one of ${INTENT_ACTIONS.join(', ')}`);
    if (!spec().workloads[b.workload])
      return sendError(res, 404, `workload ${b.workload} is not placed on this edge (see outpost edge local status)`);
    if (b.action === 'override' && (!b.set || Object.keys(b.set).length === 0))
      return sendError(res, 400, 'override needs --set PATH=VALUE');
    let seq = 0;
    d.store.change<ReportDoc>(mailboxDocId(d.edge, 'report'), (doc) => {
      seq = addIntent(doc, {
        workload: b.workload!,
        action: b.action as IntentAction,
        ...(b.set ? { set: b.set } : {}),
        at: Date.now(),
        origin: b.origin ?? 'local',
      });
    });
    await d.reconciler.trigger();
    sendJson(res, 200, { seq, workload: b.workload, action: b.action });
  }

  async function logs(q: URLSearchParams, res: http.ServerResponse): Promise<void> {
    const workload = q.get('workload');
    if (!workload) return sendError(res, 400, 'workload is required');
    const tail = q.get('tail') ? Number(q.get('tail')) : undefined;
    const follow = q.get('follow') === '1';
    const container = q.get('container');
    const ac = new AbortController();
    // The client going away (Ctrl-C on `logs -f`) ends the driver's stream.
    res.on('close', () => ac.abort());
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    const write = (s: string): Promise<void> =>
      res.write(s) || ac.signal.aborted
        ? Promise.resolve()
        : new Promise((resolve) => {
            const done = () => {
              res.off('drain', done);
              res.off('close', done);
              resolve();
            };
            res.once('drain', done);
            res.once('close', done);
          });
    try {
      for await (const line of d.driver.logs(workload, {
        tail,
        follow,
        signal: ac.signal,
        ...(container ? { container } : {}),
      })) {
        if (ac.signal.aborted) break;
        await write(line.endsWith('\n') ? line : `${line}\n`);
      }
    } catch (e) {
      if (!ac.signal.aborted) await write(`error: ${(e as Error).message}\n`);
    }
    res.end();
  }

  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://agent.sock');
    const route = `${req.method} ${url.pathname}`;
    const handle = async (): Promise<void> => {
      switch (route) {
        case 'GET /status':
          return status(res);
        case 'POST /intents':
          return intents(req, res);
        case 'GET /logs':
          return logs(url.searchParams, res);
        case 'POST /upgrade': {
          if (!d.upgrade) return sendError(res, 404, 'this agent cannot switch releases');
          const r = await d.upgrade.request(await readJson(req));
          return sendJson(res, r.status, r.body);
        }
        case 'GET /metrics': {
          const body = Buffer.from(await d.registry.metrics());
          res.writeHead(200, { 'content-type': d.registry.contentType, 'content-length': body.length });
          res.end(body);
          return;
        }
        default: {
          if (d.transfers && (url.pathname === '/blobs' || url.pathname.startsWith('/blobs/'))) {
            const body = req.method === 'POST' ? await readJson(req) : null;
            const r = await blobRoute(d.transfers, req.method ?? 'GET', url.pathname.slice('/blobs'.length), body);
            if (r) return sendJson(res, r.status, r.body);
          }
          return sendError(res, 404, `no route ${route}; the local API has ${ROUTES}`);
        }
      }
    };
    handle().catch((err: unknown) => {
      if (isDiskFull(err)) err = diskFullError(d.store.db.name, err);
      const status = err instanceof HttpError || err instanceof OutpostError ? err.status : 500;
      const message = err instanceof Error ? err.message : String(err);
      if (!res.headersSent) sendError(res, status, message);
      else res.destroy(err instanceof Error ? err : undefined);
    });
  };
}

export async function listenLocal(app: http.RequestListener, socketPath: string): Promise<http.Server> {
  // A stale socket from a killed agent would make listen fail with EADDRINUSE.
  try {
    fs.unlinkSync(socketPath);
  } catch {
    /* absent */
  }
  const server = http.createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  fs.chmodSync(socketPath, 0o600);
  return server;
}
