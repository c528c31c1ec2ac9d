/**
 * @module reconnect: the hub restarts (SIGTERM, then `outpost hub` again on the same port and data
 * directory) with N edges connected whose mailboxes hold a placed workload and nothing new.
 * Measures the time from the restarted hub listening until every edge is connected and in sync,
 * and the bytes each edge's new connection carried up to that moment: sync frames only
 * (SyncSession.stats) and everything on the TCP connection (upgrade, hello/welcome, heartbeat,
 * pings, sync frames).
 *
 * With `--replicas N` every replica restarts at once (a storm on all of them): the edges, each
 * given all N URLs, land wherever they first get an answer; the clock starts when the last replica
 * listens. The results count the edges each replica served before and after, and how many came
 * back to another replica than before (a moved edge gets its spec written there in that
 * replica's epoch: a full spec and report, where an edge back on its own replica syncs nothing).
 * Then a rolling restart: each replica alone, measured apart (`rolling`).
 */
import { kb, sec } from '../lib/results.js';
import { percentile, sleep } from '../lib/sys.js';
import {
  connectAll,
  PhaseMeter,
  placeOnAll,
  setupFleet,
  teardown,
  type Scenario,
  type ScenarioContext,
  type ScenarioOutput,
  type Setup,
  untilInSync,
  untilQuiet,
} from './common.js';

export const reconnect: Scenario = async (ctx, out) => {
  const s = await setupFleet(ctx, out);
  try {
    const c = await connectAll(ctx, s);
    ctx.log(`all ${ctx.edges} edges in sync after ${sec(c.ms)}; placing a workload so mailboxes are not empty`);
    await placeOnAll(ctx, s);
    await sleep(2_000);
    await untilQuiet(ctx, s, 'the restart');

    const servedBefore = s.cluster.replicas ? await s.fleet.servedBy() : undefined;
    await s.fleet.all('mark', { requireNewConnection: true });
    const tStop = Date.now();
    await Promise.all(s.cluster.hubs.map((h) => h.stop('SIGTERM')));
    const tDown = Date.now();
    await Promise.all(s.cluster.hubs.map((h) => h.start()));
    const tUp = Math.max(...s.cluster.hubs.map((h) => h.readyAt));
    const meter = new PhaseMeter(s, 'reconnect');
    await untilInSync(ctx, s, undefined, 'all edges back in sync after the restart');
    meter.finish(out);
    if (servedBefore) {
      const after = await s.fleet.servedBy();
      out.metrics.edgesPerReplicaBefore = s.cluster.countPerHub(servedBefore);
      out.metrics.edgesPerReplicaAfter = s.cluster.countPerHub(after);
      out.metrics.edgesOnAnotherReplica = [...after].filter(
        ([n, url]) => s.cluster.indexOf(url) !== s.cluster.indexOf(servedBefore.get(n) ?? ''),
      ).length;
    }
    const st = await s.fleet.syncStatus(true);
    const back = st.syncedAt!.map((t) => t - tUp);
    const all = Math.max(...back);
    out.metrics.hubStopMs = tDown - tStop;
    out.metrics.hubStartMs = tUp - tDown;
    out.metrics.backInSyncAfterHubUpMs = { p50: percentile(back, 50), p99: percentile(back, 99), max: all };
    out.metrics.backInSyncAfterStopMs = Math.max(...st.syncedAt!) - tStop;
    out.metrics.edgesWithoutSyncBytes = st.session!.filter((b) => b === 0).length;
    out.metrics.syncBytesPerEdge = {
      p50: percentile(st.session!, 50),
      p99: percentile(st.session!, 99),
      max: percentile(st.session!, 100),
    };
    out.metrics.wireBytesPerEdge = {
      p50: percentile(st.socket!, 50),
      p99: percentile(st.socket!, 99),
      max: percentile(st.socket!, 100),
    };
    const wireP99 = percentile(st.socket!, 99) ?? Infinity;
    out.targets.push({
      what: 'hub up -> all edges back in sync',
      target: '<= 30 s (10,000 edges)',
      value: `${sec(all)} (${sec(tUp - tStop)} restart before)`,
      met: all <= 30_000,
    });
    out.targets.push({
      what: 'wire bytes per quiet edge (p99)',
      target: '<= 2 KB',
      value: `${kb(wireP99)} all TCP payload, ${kb(percentile(st.session!, 99))} sync frames`,
      met: wireP99 <= 2048,
    });
    if (s.cluster.replicas > 1) await rolling(ctx, s, out);
  } finally {
    await teardown(s);
  }
};

/**
 * Issue #22, hub replicas: a rolling restart, as replicas are upgraded: each replica alone is
 * stopped and started again while the others serve, and its edges come back to it. Each step is
 * measured alone (every replica's CPU and PostgreSQL's, from the restarted replica listening until
 * its edges are in sync) and the steps are summed: the same handshakes as the storm on all of them,
 * without R replicas, PostgreSQL and the simulator oversubscribing this machine's cores at once (as
 * the fan-out's one replica's edges at a time: bench/scenarios/fanout.ts).
 */
async function rolling(ctx: ScenarioContext, s: Setup, out: ScenarioOutput): Promise<void> {
  let hubMs = 0;
  let pgMs = 0;
  let edges = 0;
  let moved = 0;
  const backMs: number[] = [];
  for (let r = 0; r < s.cluster.hubs.length; r++) {
    await sleep(1_000);
    await untilQuiet(ctx, s, 'the restart');
    const before = await s.fleet.servedBy();
    const names = [...before].filter(([, url]) => s.cluster.indexOf(url) === r).map(([n]) => n);
    if (!names.length) continue;
    await s.fleet.each('mark', names, { requireNewConnection: true });
    const hub = s.cluster.hubs[r]!;
    await hub.stop('SIGTERM');
    await hub.start();
    const meter = new PhaseMeter(s, `rolling${r + 1}`);
    await untilInSync(ctx, s, names, `replica ${r + 1}'s ${names.length} edges back in sync after its restart`);
    const f = meter.finish(out);
    const st = await s.fleet.syncStatus(true, names);
    backMs.push(Math.max(...st.syncedAt!) - hub.readyAt);
    const after = await s.fleet.servedBy();
    moved += names.filter((n) => s.cluster.indexOf(after.get(n) ?? '') !== r).length;
    hubMs += f.hubCpuMs;
    pgMs += f.postgresCpuMs ?? 0;
    edges += names.length;
    ctx.log(
      `replica ${r + 1} restarted alone: its ${names.length} edges back in sync in ${sec(backMs.at(-1)!)}, hub CPU ${sec(f.hubCpuMs)} (all replicas), PostgreSQL ${sec(f.postgresCpuMs ?? 0)}`,
    );
  }
  if (!edges) return;
  out.metrics.rollingRestart = {
    edges,
    edgesOnAnotherReplica: moved,
    backInSyncAfterReplicaUpMs: backMs,
    hubCpuPerEdgeMs: +(hubMs / edges).toFixed(3),
    postgresCpuPerEdgeMs: +(pgMs / edges).toFixed(3),
  };
  out.targets.push({
    what: 'hub CPU per edge, replicas restarted one at a time',
    target: '(issue #22: within 1.5x of the SQLite hub)',
    value: `${(hubMs / edges).toFixed(2)} ms (${sec(hubMs)} for ${edges}; PostgreSQL ${(pgMs / edges).toFixed(2)} ms; ${moved} edges moved)`,
  });
}
