/**
 * @module A worker process of the edge simulator: many simulated edges in one process, driven by the
 * harness over the fork IPC channel (request `{rid, op, ...}`, answer `{rid, result|error}`).
 *
 * A simulated edge is real everywhere but the runtime: it enrolls through the hub's API with a
 * join token, keeps its mailbox in a real ReplicaStore (one SQLite database per worker, in memory or a file, shared by the
 * worker's edges: documents are keyed by edge name), speaks the real protocol through SyncClient,
 * and instead of running workloads it reports every workload of a new spec Ready (putReportWorkload,
 * one change per edge, like the reconciler) `BENCH_READY_DELAY_MS` after the spec arrived.
 *
 *   env BENCH_WORKER_INDEX=n BENCH_WORKER_DIR=dir BENCH_READY_DELAY_MS=ms BENCH_STORE_BUDGET=bytes BENCH_WORKER_STORE=memory|file
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import type { BlobDigest } from '../core/blobs.js';
import { edgeName, mailboxDocId, parseMailboxDocId, type EdgeName } from '../core/ids.js';
import {
  addIntent,
  deleteReportWorkload,
  putReportWorkload,
  readReport,
  readSpec,
  readSpecData,
  setInventory,
  setReportData,
  type ReportDoc,
  type SpecDoc,
} from '../core/mailbox.js';
import { BlobFiles } from '../sync/blob-files.js';
import { SyncClient } from '../sync/client.js';
import { nextMeta, uploadBlob } from '../sync/transfer.js';
import { readSpecStaging, setReportStaging, stagingImageSize } from '../core/staging.js';
import { TunnelMux } from '../sync/tunnel.js';
import { sleep } from './lib/sys.js';
import { ensureMailbox } from '../sync/mailbox.js';
import { ReplicaStore } from '../sync/store.js';

interface SimEdge {
  name: EdgeName;
  credential?: string;
  client?: SyncClient;
  autoReady: boolean;
  readyTimer?: NodeJS.Timeout;
  /** When the last remote spec change was committed here, and when the Ready report for it was. */
  specAt?: number;
  readyAt?: number;
  /** Sync tracking since the last `mark`. */
  baseConnects: number;
  syncedAt?: number;
  syncBytes?: { session: number; socket?: number };
}

const index = Number(process.env.BENCH_WORKER_INDEX ?? 0);
const dir = process.env.BENCH_WORKER_DIR!;
const readyDelayMs = Number(process.env.BENCH_READY_DELAY_MS ?? 100);
const edges = new Map<string, SimEdge>();
let hubUrls: string[] = [];
let requireNewConnection = false;
let tracking = false;

// In-memory SQLite by default (the issue allows it): the simulator's disk writes only compete with
// the hub for this machine's two cores. `--sim-store file` keeps one file per worker instead.
const store = await ReplicaStore.open(
  process.env.BENCH_WORKER_STORE === 'memory' ? ':memory:' : path.join(dir, `worker-${index}.db`),
  {
    memoryBudgetBytes: Number(process.env.BENCH_STORE_BUDGET ?? 256 * 1024 * 1024),
    afterChange: (id, origin) => {
      const p = parseMailboxDocId(id);
      const e = p && edges.get(p.edge);
      if (!p || !e) return;
      // As the real agent does: every committed change is offered to the hub.
      e.client?.notify(id);
      if (origin === 'remote' && p.role === 'spec') {
        e.specAt = Date.now();
        if (e.autoReady && !e.readyTimer) e.readyTimer = setTimeout(() => reportReady(e), readyDelayMs);
      }
    },
  },
);

const INVENTORY = {
  hostname: 'sim',
  os: 'linux',
  arch: 'x64',
  cpus: 2,
  memoryBytes: 2 ** 31,
  runtimes: ['process'],
  driver: 'process',
  agentVersion: '0.1.0',
};

/** What the reconciler writes once every workload of the spec runs: all of them Ready, one change. */
function reportReady(e: SimEdge): void {
  e.readyTimer = undefined;
  const spec = store.get<SpecDoc>(mailboxDocId(e.name, 'spec'));
  if (!spec) return;
  const s = readSpec(spec);
  const changed = store.change<ReportDoc>(mailboxDocId(e.name, 'report'), (d, was) => {
    for (const name of Object.keys(was.workloads)) if (!s.workloads[name]) deleteReportWorkload(d, name, was);
    for (const w of Object.values(s.workloads)) {
      if (w.error) deleteReportWorkload(d, w.name, was);
      else
        putReportWorkload(
          d,
          w.name,
          {
            observedGeneration: w.generation,
            phase: 'Ready',
            restarts: 0,
            objects: { [`Pod/${w.name}`]: { ready: true } },
          },
          Date.now(),
          was.workloads[w.name],
        );
    }
  });
  if (changed) e.readyAt = Date.now();
}

/** Status writes of a crash-looping workload: phase flips, a message, restarts climb. */
function statusChange(e: SimEdge, round: number): boolean {
  const spec = store.get<SpecDoc>(mailboxDocId(e.name, 'spec'));
  const workloads = spec ? Object.values(readSpec(spec).workloads) : [];
  const w = workloads.length ? workloads[round % workloads.length] : { name: 'local', generation: 0 };
  const ready = round % 2 === 1;
  return store.change<ReportDoc>(mailboxDocId(e.name, 'report'), (d, was) => {
    const cur = was.workloads[w.name];
    const restarts = (cur?.restarts ? Number(cur.restarts.value) : 0) + (ready ? 0 : 1);
    putReportWorkload(
      d,
      w.name,
      {
        observedGeneration: w.generation,
        phase: ready ? 'Ready' : 'Degraded',
        restarts,
        objects: { [`Pod/${w.name}`]: { ready, ...(ready ? {} : { message: `back-off restarting (${restarts})` }) } },
        ...(ready ? {} : { message: 'container exited with code 1' }),
      },
      Date.now(),
      cur,
    );
  });
}

/**
 * TCP payload bytes of the edge's live connection (upgrade, control and sync frames, pings).
 * SyncClient keeps its socket private; this reads the ws object's socket for measurement only.
 */
function socketBytes(c: SyncClient | undefined): number | undefined {
  const s = (c as unknown as { ws?: { _socket?: Socket } } | undefined)?.ws?._socket;
  return s ? s.bytesRead + s.bytesWritten : undefined;
}

function sessionBytes(c: SyncClient | undefined): number {
  const s = c?.session?.stats;
  return s ? s.bytesIn + s.bytesOut : 0;
}

function inSync(e: SimEdge): boolean {
  const c = e.client;
  if (!c || c.state !== 'connected' || !c.session) return false;
  if (requireNewConnection && c.totals.connects <= e.baseConnects) return false;
  return c.session.inSync();
}

/** Records the first moment each edge is in sync since the last mark (50 ms resolution). */
function trackSync(): void {
  if (!tracking) return;
  let pending = 0;
  for (const e of edges.values()) {
    if (e.syncedAt !== undefined) continue;
    if (inSync(e)) {
      e.syncedAt = Date.now();
      e.syncBytes = { session: sessionBytes(e.client), socket: socketBytes(e.client) };
    } else pending++;
  }
  if (pending === 0) tracking = false;
  else setTimeout(trackSync, 50);
}

async function enroll(
  names: string[],
  joinToken: string,
  concurrency: number,
): Promise<{ enrolled: number; failed: { name: string; error: string }[] }> {
  const failed: { name: string; error: string }[] = [];
  let next = 0;
  const post = (name: string) =>
    fetch(`${urlsOf(name)[0]}/api/v1/enroll`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ joinToken, name, inventory: INVENTORY }),
    });
  const one = async (name: string) => {
    // On a saturated machine a connection can fail before any answer (undici: "fetch failed", its
    // connect timeout): tried again twice. An answer of any status is never retried.
    let res: Response | undefined;
    for (let attempt = 0; !res; attempt++) {
      try {
        res = await post(name);
      } catch (err) {
        if (attempt >= 2 || (err as Error).message !== 'fetch failed') throw err;
        await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
      }
    }
    const body = (await res.json()) as { credential?: string; error?: { message: string } };
    if (res.status !== 201 || !body.credential)
      throw new Error(`HTTP ${res.status}: ${body.error?.message ?? JSON.stringify(body)}`);
    const e: SimEdge = { name: edgeName(name), credential: body.credential, autoReady: true, baseConnects: 0 };
    edges.set(name, e);
    // As the agent does at start: the mailbox exists locally with the inventory in the report.
    ensureMailbox(store, e.name, 'edge');
    store.change<ReportDoc>(mailboxDocId(e.name, 'report'), (d) => void setInventory(d, INVENTORY));
  };
  await Promise.all(
    Array.from({ length: Math.min(concurrency, names.length) }, async () => {
      while (next < names.length) {
        const name = names[next++];
        try {
          await one(name);
        } catch (err) {
          failed.push({ name, error: (err as Error).message });
        }
      }
    }),
  );
  return { enrolled: names.length - failed.length, failed: failed.slice(0, 20) };
}

/**
 * The hub URLs of an edge, its own first: with several hub replicas edge number k (e-0000k) is
 * served by replica (k-1) mod R and lists the others after it, as an operator spreads real agents
 * (`outpost edge --hub A,B,C`); SyncClient tries the next URL when one fails. One hub: its URL.
 */
function urlsOf(name: string): string[] {
  const k = Number(name.slice(name.lastIndexOf('-') + 1)) || 1;
  const r = hubUrls.length;
  const own = (k - 1) % r;
  const others = hubUrls.filter((_, i) => i !== own);
  // The others in turns (edges of one replica alternate which one they try next), so the edges of
  // a replica that fails spread over the rest instead of all landing on its neighbour.
  const turn = Math.floor((k - 1) / r) % Math.max(1, others.length);
  return [hubUrls[own]!, ...others.slice(turn), ...others.slice(0, turn)];
}

/** Starts the clients of `names`, at most `window` of them mid-handshake at once (a connect ramp). */
async function connect(names: string[], window: number): Promise<void> {
  let inflight = 0;
  let wake: (() => void) | undefined;
  for (const name of names) {
    const e = edges.get(name);
    if (!e?.credential) throw new Error(`edge ${name} is not enrolled in worker ${index}`);
    while (inflight >= window) await new Promise<void>((r) => (wake = r));
    if (!e.client) {
      e.client = new SyncClient({
        url: urlsOf(name).map((u) => `${u.replace(/^http/, 'ws')}/api/v1/sync`),
        token: e.credential,
        edge: e.name,
        store,
        agentVersion: '0.1.0-bench',
        // BENCH_HOME_REDIAL_MS: the agent's `--home-redial` (the smoke test's fail-over, sooner).
        ...(process.env.BENCH_HOME_REDIAL_MS ? { homeRedialMs: Number(process.env.BENCH_HOME_REDIAL_MS) } : {}),
      });
      e.client.setMaxListeners(0);
    }
    const c = e.client;
    inflight++;
    const settle = (s: string) => {
      if (s === 'connecting') return;
      c.off('state', settle);
      inflight--;
      wake?.();
    };
    c.on('state', settle);
    c.start();
  }
}

/**
 * A blob download as the agent makes it (a `blob-get` stream the edge opens on its connection,
 * sync/transfer.ts), except that a simulated edge hashes the bytes and keeps none: a hundred
 * copies of a large blob would fill the disk of the machine running the simulator.
 */
const muxes = new WeakMap<SyncClient, TunnelMux>();
function muxOf(c: SyncClient): TunnelMux {
  let m = muxes.get(c);
  if (!m) {
    const mux = new TunnelMux({
      side: 'edge',
      send: (p, written) => c.sendTunnel(p, written),
      bufferedAmount: () => c.bufferedAmount(),
    });
    c.on('tunnel', (p) => mux.receive(p));
    muxes.set(c, (m = mux));
  }
  return m;
}

async function fetchBlob(
  e: SimEdge,
  digest: string,
): Promise<{ ms: number; bytes: number; socketBytes: number; ok: boolean }> {
  const c = e.client;
  if (!c || c.state !== 'connected') throw new Error(`edge ${e.name} is not connected`);
  const before = socketBytes(c) ?? 0;
  const t0 = Date.now();
  const s = muxOf(c).open({ type: 'blob-get', digest, offset: 0 });
  s.end();
  const h = createHash('sha256');
  let bytes = 0;
  for await (const chunk of s as AsyncIterable<Buffer>) {
    h.update(chunk);
    bytes += chunk.length;
  }
  return {
    ms: Date.now() - t0,
    bytes,
    socketBytes: (socketBytes(c) ?? 0) - before,
    ok: `sha256:${h.digest('hex')}` === digest,
  };
}

/**
 * One consumer connection through the interconnect, as the agent's import listener makes it
 * (edge/interconnect/listeners.ts) minus the local socket: an `interconnect` stream for import
 * `name`, `bytes` written to the export's echo, read back. The consumer first reads nothing for
 * `stallMs` (a slow consumer: the echo backs up into the windows on the way, the hub's included),
 * then reads every byte.
 */
async function interconnectEcho(
  e: SimEdge,
  name: string,
  bytes: number,
  stallMs: number,
): Promise<{ ms: number; bytes: number; ok: boolean; error?: string }> {
  const c = e.client;
  if (!c || c.state !== 'connected') throw new Error(`edge ${e.name} is not connected`);
  const t0 = Date.now();
  const s = muxOf(c).open({ type: 'interconnect', import: name });
  // A reset while the consumer stalls is read below (the iteration throws it); not a crash.
  s.on('error', () => undefined);
  const chunk = Buffer.alloc(64 * 1024, 0x6b);
  let sent = 0;
  const pump = (): void => {
    while (sent < bytes && !s.destroyed) {
      sent += chunk.length;
      if (!s.write(chunk)) return void s.once('drain', pump);
    }
    s.end();
  };
  pump();
  let got = 0;
  try {
    await sleep(stallMs);
    for await (const b of s as AsyncIterable<Buffer>) got += b.length;
    return { ms: Date.now() - t0, bytes: got, ok: got === bytes };
  } catch (err) {
    return { ms: Date.now() - t0, bytes: got, ok: false, error: (err as Error).message };
  }
}

/**
 * As the agent's delivery does (edge/data/delivery.ts), minus the disk: waits for the DataObject
 * order in the edge's spec, brings the blob (digest checked, bytes not kept) and reports it Delivered.
 */
async function deliverData(
  e: SimEdge,
  name: string,
  timeoutMs: number,
): Promise<{ ms: number; bytes: number; socketBytes: number; ok: boolean }> {
  const t0 = Date.now();
  const specId = mailboxDocId(e.name, 'spec');
  for (;;) {
    const doc = store.get<SpecDoc>(specId);
    const order = doc ? readSpecData(doc)[name] : undefined;
    if (order) {
      const r = await fetchBlob(e, order.digest);
      if (r.ok)
        store.change<ReportDoc>(mailboxDocId(e.name, 'report'), (d) => {
          setReportData(d, name, {
            version: order.version,
            digest: order.digest,
            path: order.path,
            state: 'Delivered',
            at: Date.now(),
          });
        });
      return { ...r, ms: Date.now() - t0 };
    }
    if (Date.now() - t0 > timeoutMs) throw new Error(`edge ${e.name}: no order for ${name} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * As the agent's image staging does (edge/images/staging.ts), minus the disk and podman: waits for
 * a staging order in the edge's spec, brings every blob of every image in it (digest checked, bytes
 * not kept) and reports the images Present. The workload's switch then follows (autoReady).
 */
async function stageImages(
  e: SimEdge,
  timeoutMs: number,
): Promise<{ ms: number; bytes: number; socketBytes: number; ok: boolean }> {
  const t0 = Date.now();
  const specId = mailboxDocId(e.name, 'spec');
  for (;;) {
    const doc = store.get<SpecDoc>(specId);
    const order = doc ? readSpecStaging(doc) : undefined;
    if (order?.groups.length) {
      const images = [...new Map(order.groups.flatMap((g) => g.images).map((i) => [i.image, i])).values()];
      const blobs = new Map(images.flatMap((i) => [i.manifest, ...i.blobs]).map((b) => [b.digest, b.size]));
      let bytes = 0;
      let wire = 0;
      let ok = true;
      for (const [digest, size] of blobs) {
        const r = await fetchBlob(e, digest);
        bytes += r.bytes;
        wire += r.socketBytes;
        ok &&= r.ok && r.bytes === size;
      }
      store.change<ReportDoc>(mailboxDocId(e.name, 'report'), (d) => {
        setReportStaging(d, {
          images: images.map((i) => ({
            image: i.image,
            state: ok ? ('Present' as const) : ('Failed' as const),
            size: stagingImageSize(i),
            done: ok ? stagingImageSize(i) : 0,
          })),
          at: Date.now(),
        });
      });
      return { ms: Date.now() - t0, bytes, socketBytes: wire, ok };
    }
    if (Date.now() - t0 > timeoutMs) throw new Error(`edge ${e.name}: no staging order within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let uploadFiles: BlobFiles | undefined;
/** Per edge, the files `prepareUpload` made for `uploadData` to send. */
const prepared = new Map<string, { digest: BlobDigest; size: number }[]>();

/** Files distinct per edge, made from a seed into the worker's blob files, before the clock starts. */
async function prepareUpload(e: SimEdge, files: number, size: number): Promise<void> {
  uploadFiles ??= new BlobFiles(path.join(dir, 'upload-blobs'));
  const made: { digest: BlobDigest; size: number }[] = [];
  for (let i = 0; i < files; i++) {
    const b = Buffer.alloc(size);
    const seed = createHash('sha256').update(`${e.name}/${i}`).digest();
    for (let o = 0; o < size; o += seed.length) seed.copy(b, o);
    made.push(await uploadFiles.ingest(Readable.from([b]), { maxBytes: size }));
  }
  prepared.set(e.name, made);
}

/**
 * As the agent's egress does (edge/data/egress.ts) once a file is in its outbox: sends the blob
 * (`blob-put`, resumable, skipped when the hub holds it) and records it (`data-file`).
 */
async function uploadData(e: SimEdge): Promise<{ ms: number; bytes: number; socketBytes: number; ok: boolean }> {
  const c = e.client;
  if (!c || c.state !== 'connected') throw new Error(`edge ${e.name} is not connected`);
  const made = prepared.get(e.name) ?? [];
  const before = socketBytes(c) ?? 0;
  const t0 = Date.now();
  const open = (h: Record<string, unknown>) => muxOf(c).open(h);
  let bytes = 0;
  let ok = true;
  for (const [i, f] of made.entries()) {
    const r = await uploadBlob(open, uploadFiles!, f.digest, 'application/octet-stream');
    bytes += r.moved;
    const s = open({
      type: 'data-file',
      workload: 'bench',
      path: `out/f${i}`,
      digest: f.digest,
      size: f.size,
      modifiedAt: t0,
    });
    s.on('error', () => undefined);
    s.end();
    const m = await nextMeta(s);
    s.resume();
    if (m.ok !== true) ok = false;
    await uploadFiles!.remove(f.digest);
  }
  prepared.delete(e.name);
  return { ms: Date.now() - t0, bytes, socketBytes: (socketBytes(c) ?? 0) - before, ok };
}

type Cmd = { op: string; rid: number } & Record<string, unknown>;

/** The edges a command names, or all of this worker's. */
const namesOf = (cmd: Cmd): string[] => (cmd.names as string[] | undefined) ?? [...edges.keys()];

async function handle(cmd: Cmd): Promise<unknown> {
  switch (cmd.op) {
    case 'init':
      hubUrls = cmd.hubs as string[];
      return true;
    case 'enroll':
      return enroll(cmd.names as string[], cmd.joinToken as string, (cmd.concurrency as number) ?? 4);
    case 'connect':
      await connect(namesOf(cmd), (cmd.window as number) ?? 100);
      return true;
    case 'disconnect':
      await Promise.all(namesOf(cmd).map((n) => edges.get(n)?.client?.stop()));
      return true;
    case 'mark': {
      requireNewConnection = !!cmd.requireNewConnection;
      const only = (cmd.only ?? cmd.names) as string[] | undefined;
      for (const e of only ? only.map((n) => edges.get(n)!) : edges.values()) {
        e.baseConnects = e.client?.totals.connects ?? 0;
        e.syncedAt = undefined;
        e.syncBytes = undefined;
      }
      tracking = true;
      trackSync();
      return true;
    }
    case 'syncStatus': {
      let connected = 0;
      const syncedAt: number[] = [];
      const session: number[] = [];
      const socket: number[] = [];
      const only = cmd.names as string[] | undefined;
      const list = only ? only.flatMap((n) => edges.get(n) ?? []) : [...edges.values()];
      for (const e of list) {
        if (e.client?.state === 'connected') connected++;
        if (e.syncedAt !== undefined) {
          syncedAt.push(e.syncedAt);
          session.push(e.syncBytes!.session);
          if (e.syncBytes!.socket !== undefined) socket.push(e.syncBytes!.socket);
        }
      }
      return {
        edges: list.length,
        connected,
        synced: syncedAt.length,
        ...(cmd.details ? { syncedAt, session, socket } : {}),
      };
    }
    case 'servedBy': {
      // The hub URL each connected edge's session runs on (ws://.../api/v1/sync), edges by URL.
      const by: Record<string, string[]> = {};
      for (const e of edges.values()) if (e.client?.state === 'connected') (by[e.client.url] ??= []).push(e.name);
      return by;
    }
    case 'readyTimes': {
      const since = cmd.since as number;
      const spec: number[] = [];
      const ready: number[] = [];
      for (const e of edges.values()) {
        if (e.specAt !== undefined && e.specAt >= since) spec.push(e.specAt);
        if (e.readyAt !== undefined && e.readyAt >= since) ready.push(e.readyAt);
      }
      return { edges: edges.size, spec, ready };
    }
    case 'setAutoReady':
      for (const n of cmd.names as string[]) edges.get(n)!.autoReady = !!cmd.on;
      return true;
    case 'churn': {
      // One status change per edge per round; before each round wait (bounded) until most edges'
      // previous change reached the hub, so the run measures throughput, not an unbounded backlog.
      const rounds = cmd.rounds as number;
      const list = [...edges.values()];
      let changes = 0;
      for (let r = 0; r < rounds; r++) {
        const deadline = Date.now() + 5_000;
        while (list.filter((e) => !inSync(e)).length > list.length * 0.1 && Date.now() < deadline)
          await new Promise((res) => setTimeout(res, 5));
        for (const e of list) if (statusChange(e, ((cmd.offset as number | undefined) ?? 0) + r)) changes++;
        await new Promise((res) => setImmediate(res));
      }
      return { changes };
    }
    case 'local': {
      const e = edges.get(cmd.name as string)!;
      let status = 0;
      for (let i = 0; i < (cmd.statusChanges as number); i++) if (statusChange(e, i)) status++;
      const spec = readSpec(store.get<SpecDoc>(mailboxDocId(e.name, 'spec'))!);
      const names = Object.keys(spec.workloads);
      for (let i = 0; i < (cmd.intents as number); i++) {
        const workload = names[i % names.length] ?? 'local';
        const action = (['pause', 'resume', 'override'] as const)[i % 3];
        store.change<ReportDoc>(mailboxDocId(e.name, 'report'), (d) => {
          addIntent(d, {
            workload,
            action,
            ...(action === 'override' ? { set: { 'metadata.annotations.site': `local-${i}` } } : {}),
            at: Date.now(),
            origin: 'bench operator',
          });
        });
      }
      return { status, intents: cmd.intents };
    }
    case 'edgeInfo': {
      const e = edges.get(cmd.name as string)!;
      const spec = store.get<SpecDoc>(mailboxDocId(e.name, 'spec'));
      const report = store.get<ReportDoc>(mailboxDocId(e.name, 'report'));
      const r = report ? readReport(report) : undefined;
      return {
        state: e.client?.state,
        inSync: inSync(e),
        syncedAt: e.syncedAt,
        syncBytes: e.syncBytes,
        generations: spec
          ? Object.fromEntries(Object.values(readSpec(spec).workloads).map((w) => [w.name, w.generation]))
          : {},
        restarts: r ? Object.fromEntries(Object.values(r.workloads).map((w) => [w.name, w.restarts])) : {},
        intents: r?.intents.length ?? 0,
        totals: e.client?.totals,
        session: e.client?.session?.stats,
        socketBytes: socketBytes(e.client),
        reportSize: store.meta(mailboxDocId(e.name, 'report'))?.size,
        specSize: store.meta(mailboxDocId(e.name, 'spec'))?.size,
      };
    }
    case 'docSizes': {
      const report: number[] = [];
      const spec: number[] = [];
      for (const e of edges.values()) {
        report.push(store.meta(mailboxDocId(e.name, 'report'))?.size ?? 0);
        spec.push(store.meta(mailboxDocId(e.name, 'spec'))?.size ?? 0);
      }
      return { report, spec };
    }
    case 'fetchBlob': {
      const names = namesOf(cmd);
      return Promise.all(names.map((n) => fetchBlob(edges.get(n)!, cmd.digest as string)));
    }
    case 'interconnectEcho': {
      const names = namesOf(cmd);
      return Promise.all(
        names.map((n) =>
          interconnectEcho(edges.get(n)!, cmd.import as string, Number(cmd.bytes), Number(cmd.stallMs ?? 0)),
        ),
      );
    }
    case 'deliverData': {
      const names = namesOf(cmd);
      return Promise.all(
        names.map((n) => deliverData(edges.get(n)!, cmd.object as string, Number(cmd.timeoutMs ?? 120_000))),
      );
    }
    case 'stageImages': {
      const names = namesOf(cmd);
      return Promise.all(names.map((n) => stageImages(edges.get(n)!, Number(cmd.timeoutMs ?? 120_000))));
    }
    case 'prepareUpload': {
      const names = namesOf(cmd);
      for (const n of names) await prepareUpload(edges.get(n)!, Number(cmd.files), Number(cmd.size));
      return true;
    }
    case 'uploadData': {
      const names = namesOf(cmd);
      return Promise.all(names.map((n) => uploadData(edges.get(n)!)));
    }
    case 'stats': {
      const u = process.cpuUsage();
      return {
        edges: edges.size,
        cpuMs: (u.user + u.system) / 1000,
        rss: process.memoryUsage().rss,
        loaded: store.loadedStats(),
      };
    }
    case 'stop': {
      await Promise.race([
        Promise.all([...edges.values()].map((e) => e.client?.stop())),
        new Promise((r) => setTimeout(r, 5_000)),
      ]);
      store.close();
      setImmediate(() => process.exit(0));
      return true;
    }
    default:
      throw new Error(`unknown worker op ${cmd.op}`);
  }
}

process.on('message', (raw) => {
  const cmd = raw as Cmd;
  handle(cmd).then(
    (result) => process.send!({ rid: cmd.rid, result }),
    (err: unknown) => process.send!({ rid: cmd.rid, error: err instanceof Error ? err.message : String(err) }),
  );
});
// The harness going away must not leave simulated edges dialling a dead hub forever.
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true, pid: process.pid });
