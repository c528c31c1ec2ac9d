/**
 * @module prestage (issue #19): an image of BENCH_IMAGE_MB (default 50: one random layer of that
 * size, a config and a manifest) pushed to the hub's image cache as the CLI does (blobs, then the
 * tag), and a workload naming it `HUB/default/bench/app:v1` placed on every simulated edge with
 * `rollout.prestage: true`. The hub pins the tag to its digest and orders the image into each
 * edge's spec; each simulated edge brings every blob over its own connection (digest checked,
 * bytes not kept: no podman here) and reports the image Present (bench/edge-worker.ts
 * `stageImages`); only then does the rollout write the workload, which the edge reports Ready.
 * Measured: the time until every edge has staged, the time until the rollout is Complete, the hub's
 * CPU, and the bytes on the edges' sockets against the image bytes.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { HubClient } from '../../cli/client.js';
import { until } from '../lib/sys.js';
import { msf } from '../lib/results.js';
import { connectAll, PhaseMeter, remaining, setupFleet, teardown, type Scenario } from './common.js';

type PerEdge = { ms: number; bytes: number; socketBytes: number; ok: boolean };

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

export const prestage: Scenario = async (ctx, out) => {
  const mb = Number(process.env.BENCH_IMAGE_MB ?? 50);
  const layerSize = mb * 1024 * 1024;
  const s = await setupFleet(ctx, out);
  try {
    await connectAll(ctx, s);
    const client = new HubClient({ hub: s.hub.url, token: s.hub.adminToken });
    const push = async (file: string, type: string) =>
      (await client.upload<{ digest: string; size: number }>('/api/v1/projects/default/blobs', file, {
        'content-type': type,
      })) as { digest: string; size: number };
    const layerFile = path.join(ctx.runDir, 'layer.bin');
    const fd = fs.openSync(layerFile, 'w');
    const h = createHash('sha256');
    for (let n = 0; n < layerSize; n += 4 * 1024 * 1024) {
      const b = randomBytes(Math.min(4 * 1024 * 1024, layerSize - n));
      h.update(b);
      fs.writeSync(fd, b);
    }
    fs.closeSync(fd);
    const layer = await push(layerFile, 'application/octet-stream');
    const configFile = path.join(ctx.runDir, 'config.json');
    fs.writeFileSync(
      configFile,
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        rootfs: { type: 'layers', diff_ids: [`sha256:${h.digest('hex')}`] },
        config: {},
      }),
    );
    const config = await push(configFile, 'application/vnd.oci.image.config.v1+json');
    const manifestFile = path.join(ctx.runDir, 'manifest.json');
    fs.writeFileSync(
      manifestFile,
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: config.digest, size: config.size },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layer.digest, size: layer.size }],
      }),
    );
    const manifest = await push(manifestFile, OCI_MANIFEST);
    await s.api.request('PUT', '/projects/default/images', {
      repository: 'bench/app',
      tag: 'v1',
      manifest: manifest.digest,
    });
    for (const f of [layerFile, configFile, manifestFile]) fs.rmSync(f, { force: true });
    const imageBytes = layer.size + config.size + manifest.size;
    const host = new URL(s.hub.url).host;
    ctx.log(`pushed a ${mb} MB image; a prestaged rollout takes it to ${ctx.edges} edges`);

    const phase = new PhaseMeter(s, 'prestage');
    const t0 = Date.now();
    const staging = s.fleet.each<PerEdge[]>('stageImages', s.fleet.names, { timeoutMs: remaining(ctx) });
    staging.catch(() => undefined); // awaited below; an apply that fails must not leave it unhandled
    await s.api.request('POST', '/apply', {
      objects: [
        {
          kind: 'Workload',
          metadata: { name: 'bench-app' },
          spec: {
            manifests: [
              {
                apiVersion: 'v1',
                kind: 'Pod',
                metadata: { name: 'bench-app' },
                spec: { containers: [{ name: 'main', image: `${host}/default/bench/app:v1` }] },
              },
            ],
          },
        },
        {
          kind: 'Placement',
          metadata: { name: 'bench-prestage' },
          spec: { edgeSelector: {}, workloads: ['bench-app'], rollout: { prestage: true, maxUnavailable: '100%' } },
        },
      ],
    });
    const per = (await staging).flat();
    const stagedMs = Date.now() - t0;
    let last = '';
    await until(
      async () => {
        const p = await s.api.request<{ status?: { rollout?: { phase?: string; reason?: string } } }>(
          'GET',
          '/projects/default/placements/bench-prestage',
        );
        last = `${p.status?.rollout?.phase}: ${p.status?.rollout?.reason}`;
        return p.status?.rollout?.phase === 'Complete';
      },
      { timeoutMs: remaining(ctx), intervalMs: 100, what: () => `the rollout Complete (last: ${last})` },
    );
    const completeMs = Date.now() - t0;
    const cpu = phase.finish(out);
    const moved = per.reduce((a, r) => a + r.bytes, 0);
    const wire = per.reduce((a, r) => a + r.socketBytes, 0);
    const bad = per.filter((r) => !r.ok || r.bytes !== imageBytes).length;
    Object.assign(out.metrics, {
      imageBytes,
      movedBytes: moved,
      socketBytes: wire,
      wireRatio: +(wire / Math.max(1, moved)).toFixed(4),
      stagedWallMs: stagedMs,
      completeWallMs: completeMs,
      slowestEdgeMs: Math.max(...per.map((r) => r.ms)),
      hubCpuMs: Math.round(cpu.hubCpuMs),
      failed: bad,
    });
    out.targets.push(
      {
        what: `every edge staged the ${mb} MB image (each blob once, digest checked)`,
        target: `${ctx.edges}/${ctx.edges}`,
        value: `${ctx.edges - bad}/${ctx.edges}`,
        met: bad === 0,
      },
      {
        what: 'bytes on the wire / image bytes delivered',
        target: '<= 1.1',
        value: String(out.metrics.wireRatio),
        met: wire / Math.max(1, moved) <= 1.1,
      },
      { what: `time until ${ctx.edges} edges have staged`, target: 'reported', value: msf(stagedMs) },
      { what: 'time until the rollout is Complete (switched, Ready)', target: 'reported', value: msf(completeMs) },
      { what: 'hub CPU over the phase', target: 'reported', value: msf(cpu.hubCpuMs) },
    );
  } finally {
    await teardown(s);
  }
};
