/**
 * @module connect: N edges connect to a fresh hub and sync their mailboxes. Measures the time to
 * all-in-sync and the hub's resident memory per connected idle edge beyond its own baseline
 * (VmRSS with every edge enrolled but none connected, against VmRSS once all are connected and idle).
 */
import { kb, mb, sec } from '../lib/results.js';
import { median, percentile, settle, sleep } from '../lib/sys.js';
import { connectAll, PhaseMeter, setupFleet, teardown, type Scenario, type Setup } from './common.js';

async function sampleRss(s: Setup, samples: number, everyMs: number): Promise<number> {
  const v: number[] = [];
  for (let i = 0; i < samples; i++) {
    const r = s.hub.rss();
    if (r !== undefined) v.push(r);
    await sleep(everyMs);
  }
  return median(v) ?? 0;
}

/** The hub's own view of its heap (prom-client default metrics on /metrics). */
async function hubHeap(s: Setup): Promise<{ heapUsed?: number; external?: number }> {
  try {
    const text = await (await fetch(`${s.hub.url}/metrics`)).text();
    const val = (name: string) => {
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`, 'm').exec(text);
      return m ? Number(m[1]) : undefined;
    };
    return {
      heapUsed: val('outpost_hub_nodejs_heap_size_used_bytes'),
      external: val('outpost_hub_nodejs_external_memory_bytes'),
    };
  } catch {
    return {};
  }
}

export const connect: Scenario = async (ctx, out) => {
  const s = await setupFleet(ctx, out);
  try {
    // Let the enrollment burst's garbage settle before the baseline.
    await settle(3_000);
    const baseline = await sampleRss(s, 5, 200);
    const heapBefore = await hubHeap(s);
    const meter = new PhaseMeter(s, 'connect');
    const c = await connectAll(ctx, s);
    meter.finish(out);
    ctx.log(`all ${ctx.edges} edges in sync after ${sec(c.ms)}`);
    // Idle: only heartbeats and pings. Sample over a few seconds and take the median.
    await settle(5_000);
    const connected = await sampleRss(s, 10, 300);
    const heapAfter = await hubHeap(s);
    const perEdge = (connected - baseline) / ctx.edges;
    const t0 = Math.min(...c.syncedAt) - 0;
    out.metrics.connectToAllSyncedMs = c.ms;
    out.metrics.syncedSpreadMs = {
      p50: (percentile(c.syncedAt, 50) ?? 0) - t0,
      p99: (percentile(c.syncedAt, 99) ?? 0) - t0,
    };
    out.metrics.hubRssBaselineBytes = baseline;
    out.metrics.hubRssConnectedBytes = connected;
    out.metrics.hubRssPerEdgeBytes = Math.round(perEdge);
    out.metrics.hubHeapUsedBefore = heapBefore.heapUsed;
    out.metrics.hubHeapUsedAfter = heapAfter.heapUsed;
    if (heapBefore.heapUsed !== undefined && heapAfter.heapUsed !== undefined)
      out.metrics.hubHeapPerEdgeBytes = Math.round((heapAfter.heapUsed - heapBefore.heapUsed) / ctx.edges);
    out.metrics.workerRssBytes = s.fleet.usage().rss;
    const st = await s.fleet.syncStatus();
    out.targets.push({
      what: 'edges connected and in sync',
      target: '25,000 on one hub (issue #17)',
      value: `${st.synced}/${ctx.edges} in ${sec(c.ms)}`,
      met: ctx.edges >= 25_000 ? st.synced === ctx.edges : undefined,
    });
    out.targets.push({
      what: 'hub RSS per idle edge',
      target: '<= 30 KB (issue #17)',
      value: `${kb(perEdge)} (${mb(baseline)} -> ${mb(connected)})`,
      met: perEdge <= 30 * 1024,
    });
  } finally {
    await teardown(s);
  }
};
