/**
 * @module blobs: one 100 MB blob (BENCH_BLOB_MB to change it) pushed to the hub through the API,
 * then fetched by every simulated edge at once over its own sync connection (a `blob-get` stream,
 * sync/transfer.ts; the simulated edge hashes the bytes and checks the digest, keeping none).
 * Measured: the time until the last edge has every byte, the hub's CPU over that phase, and the
 * bytes on the edges' sockets against the blob bytes delivered (frame and protocol overhead).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { HubClient } from '../../cli/client.js';
import { msf } from '../lib/results.js';
import { connectAll, PhaseMeter, setupFleet, teardown, type Scenario } from './common.js';

export const blobs: Scenario = async (ctx, out) => {
  const mb = Number(process.env.BENCH_BLOB_MB ?? 100);
  const size = mb * 1024 * 1024;
  const s = await setupFleet(ctx, out);
  try {
    await connectAll(ctx, s);
    const file = path.join(ctx.runDir, 'blob.bin');
    const fd = fs.openSync(file, 'w');
    for (let n = 0; n < size; n += 4 * 1024 * 1024) fs.writeSync(fd, randomBytes(Math.min(4 * 1024 * 1024, size - n)));
    fs.closeSync(fd);
    const t0 = Date.now();
    const blob = await new HubClient({ hub: s.hub.url, token: s.hub.adminToken }).upload<{ digest: string }>(
      '/api/v1/projects/default/blobs',
      file,
      {},
    );
    out.metrics.uploadMs = Date.now() - t0;
    ctx.log(`pushed ${mb} MB in ${msf(Date.now() - t0)}; ${ctx.edges} edges fetch it`);

    const phase = new PhaseMeter(s, 'fetch');
    const t1 = Date.now();
    const per = (
      await s.fleet.each<{ ms: number; bytes: number; socketBytes: number; ok: boolean }[]>(
        'fetchBlob',
        s.fleet.names,
        { digest: blob.digest },
      )
    ).flat();
    const wallMs = Date.now() - t1;
    const cpu = phase.finish(out);
    const delivered = per.reduce((a, r) => a + r.bytes, 0);
    const wire = per.reduce((a, r) => a + r.socketBytes, 0);
    const bad = per.filter((r) => !r.ok || r.bytes !== size).length;
    out.metrics.blobBytes = size;
    out.metrics.fetchWallMs = wallMs;
    out.metrics.hubCpuMs = Math.round(cpu.hubCpuMs);
    out.metrics.deliveredBytes = delivered;
    out.metrics.socketBytes = wire;
    out.metrics.wireRatio = +(wire / Math.max(1, delivered)).toFixed(4);
    out.metrics.slowestEdgeMs = Math.max(...per.map((r) => r.ms));
    out.metrics.failed = bad;
    out.targets.push(
      {
        what: `every edge has the ${mb} MB blob, digest checked`,
        target: `${ctx.edges}/${ctx.edges}`,
        value: `${ctx.edges - bad}/${ctx.edges}`,
        met: bad === 0,
      },
      {
        what: 'bytes on the wire / blob bytes delivered',
        target: '<= 1.1',
        value: String(out.metrics.wireRatio),
        met: wire / Math.max(1, delivered) <= 1.1,
      },
      { what: `time until ${ctx.edges} edges have it`, target: 'reported', value: msf(wallMs) },
      { what: 'hub CPU over the transfer', target: 'reported', value: msf(cpu.hubCpuMs) },
    );
    fs.rmSync(file, { force: true });
  } finally {
    await teardown(s);
  }
};
