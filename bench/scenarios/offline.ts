/**
 * @module offline: one edge of the fleet goes offline for a "week": meanwhile it records 1,000
 * status changes and 100 local intents, and the hub makes 100 changes to its 10 workloads through
 * the API. Then it reconnects. Measures the time until both mailbox documents are in sync (and
 * the edge holds the hub's latest generations), the bytes that took, and checks through the API
 * that the hub now shows the edge's offline status.
 */
import { placement, workload } from '../lib/api.js';
import { kb, msf } from '../lib/results.js';
import { sleep, until } from '../lib/sys.js';
import { connectAll, placeOnAll, remaining, setupFleet, teardown, waitReady, type Scenario } from './common.js';

const WORKLOADS = 10;
const STATUS_CHANGES = 1_000;
const INTENTS = 100;
const HUB_CHANGES = 100;

interface EdgeInfo {
  state?: string;
  inSync: boolean;
  syncedAt?: number;
  syncBytes?: { session: number; socket?: number };
  generations: Record<string, number>;
  restarts: Record<string, number>;
  intents: number;
  reportSize?: number;
  specSize?: number;
}

export const offline: Scenario = async (ctx, out) => {
  const s = await setupFleet(ctx, out);
  try {
    await connectAll(ctx, s);
    await placeOnAll(ctx, s);
    const target = s.fleet.names[0];
    const names = Array.from({ length: WORKLOADS }, (_, i) => `site-${i}`);
    await s.api.apply([...names.map((n) => workload(n)), placement('site', names, { edges: [target] })]);
    await waitReady(ctx, s, 'site', WORKLOADS, 200, 1);
    await sleep(1_000);

    // The edge goes away; from now on its status is written locally only, as the agent would.
    await s.fleet.each('setAutoReady', [target], { on: false });
    await s.fleet.each('disconnect', [target]);
    const before = await s.fleet.one<EdgeInfo>(target, 'edgeInfo');
    const t1 = Date.now();
    await s.fleet.one(target, 'local', { statusChanges: STATUS_CHANGES, intents: INTENTS });
    out.metrics.localWritesMs = Date.now() - t1;
    const t2 = Date.now();
    for (let i = 0; i < HUB_CHANGES; i++) await s.api.apply([workload(names[i % WORKLOADS], `bench:${i + 2}`)]);
    out.metrics.hubChangesMs = Date.now() - t2;
    const expected = Object.values(before.generations).reduce((a, b) => a + b, 0) + HUB_CHANGES;
    await until(
      async () => {
        const e = await s.api.edge<{ workloads: { generation: number }[] }>(target);
        return e.status.workloads.reduce((a, w) => a + w.generation, 0) >= expected;
      },
      {
        timeoutMs: remaining(ctx),
        intervalMs: 100,
        what: 'the hub to write all 100 changes into the offline edge spec',
      },
    );

    await s.fleet.each('mark', [target], { requireNewConnection: true, only: [target] });
    const t0 = Date.now();
    await s.fleet.each('connect', [target], { window: 1 });
    let info: EdgeInfo | undefined;
    await until(
      async () => {
        info = await s.fleet.one<EdgeInfo>(target, 'edgeInfo');
        const gens = Object.values(info.generations).reduce((a, b) => a + b, 0);
        return info.syncedAt !== undefined && gens >= expected ? info : undefined;
      },
      { timeoutMs: remaining(ctx), intervalMs: 20, what: 'the returning edge to converge with the hub' },
    );
    const converge = info!.syncedAt! - t0;
    // The hub's side: the API must now show the status the edge wrote while offline.
    const hubView = await s.api.edge<{
      workloads: { name: string; restarts: number }[];
      localIntents: Record<string, unknown>;
    }>(target);
    const hubRestarts = Object.fromEntries(hubView.status.workloads.map((w) => [w.name, w.restarts]));
    const hubHasStatus = names.every((n) => hubRestarts[n] === info!.restarts[n]);
    out.metrics.convergeMs = converge;
    out.metrics.syncBytes = info!.syncBytes?.session;
    out.metrics.wireBytes = info!.syncBytes?.socket;
    out.metrics.edgeDocBytes = { report: info!.reportSize, spec: info!.specSize };
    out.metrics.hubShowsOfflineStatus = hubHasStatus;
    out.metrics.localIntentsAtHub = Object.keys(hubView.status.localIntents ?? {}).length;
    out.metrics.offlineWork = {
      statusChanges: STATUS_CHANGES,
      intents: INTENTS,
      hubChanges: HUB_CHANGES,
      workloads: WORKLOADS,
    };
    if (!hubHasStatus)
      out.bottleneck.push(
        `after convergence the hub API showed restarts ${JSON.stringify(hubRestarts)}, the edge had ${JSON.stringify(info!.restarts)}`,
      );
    out.targets.push({ what: 'offline week: time to converge', target: 'report', value: msf(converge) });
    out.targets.push({
      what: 'offline week: bytes to converge',
      target: 'report',
      value: `${kb(info!.syncBytes?.socket)} wire, ${kb(info!.syncBytes?.session)} sync frames`,
    });
    out.targets.push({
      what: 'hub shows the offline status',
      target: 'yes',
      value: hubHasStatus ? 'yes' : 'no',
      met: hubHasStatus,
    });
  } finally {
    await teardown(s);
  }
};
