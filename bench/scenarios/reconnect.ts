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
 */
import { kb, sec } from '../lib/results.js';
import { percentile, sleep, until } from '../lib/sys.js';
import { connectAll, PhaseMeter, placeOnAll, remaining, setupFleet, teardown, type Scenario } from './common.js';

export const reconnect: Scenario = async (ctx, out) => {
  const s = await setupFleet(ctx, out);
  try {
    const c = await connectAll(ctx, s);
    ctx.log(`all ${ctx.edges} edges in sync after ${sec(c.ms)}; placing a workload so mailboxes are not empty`);
    await placeOnAll(ctx, s);
    await sleep(2_000);
    // Nothing in flight before the restart: every edge has acknowledged the hub's heads.
    await s.fleet.all('mark', { requireNewConnection: false });
    await until(async () => (await s.fleet.syncStatus()).synced === ctx.edges, {
      timeoutMs: remaining(ctx),
      intervalMs: 250,
      what: 'the fleet to be quiet before the restart',
    });

    const servedBefore = s.cluster.replicas ? await s.fleet.servedBy() : undefined;
    await s.fleet.all('mark', { requireNewConnection: true });
    const tStop = Date.now();
    await Promise.all(s.cluster.hubs.map((h) => h.stop('SIGTERM')));
    const tDown = Date.now();
    await Promise.all(s.cluster.hubs.map((h) => h.start()));
    const tUp = Math.max(...s.cluster.hubs.map((h) => h.readyAt));
    const meter = new PhaseMeter(s, 'reconnect');
    let last = '';
    await until(
      async () => {
        const st = await s.fleet.syncStatus();
        last = `${st.connected} connected, ${st.synced} in sync`;
        return st.synced === ctx.edges;
      },
      { timeoutMs: remaining(ctx), intervalMs: 250, what: () => `all edges back in sync after the restart (${last})` },
    );
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
  } finally {
    await teardown(s);
  }
};
