/**
 * @module fanout-peers: our fan-out and two peers on the same work, in one run on one machine.
 *
 * 1. ours: the fanout scenario (real hub, N simulated edges; one Placement change to all N).
 * 2. automerge-repo, the reference sync server of the CRDT we use: a server process (Repo, WebSocket
 *    server adapter, Node filesystem storage) holding N documents of our spec's shape; N clients,
 *    each a Repo of its own holding one of them, in worker processes. The server changes all N
 *    (the image of the workload's container and its generation, as our change does) and the clock
 *    runs until every client has the change.
 * 3. the wire floor: a plain `ws` server sends each of N clients one frame of the size our hub sent
 *    one edge for the change (measured in step 1) and waits for every client's reply.
 *
 * Ratios (ours / theirs): our change -> READY N/N (the fanout headline, which includes the edges'
 * Ready reports coming back and `--ready-delay`) against automerge-repo's change -> every client has
 * it, and against the wire floor's round trip; and the same for our delivery alone (change -> the
 * last edge holds the new spec). Server CPU of each, per document.
 */
import path from 'node:path';
import { Worker } from '../lib/fleet.js';
import { ROOT } from '../lib/hub-process.js';
import { sec } from '../lib/results.js';
import { cpuMs, percentile, until } from '../lib/sys.js';
import type { ScenarioContext, ScenarioOutput, Scenario } from './common.js';
import { remaining } from './common.js';
import { runFanout, type FanoutFigures } from './fanout.js';

const SCRIPT = path.join(ROOT, 'bench/peer-process.ts');
const WORKER_NICE = Number(process.env.BENCH_WORKER_NICE ?? 10);

interface PeerFigures {
  /** Change (server side) -> the last client has it (automerge-repo) or has replied (wire). */
  allMs: number;
  serverCpuMs: number;
  clients: number;
}

function spawnPeer(ctx: ScenarioContext, role: string, i: number, nice: number): Worker {
  return new Worker(i, ctx.runDir, { BENCH_PEER_ROLE: role }, path.join(ctx.runDir, `${role}-${i}.log`), SCRIPT, nice);
}

/** Splits `items` into `k` nearly equal parts, in order. */
function split<T>(items: T[], k: number): T[][] {
  const out: T[][] = Array.from({ length: k }, () => []);
  items.forEach((x, i) => out[i % k]!.push(x));
  return out;
}

async function stopAll(ws: Worker[]): Promise<void> {
  await Promise.all(
    ws.map(async (w) => {
      if (w.child.exitCode !== null || w.child.signalCode !== null) return;
      const exited = new Promise((r) => w.child.once('exit', r));
      w.call('stop').catch(() => undefined);
      const t = setTimeout(() => w.child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(t);
    }),
  );
}

async function automergeRepo(ctx: ScenarioContext, out: ScenarioOutput): Promise<PeerFigures> {
  const server = spawnPeer(ctx, 'am-server', 0, 0);
  const clients = Array.from({ length: Math.min(ctx.workers, ctx.edges) }, (_, i) =>
    spawnPeer(ctx, 'am-clients', i, WORKER_NICE),
  );
  try {
    await Promise.all([server.ready, ...clients.map((c) => c.ready)]);
    const t0 = Date.now();
    const { port, urls } = await server.call<{ port: number; urls: string[] }>('start', {
      dir: path.join(ctx.runDir, 'am-storage'),
      n: ctx.edges,
    });
    ctx.log(`automerge-repo: ${ctx.edges} documents created in ${sec(Date.now() - t0)}; clients connecting`);
    const t1 = Date.now();
    const parts = split(urls, clients.length);
    const connected = await Promise.all(clients.map((c, i) => c.call<number>('connect', { port, urls: parts[i] })));
    const n = connected.reduce((a, b) => a + b, 0);
    out.metrics.automergeRepoConnectMs = Date.now() - t1;
    ctx.log(`automerge-repo: ${n} clients hold their document after ${sec(Date.now() - t1)}`);
    const image = `registry.example/bench-app:${Date.now()}`;
    await Promise.all(clients.map((c) => c.call('expect', { image })));
    const cpu0 = cpuMs(server.child.pid!) ?? 0;
    const { t0: changedAt, changedMs } = await server.call<{ t0: number; changedMs: number }>('change', { image });
    let arrivals: number[] = [];
    await until(
      async () => {
        arrivals = (await Promise.all(clients.map((c) => c.call<number[]>('arrivals')))).flat();
        return arrivals.length === n;
      },
      {
        timeoutMs: remaining(ctx),
        intervalMs: 100,
        what: () => `every automerge-repo client to have the change (${arrivals.length}/${n})`,
      },
    );
    const serverCpuMs = Math.round((cpuMs(server.child.pid!) ?? 0) - cpu0);
    const lat = arrivals.map((t) => t - changedAt);
    out.metrics.automergeRepo = {
      clients: n,
      changeAllMs: changedMs,
      allMs: percentile(lat, 100),
      p50Ms: percentile(lat, 50),
      p99Ms: percentile(lat, 99),
      serverCpuMs,
      serverCpuPerDocMs: +(serverCpuMs / n).toFixed(3),
    };
    return { allMs: percentile(lat, 100)!, serverCpuMs, clients: n };
  } finally {
    await stopAll([server, ...clients]);
  }
}

async function wireFloor(ctx: ScenarioContext, out: ScenarioOutput, frameBytes: number): Promise<PeerFigures> {
  const server = spawnPeer(ctx, 'wire-server', 0, 0);
  const clients = Array.from({ length: Math.min(ctx.workers, ctx.edges) }, (_, i) =>
    spawnPeer(ctx, 'wire-clients', i, WORKER_NICE),
  );
  try {
    await Promise.all([server.ready, ...clients.map((c) => c.ready)]);
    const port = await server.call<number>('start');
    const counts = split(
      Array.from({ length: ctx.edges }, (_, i) => i),
      clients.length,
    ).map((p) => p.length);
    const n = (await Promise.all(clients.map((c, i) => c.call<number>('connect', { port, n: counts[i] })))).reduce(
      (a, b) => a + b,
      0,
    );
    const cpu0 = cpuMs(server.child.pid!) ?? 0;
    const r = await server.call<{ t0: number; doneAt: number; clients: number }>('send', { bytes: frameBytes });
    const serverCpuMs = Math.round((cpuMs(server.child.pid!) ?? 0) - cpu0);
    const arrivals = (await Promise.all(clients.map((c) => c.call<number[]>('arrivals')))).flat();
    out.metrics.wireFloor = {
      clients: n,
      frameBytes,
      roundTripAllMs: r.doneAt - r.t0,
      deliveredAllMs: percentile(
        arrivals.map((t) => t - r.t0),
        100,
      ),
      serverCpuMs,
      serverCpuPerClientMs: +(serverCpuMs / n).toFixed(3),
    };
    return { allMs: r.doneAt - r.t0, serverCpuMs, clients: n };
  } finally {
    await stopAll([server, ...clients]);
  }
}

const ratio = (a: number, b: number): number => +(a / Math.max(1, b)).toFixed(2);

export const fanoutPeers: Scenario = async (ctx, out) => {
  const oursOut: ScenarioOutput = { metrics: {}, targets: [], bottleneck: [] };
  const ours: FanoutFigures = await runFanout(ctx, oursOut);
  out.metrics.ours = { ...ours, fanout: oursOut.metrics };
  out.targets.push(...oursOut.targets.map((t) => ({ ...t, what: `ours: ${t.what}` })));
  out.bottleneck.push(...oursOut.bottleneck.map((b) => `ours: ${b}`));
  ctx.log(
    `ours: READY N/N after ${sec(ours.readyNNMs)}, last delivery ${sec(ours.deliveredAllMs)}; automerge-repo next`,
  );

  const am = await automergeRepo(ctx, out);
  ctx.log(`automerge-repo: every client has the change after ${sec(am.allMs)}; wire floor next`);
  // The frame of the wire floor: what our hub sent one edge for the change (at least 64 bytes).
  const wire = await wireFloor(ctx, out, Math.max(64, ours.changeBytesToEdge));
  ctx.log(`wire floor: all ${wire.clients} replies after ${sec(wire.allMs)}`);

  const ratios = {
    readyNNOverAutomergeRepo: ratio(ours.readyNNMs, am.allMs),
    deliveryOverAutomergeRepo: ratio(ours.deliveredAllMs, am.allMs),
    readyNNOverWireFloor: ratio(ours.readyNNMs, wire.allMs),
    deliveryOverWireFloor: ratio(ours.deliveredAllMs, wire.allMs),
    hubCpuOverAutomergeRepoCpu: ratio(ours.hubCpuMs, am.serverCpuMs),
  };
  out.metrics.ratios = ratios;
  out.targets.push({
    what: 'ours / automerge-repo (READY N/N vs every client has the change)',
    target: '< 1 (ahead)',
    value: `${ratios.readyNNOverAutomergeRepo}x (${sec(ours.readyNNMs)} vs ${sec(am.allMs)}; delivery alone ${ratios.deliveryOverAutomergeRepo}x)`,
    met: ratios.readyNNOverAutomergeRepo < 1,
  });
  out.targets.push({
    what: 'ours / wire floor (READY N/N vs every reply back)',
    target: '<= 3x',
    value: `${ratios.readyNNOverWireFloor}x (${sec(ours.readyNNMs)} vs ${sec(wire.allMs)}, ${Math.max(64, ours.changeBytesToEdge)} B frames; delivery alone ${ratios.deliveryOverWireFloor}x)`,
    met: ratios.readyNNOverWireFloor <= 3,
  });
  out.targets.push({
    what: 'server CPU per document: ours / automerge-repo / wire',
    target: 'report',
    value: `${(ours.hubCpuMs / ctx.edges).toFixed(2)} / ${(am.serverCpuMs / am.clients).toFixed(2)} / ${(wire.serverCpuMs / wire.clients).toFixed(3)} ms`,
  });
};
