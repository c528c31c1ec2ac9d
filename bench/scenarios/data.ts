/**
 * @module The two directions of docs/data.md with 100 simulated edges (issue #20):
 *
 * - `data-delivery`: a DataObject of BENCH_DATA_MB (default 50) selecting every edge is applied;
 *   each simulated edge finds the order in its spec, brings the blob over its own connection
 *   (digest checked, bytes not kept) and reports it Delivered (bench/edge-worker.ts `deliverData`).
 *   Measured: the time until the hub's status says `delivered N/N`, hub CPU, and socket bytes
 *   against the bytes delivered.
 * - `data-upload`: every edge sends BENCH_UPLOAD_FILES (default 10) files of BENCH_UPLOAD_KB
 *   (default 1024) KiB, distinct per edge, as the agent's egress does (`blob-put`, then a
 *   `data-file` record; `uploadData`). Measured: the time until the hub's index lists every file,
 *   hub CPU, and socket bytes against the file bytes.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { HubClient } from '../../cli/client.js';
import { until } from '../lib/sys.js';
import { msf } from '../lib/results.js';
import { connectAll, PhaseMeter, remaining, setupFleet, teardown, type Scenario } from './common.js';

type PerEdge = { ms: number; bytes: number; socketBytes: number; ok: boolean };

export const dataDelivery: Scenario = async (ctx, out) => {
  const mb = Number(process.env.BENCH_DATA_MB ?? 50);
  const size = mb * 1024 * 1024;
  const s = await setupFleet(ctx, out);
  try {
    await connectAll(ctx, s);
    const file = path.join(ctx.runDir, 'data.bin');
    const fd = fs.openSync(file, 'w');
    for (let n = 0; n < size; n += 4 * 1024 * 1024) fs.writeSync(fd, randomBytes(Math.min(4 * 1024 * 1024, size - n)));
    fs.closeSync(fd);
    const blob = await new HubClient({ hub: s.hub.url, token: s.hub.adminToken }).upload<{ digest: string }>(
      '/api/v1/projects/default/blobs',
      file,
      {},
    );
    fs.rmSync(file, { force: true });
    ctx.log(`pushed ${mb} MB; a DataObject delivers it to ${ctx.edges} edges`);

    const phase = new PhaseMeter(s, 'delivery');
    const t0 = Date.now();
    const fetching = s.fleet.each<PerEdge[]>('deliverData', s.fleet.names, {
      object: 'bench-data',
      timeoutMs: remaining(ctx),
    });
    fetching.catch(() => undefined); // awaited below; an apply that fails must not leave it unhandled
    await s.api.request('POST', '/apply', {
      objects: [
        {
          kind: 'DataObject',
          metadata: { name: 'bench-data' },
          spec: { version: 'v1', digest: blob.digest, size, edgeSelector: {} },
        },
      ],
    });
    const per = (await fetching).flat();
    let summary = '';
    await until(
      async () => {
        const o = await s.api.request<{ status?: { summary?: string } }>(
          'GET',
          '/projects/default/dataobjects/bench-data',
        );
        summary = o.status?.summary ?? '';
        return summary === `delivered ${ctx.edges}/${ctx.edges}`;
      },
      {
        timeoutMs: remaining(ctx),
        intervalMs: 100,
        what: () => `delivered ${ctx.edges}/${ctx.edges} (last: ${summary})`,
      },
    );
    const wallMs = Date.now() - t0;
    const cpu = phase.finish(out);
    report(out, per, size, wallMs, cpu.hubCpuMs, `every edge has the ${mb} MB object, digest checked`, ctx.edges);
    out.targets.push({
      what: `time until the hub shows delivered ${ctx.edges}/${ctx.edges}`,
      target: 'reported',
      value: msf(wallMs),
    });
  } finally {
    await teardown(s);
  }
};

export const dataUpload: Scenario = async (ctx, out) => {
  const files = Number(process.env.BENCH_UPLOAD_FILES ?? 10);
  const size = Number(process.env.BENCH_UPLOAD_KB ?? 1024) * 1024;
  const s = await setupFleet(ctx, out);
  try {
    await connectAll(ctx, s);
    await s.fleet.each('prepareUpload', s.fleet.names, { files, size });
    ctx.log(`${ctx.edges} edges upload ${files} files of ${size} bytes each`);
    const phase = new PhaseMeter(s, 'upload');
    const t0 = Date.now();
    const per = (await s.fleet.each<PerEdge[]>('uploadData', s.fleet.names)).flat();
    // The edges have their answers; the hub's index is the proof.
    let listed = 0;
    await until(
      async () => {
        listed = 0;
        for (const e of s.fleet.names) {
          const r = await s.api.request<{ items: unknown[] }>('GET', `/projects/default/edges/${e}/data-files`);
          listed += r.items.length;
        }
        return listed === files * ctx.edges;
      },
      {
        timeoutMs: remaining(ctx),
        intervalMs: 200,
        what: () => `${files * ctx.edges} files on the hub (last: ${listed})`,
      },
    );
    const wallMs = Date.now() - t0;
    const cpu = phase.finish(out);
    report(out, per, size * files, wallMs, cpu.hubCpuMs, `every edge's ${files} files on the hub, recorded`, ctx.edges);
    out.metrics.files = files * ctx.edges;
    out.targets.push({
      what: `time until the hub lists ${files * ctx.edges} files`,
      target: 'reported',
      value: msf(wallMs),
    });
  } finally {
    await teardown(s);
  }
};

function report(
  out: Parameters<Scenario>[1],
  per: PerEdge[],
  perEdgeBytes: number,
  wallMs: number,
  hubCpuMs: number,
  what: string,
  edges: number,
): void {
  const moved = per.reduce((a, r) => a + r.bytes, 0);
  const wire = per.reduce((a, r) => a + r.socketBytes, 0);
  const bad = per.filter((r) => !r.ok || r.bytes !== perEdgeBytes).length;
  out.metrics.bytesPerEdge = perEdgeBytes;
  out.metrics.movedBytes = moved;
  out.metrics.socketBytes = wire;
  out.metrics.wireRatio = +(wire / Math.max(1, moved)).toFixed(4);
  out.metrics.wallMs = wallMs;
  out.metrics.hubCpuMs = Math.round(hubCpuMs);
  out.metrics.slowestEdgeMs = Math.max(...per.map((r) => r.ms));
  out.metrics.failed = bad;
  out.targets.push(
    { what, target: `${edges}/${edges}`, value: `${edges - bad}/${edges}`, met: bad === 0 },
    {
      what: 'bytes on the wire / data bytes',
      target: '<= 1.1',
      value: String(out.metrics.wireRatio),
      met: wire / Math.max(1, moved) <= 1.1,
    },
    { what: 'hub CPU over the phase', target: 'reported', value: msf(hubCpuMs) },
  );
}
