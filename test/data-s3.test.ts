/**
 * Issue 20, test 4: the hub's S3 sink forwards the files a workload exported to an S3-compatible
 * bucket (s3rver, test/fixtures/s3.ts) with the hub's credentials; real hub and edge processes.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EGRESS_ANNOTATION } from '../core/data.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { S3_TEST_CREDENTIALS, startS3 } from './fixtures/s3.js';
import { tempDir, waitFor } from './helpers.js';
import { freePort, Proc, startEdgeProc, type HubProc } from './procs.js';

const BUCKET = 'site-data';

let dir: string;
let edgeDir: string;
let pids: string;
let s3: Awaited<ReturnType<typeof startS3>>;
let hub: HubProc;
let hubProc: Proc;
let edge: Proc;
let client: S3Client;

const sha256 = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

beforeAll(async () => {
  dir = tempDir('outpost-data-s3-');
  edgeDir = path.join(dir, 'edge');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  fs.mkdirSync(path.join(dir, 's3'));
  s3 = await startS3(path.join(dir, 's3'), BUCKET);
  client = new S3Client({
    region: 'us-east-1',
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  const port = await freePort();
  const hubDir = path.join(dir, 'hub');
  // The credentials are the hub's (its environment); the edge is never given them.
  hubProc = new Proc(
    [
      'hub',
      '--data',
      hubDir,
      '--listen',
      `127.0.0.1:${port}`,
      '--insecure-http',
      '--data-sink-s3-bucket',
      BUCKET,
      '--data-sink-s3-endpoint',
      s3.endpoint,
      '--data-sink-s3-prefix',
      'outpost/',
    ],
    S3_TEST_CREDENTIALS,
  );
  const url = await waitFor(() => /listening on (\S+)/.exec(hubProc.err)?.[1], { timeout: 30_000, what: 'hub' });
  hub = { proc: hubProc, url, token: fs.readFileSync(path.join(hubDir, 'admin.token'), 'utf8').trim() };
  const join = await hubApi(hub, 'POST', '/api/v1/tokens/join', { labels: { site: 'a' } });
  edge = await startEdgeProc(edgeDir, [
    '--hub',
    hub.url,
    '--join-token',
    join.json.token,
    '--name',
    'e1',
    '--driver',
    'process',
  ]);
}, 60_000);

afterAll(async () => {
  await edge?.kill('SIGTERM').catch(() => undefined);
  await hubProc?.kill('SIGTERM').catch(() => undefined);
  client?.destroy();
  await s3?.close();
  killHostWorkloads(pids);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the S3 sink (real processes, s3rver)', () => {
  it('receives every exported file, keyed by project, edge, workload and path, with its digest', async () => {
    const script = `for i in 1 2 3; do head -c 300000 /dev/urandom > $OUTPOST_EXPORT_DIR/.p && mkdir -p $OUTPOST_EXPORT_DIR/day && mv $OUTPOST_EXPORT_DIR/.p $OUTPOST_EXPORT_DIR/day/r$i.bin; done; exec sleep 3600`;
    const w = hostPod('logger', `sh -c '${script}'`, { pidDir: pids });
    (w.spec.manifests[0].metadata as Record<string, unknown>).annotations = {
      [EGRESS_ANNOTATION]: JSON.stringify([{ target: 'logs' }]),
    };
    const applied = await hubApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        w,
        {
          kind: 'Placement',
          metadata: { name: 'logger' },
          spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['logger'] },
        },
      ],
    });
    expect(applied.status).toBe(200);
    const keys = await waitFor(
      async () => {
        const r = await client.send(new ListObjectsV2Command({ Bucket: BUCKET }));
        const k = (r.Contents ?? []).map((c) => c.Key!).sort();
        return k.length === 3 ? k : null;
      },
      { timeout: 90_000, what: 'three objects in the bucket' },
    );
    expect(keys).toEqual([1, 2, 3].map((i) => `outpost/default/e1/logger/logs/day/r${i}.bin`));
    const src = path.join(edgeDir, 'data', 'export', 'logger', 'logs', 'day');
    for (const [i, key] of keys.entries()) {
      const o = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      const body = Buffer.from(await o.Body!.transformToByteArray());
      const want = sha256(fs.readFileSync(path.join(src, `r${i + 1}.bin`)));
      expect(sha256(body)).toBe(want);
      expect(o.Metadata?.['outpost-digest']).toBe(want);
    }
    expect(fs.readFileSync(path.join(edgeDir, 'edge.json'), 'utf8')).not.toMatch(/S3RVER/);
  }, 180_000);
});
