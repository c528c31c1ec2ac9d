/**
 * @module churn: 100,000 status changes spread over the fleet (a crash loop: phase flips, a
 * message, restarts climb), each synced to the hub as it happens. Measures the hub's CPU time
 * (/proc utime+stime) per change and the throughput, then the stored size of every mailbox
 * document (ReplicaStore.meta(id).size) on the edges and, after stopping it, on the hub.
 *
 * Workers send one change per edge per round and wait (bounded) for the previous round to be
 * acknowledged, so the hub sees a steady stream rather than one unbounded burst.
 */
import path from 'node:path';
import { mailboxDocId, edgeName } from '../../core/ids.js';
import { ReplicaStore } from '../../sync/store.js';
import { kb, sec } from '../lib/results.js';
import { percentile, sleep, until } from '../lib/sys.js';
import { connectAll, PhaseMeter, placeOnAll, remaining, setupFleet, teardown, type Scenario } from './common.js';

export const TOTAL_CHANGES = 100_000;
const MAILBOX_LIMIT = 64 * 1024;

export const churn: Scenario = async (ctx, out) => {
  const total = Number(process.env.BENCH_CHURN_CHANGES ?? TOTAL_CHANGES);
  const s = await setupFleet(ctx, out);
  try {
    await connectAll(ctx, s);
    await placeOnAll(ctx, s);
    await sleep(1_000);
    const sizesBefore = await s.fleet.all<{ report: number[] }>('docSizes');
    const reportBefore = sizesBefore.flatMap((x) => x.report);

    const rounds = Math.ceil(total / ctx.edges);
    const chunk = Math.max(1, Math.ceil(rounds / 10));
    const meter = new PhaseMeter(s, 'churn');
    const hub0 = s.hub.cpuMs() ?? 0;
    const t0 = Date.now();
    let changes = 0;
    for (let done = 0; done < rounds; done += chunk) {
      const r = await s.fleet.all<{ changes: number }>('churn', {
        rounds: Math.min(chunk, rounds - done),
        offset: done,
      });
      changes += r.reduce((a, x) => a + x.changes, 0);
      const elapsed = Date.now() - t0;
      const projected = (elapsed / (done + chunk)) * rounds;
      ctx.log(`churn: ${changes} changes in ${sec(elapsed)}`);
      if (t0 + projected > ctx.deadline) {
        out.bottleneck.push(
          `churn stopped after ${changes} of ${total} changes: at ${Math.round(changes / (elapsed / 1000))} changes/s the full run would take ${sec(projected)}, beyond the time budget`,
        );
        break;
      }
    }
    await s.fleet.all('mark', { requireNewConnection: false });
    await until(async () => (await s.fleet.syncStatus()).synced === ctx.edges, {
      timeoutMs: remaining(ctx),
      intervalMs: 200,
      what: 'the hub to acknowledge every status change',
    });
    const wall = Date.now() - t0;
    const hubCpu = (s.hub.cpuMs() ?? 0) - hub0;
    meter.finish(out);

    const sizes = await s.fleet.all<{ report: number[]; spec: number[] }>('docSizes');
    const report = sizes.flatMap((x) => x.report);
    const spec = sizes.flatMap((x) => x.spec);
    await s.hub.stop('SIGTERM');
    const hubStore = await ReplicaStore.open(path.join(ctx.runDir, 'hub', 'hub.db'));
    const hubReport: number[] = [];
    try {
      for (const n of s.fleet.names) hubReport.push(hubStore.meta(mailboxDocId(edgeName(n), 'report'))?.size ?? 0);
    } finally {
      hubStore.close();
    }
    const perEdge = changes / ctx.edges;
    out.metrics.changes = changes;
    out.metrics.wallMs = wall;
    out.metrics.changesPerSecond = Math.round(changes / (wall / 1000));
    out.metrics.hubCpuMs = Math.round(hubCpu);
    out.metrics.hubCpuUsPerChange = +((hubCpu * 1000) / Math.max(1, changes)).toFixed(1);
    out.metrics.edgeReportBytes = {
      before: percentile(reportBefore, 50),
      p50: percentile(report, 50),
      max: percentile(report, 100),
    };
    out.metrics.edgeSpecBytes = { p50: percentile(spec, 50), max: percentile(spec, 100) };
    out.metrics.hubReportBytes = { p50: percentile(hubReport, 50), max: percentile(hubReport, 100) };
    out.metrics.bytesPerChange = +(
      ((percentile(report, 50) ?? 0) - (percentile(reportBefore, 50) ?? 0)) /
      Math.max(1, perEdge)
    ).toFixed(1);
    const bpc = out.metrics.bytesPerChange as number;
    if (bpc > 0) out.metrics.changesUntil64KB = Math.round((MAILBOX_LIMIT - (percentile(reportBefore, 50) ?? 0)) / bpc);
    const maxDoc = Math.max(percentile(report, 100) ?? 0, percentile(hubReport, 100) ?? 0);
    out.targets.push({
      what: `${changes} status changes: hub CPU`,
      target: 'report',
      value: `${sec(hubCpu)} CPU (${out.metrics.hubCpuUsPerChange} us/change), ${out.metrics.changesPerSecond}/s`,
    });
    out.targets.push({
      what: `report doc after ${Math.round(perEdge)} changes/edge`,
      target: '< 64 KB (after compaction)',
      value: `${kb(percentile(report, 50))} p50, ${kb(maxDoc)} max (${out.metrics.bytesPerChange} B/change)`,
      met: maxDoc < MAILBOX_LIMIT,
    });
    // What compaction is for, not a verdict: the bound itself is tested in sync/compaction.test.ts.
    if (bpc > 0)
      out.targets.push({
        what: 'history growth if never compacted',
        target: 'report (epoch compaction past 24 KB bounds it)',
        value: `64 KB after ~${out.metrics.changesUntil64KB} changes of one edge`,
      });
  } finally {
    await teardown(s);
  }
};
