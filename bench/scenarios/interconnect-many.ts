/**
 * @module interconnect-many (issue #46): N consumers on N simulated edges (default 100) to one
 * ServiceExport, all at once, and the hub's memory before, during and after. The serving side is a
 * real `outpost edge` agent (process driver) with the workload's echo server; the consumers are the
 * simulator's edges (bench/edge-worker.ts `interconnectEcho`): each enrolled and connected with
 * its own sync WebSocket, opening an `interconnect` stream for the import as the agent's listener
 * does. Each writes BYTES to the echo and first reads nothing for STALL_MS (slow consumers: the
 * echo backs up into every window on the way, the hub's read and write buffers included), then
 * reads all of it back. What the hub may hold is bounded per connection (docs/interconnect.md);
 * this measures what that comes to for N connections at once.
 */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { placement } from '../lib/api.js';
import { rssBytes, sleep, until } from '../lib/sys.js';
import { connectAll, remaining, setupFleet, teardown, type Scenario } from './common.js';
import { freePort, killUnder, SERVERS, startEdge } from './interconnect.js';

const BYTES = 4 * 1024 * 1024;
const STALL_MS = 5_000;

export const interconnectMany: Scenario = async (ctx, out) => {
  const s = await setupFleet(ctx, out);
  const agents: ChildProcess[] = [];
  try {
    await connectAll(ctx, s);
    const echoPort = await freePort();
    agents.push(startEdge(ctx, s.hub.url, 'icm-server', await s.api.joinToken(1, { role: 'server' })));
    await s.api.apply([
      {
        kind: 'Workload',
        metadata: { name: 'icm' },
        spec: {
          manifests: [
            {
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name: 'icm' },
              spec: {
                containers: [
                  {
                    name: 'echo',
                    // The run directory last: how its processes are found and ended afterwards (killUnder).
                    command: [process.execPath, '-e', SERVERS, 'echo', String(echoPort), ctx.runDir],
                    ports: [{ containerPort: echoPort }],
                    readinessProbe: { tcpSocket: { port: echoPort }, periodSeconds: 1 },
                  },
                ],
              },
            },
          ],
        },
      },
      placement('icm', ['icm'], { labels: { role: 'server' } }),
      { kind: 'ServiceExport', metadata: { name: 'echo' }, spec: { workload: 'icm', port: echoPort } },
      {
        kind: 'ServiceImport',
        metadata: { name: 'echo' },
        spec: { export: 'echo', port: await freePort(), edgeSelector: { matchLabels: { bench: 'yes' } } },
      },
    ]);
    await until(
      async () => (await s.api.request<any>('GET', '/projects/default/serviceexports/echo')).status?.healthy === 1,
      { timeoutMs: Math.min(remaining(ctx), 120_000), intervalMs: 250, what: 'export echo served' },
    );
    // One connection first: the serving agent's tunnel and the relay warm.
    await s.fleet.each('interconnectEcho', s.fleet.names.slice(0, 1), { import: 'echo', bytes: 64 * 1024 });
    await sleep(2_000);
    const before = rssBytes(s.hub.pid) ?? 0;
    let during = before;
    const sampler = setInterval(() => (during = Math.max(during, rssBytes(s.hub.pid) ?? 0)), 100);
    // What the relay held in its stream buffers (the bounded part), from the hub's /metrics.
    let maxBuffered = 0;
    const scrape = setInterval(() => {
      fetch(`${s.hub.url}/metrics`)
        .then((r) => r.text())
        .then((t) => {
          const m = /^outpost_hub_interconnect_buffered_bytes(?:\{[^}]*\})? (\d+)/m.exec(t);
          if (m) maxBuffered = Math.max(maxBuffered, Number(m[1]));
        })
        .catch(() => undefined);
    }, 250);
    ctx.log(
      `interconnect-many: ${ctx.edges} consumers at once, ${BYTES / 1024 / 1024} MiB each, stalled ${STALL_MS} ms`,
    );
    const t0 = Date.now();
    const per = (
      await s.fleet
        .each<{ ms: number; bytes: number; ok: boolean; error?: string }[]>('interconnectEcho', s.fleet.names, {
          import: 'echo',
          bytes: BYTES,
          stallMs: STALL_MS,
        })
        .finally(() => (clearInterval(sampler), clearInterval(scrape)))
    ).flat();
    const wallMs = Date.now() - t0;
    await sleep(5_000);
    const after = rssBytes(s.hub.pid) ?? 0;
    const failed = per.filter((r) => !r.ok);
    const mib = (b: number) => Math.round((b / 1024 / 1024) * 10) / 10;
    out.metrics.consumers = per.length;
    out.metrics.bytesEach = BYTES;
    out.metrics.stallMs = STALL_MS;
    out.metrics.wallMs = wallMs;
    out.metrics.slowestMs = Math.max(...per.map((r) => r.ms));
    out.metrics.failed = failed.length;
    out.metrics.errors = [...new Set(failed.map((r) => r.error ?? `${r.bytes} of ${BYTES} bytes`))].slice(0, 5);
    out.metrics.hubRssBytes = { before, maxDuring: during, after };
    out.metrics.relayMaxBufferedBytes = maxBuffered;
    out.targets.push(
      {
        what: `${ctx.edges} consumers on ${ctx.edges} edges to one export, ${mib(BYTES)} MiB echoed each`,
        target: `${ctx.edges}/${ctx.edges}`,
        value: `${per.length - failed.length}/${per.length} in ${Math.round(wallMs / 100) / 10} s`,
        met: failed.length === 0 && per.length === ctx.edges,
      },
      {
        what: 'hub RSS before / max during / after (slow consumers, all at once)',
        target: 'bounded (report)',
        value: `${mib(before)} / ${mib(during)} / ${mib(after)} MiB`,
      },
      {
        what: "the relay's stream buffers, max over the run (outpost_hub_interconnect_buffered_bytes)",
        target: 'report',
        value: `${mib(maxBuffered)} MiB`,
      },
    );
  } finally {
    for (const a of agents) a.kill('SIGTERM');
    await sleep(2_000);
    killUnder(ctx.runDir);
    await teardown(s);
  }
};
