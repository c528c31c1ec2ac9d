/**
 * @module The edge's local operator API, on a unix socket in the data directory (DATA/agent.sock,
 * mode 0600): status, local intents, logs and metrics. It answers from the local replica and the
 * runtime, so it works with the hub unreachable. The edge never listens on a network port.
 */
import fs from 'node:fs';
import http from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { stream } from 'hono/streaming';
import type { Registry } from 'prom-client';
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
import { blobRoutes } from './blobs/local-routes.js';
import type { EdgeTransfers } from './blobs/transfers.js';

export interface LocalApiDeps {
  edge: EdgeName;
  hub: string;
  store: ReplicaStore;
  driver: Driver;
  reconciler: Reconciler;
  connection(): string;
  registry: Registry;
  transfers?: EdgeTransfers;
}

const err = (message: string) => ({ error: { message } });

export function localApp(d: LocalApiDeps): Hono {
  const app = new Hono();
  const spec = () => readSpec(d.store.get<SpecDoc>(mailboxDocId(d.edge, 'spec'))!);
  const report = () => readReport(d.store.get<ReportDoc>(mailboxDocId(d.edge, 'report'))!);

  app.get('/status', (c) => {
    const s = spec();
    const r = report();
    const local = localState(r, s);
    return c.json({
      edge: d.edge,
      hub: d.hub,
      connection: d.connection(),
      driver: d.driver.name,
      workloads: Object.values(s.workloads).map((w) => ({
        name: w.name,
        generation: w.generation,
        ...(w.error ? { error: w.error } : {}),
        status: r.workloads[w.name] ?? null,
        local: local[w.name] ?? null,
      })),
    });
  });

  app.post('/intents', async (c) => {
    const b = (await c.req.json().catch(() => null)) as {
      workload?: string;
      action?: string;
      set?: Record<string, unknown>;
      origin?: string;
    } | null;
    if (!b?.workload || !b.action) return c.json(err('body must be {"workload", "action"}'), 400);
    if (!(INTENT_ACTIONS as readonly string[]).includes(b.action))
      return c.json(err(`action must be one of ${INTENT_ACTIONS.join(', ')}`), 400);
    if (!spec().workloads[b.workload])
      return c.json(err(`workload ${b.workload} is not placed on this edge (see outpost edge local status)`), 404);
    if (b.action === 'override' && (!b.set || Object.keys(b.set).length === 0))
      return c.json(err('override needs --set PATH=VALUE'), 400);
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
    return c.json({ seq, workload: b.workload, action: b.action });
  });

  app.get('/logs', (c) => {
    const workload = c.req.query('workload');
    if (!workload) return c.json(err('workload is required'), 400);
    const tail = c.req.query('tail') ? Number(c.req.query('tail')) : undefined;
    const follow = c.req.query('follow') === '1';
    const container = c.req.query('container');
    const ac = new AbortController();
    return stream(c, async (s) => {
      s.onAbort(() => ac.abort());
      try {
        for await (const line of d.driver.logs(workload, {
          tail,
          follow,
          signal: ac.signal,
          ...(container ? { container } : {}),
        })) {
          await s.write(line.endsWith('\n') ? line : `${line}\n`);
        }
      } catch (e) {
        if (!ac.signal.aborted) await s.write(`error: ${(e as Error).message}\n`);
      }
    });
  });

  if (d.transfers) app.route('/blobs', blobRoutes(d.transfers));

  app.get('/metrics', async (c) => c.body(await d.registry.metrics(), 200, { 'content-type': d.registry.contentType }));
  return app;
}

export async function listenLocal(app: Hono, socketPath: string): Promise<http.Server> {
  // A stale socket from a killed agent would make listen fail with EADDRINUSE.
  try {
    fs.unlinkSync(socketPath);
  } catch {
    /* absent */
  }
  const server = http.createServer(getRequestListener(app.fetch));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  fs.chmodSync(socketPath, 0o600);
  return server;
}
