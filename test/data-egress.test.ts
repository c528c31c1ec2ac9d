/**
 * Issue 20, test 1: files a workload exports, between real `outpost hub` and `outpost edge`
 * processes (process driver) over a rate-limited loopback link that counts the bytes on the wire
 * (test/fixtures/link-proxy.ts). A workload writes 100 files (200 MB in all) into its export
 * directory; the edge and the hub are each killed -9 once during the upload; every file arrives
 * once with its digest, the wire carries at most 1.1x the data, and an edge restarted afterwards
 * sends nothing again (the ledger in its replica). `outpost data ls|get` read them back.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EGRESS_ANNOTATION } from '../core/data.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { startOverLink, type LinkProxy } from './fixtures/link-proxy.js';
import { tempDir, waitFor } from './helpers.js';
import { edgeLocal, edgeLocalMetric } from './fixtures/edge-local.js';
import { cli, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

const FILES = 100;
const FILE_SIZE = 2 * 1024 * 1024;
const TOTAL = FILES * FILE_SIZE;
/** 25 MB/s: the 200 MB take ~8 s of link time, long enough to kill each side in the middle. */
const RATE = 25 * 1024 * 1024;

let dir: string;
let hubDir: string;
let edgeDir: string;
let pids: string;
let hubPort: number;
let hub: HubProc;
let edge: Proc;
let link: LinkProxy;

function sha256(file: string): string {
  return `sha256:${createHash('sha256').update(fs.readFileSync(file)).digest('hex')}`;
}

interface Listed {
  workload: string;
  path: string;
  size: number;
  digest: string;
}

async function listed(): Promise<Listed[]> {
  const r = await hubApi(hub, 'GET', '/api/v1/projects/default/edges/e1/data-files');
  return r.status === 200 ? (r.json.items as Listed[]) : [];
}

beforeAll(async () => {
  dir = tempDir('outpost-data-egress-');
  hubDir = path.join(dir, 'hub');
  edgeDir = path.join(dir, 'edge');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  ({ hubPort, hub, link, edge } = await startOverLink({
    hubDir,
    edgeDir,
    rate: RATE,
    name: 'e1',
    labels: { site: 'a' },
  }));
}, 60_000);

afterAll(async () => {
  await edge?.kill('SIGTERM').catch(() => undefined);
  await hub?.proc.kill('SIGTERM').catch(() => undefined);
  await link?.close();
  killHostWorkloads(pids);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('workload files uploaded to the hub (real processes)', () => {
  it('a workload without a valid declaration is refused at apply, naming the field', async () => {
    const w = hostPod('bad', 'sleep 1', { pidDir: pids });
    (w.spec.manifests[0].metadata as Record<string, unknown>).annotations = {
      [EGRESS_ANNOTATION]: '[{"target": "Clips", "mode": "copy"}]',
    };
    const r = await hubApi(hub, 'POST', '/api/v1/apply', { objects: [w] });
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.json)).toMatch(/target must be a DNS label/);
  });

  it('100 files (200 MB) arrive once each with their digest though the edge and the hub are each killed once', async () => {
    const list = Array.from({ length: FILES }, (_, i) => String(i + 1).padStart(3, '0')).join(' ');
    // Written to a dot-file and renamed: the agent never takes a file half-written.
    const script = `for i in ${list}; do head -c ${FILE_SIZE} /dev/urandom > $OUTPOST_EXPORT_DIR/.part && mv $OUTPOST_EXPORT_DIR/.part $OUTPOST_EXPORT_DIR/clip-$i.bin; done; exec sleep 3600`;
    const w = hostPod('camera', `sh -c '${script}'`, { pidDir: pids });
    (w.spec.manifests[0].metadata as Record<string, unknown>).annotations = {
      [EGRESS_ANNOTATION]: JSON.stringify([{ source: '/export', target: 'clips', mode: 'copy', maxBytes: '1GiB' }]),
    };
    const wire0 = link.bytes.toHub;
    const applied = await hubApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        w,
        {
          kind: 'Placement',
          metadata: { name: 'camera' },
          spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['camera'] },
        },
      ],
    });
    expect(applied.status).toBe(200);

    await waitFor(async () => (await listed()).length >= 20, { timeout: 90_000, what: '20 files on the hub' });
    await edge.kill('SIGKILL');
    const atEdgeKill = (await listed()).length;
    expect(atEdgeKill).toBeLessThan(FILES);
    edge = await startEdgeProc(edgeDir);
    // What still waits on the edge reaches the hub in its heartbeats (one comes with the connection).
    const q = await waitFor(
      async () => {
        const queue = (await hubApi(hub, 'GET', '/api/v1/projects/default/edges/e1/data-files')).json?.queue;
        return queue?.files > 0 ? (queue as { files: number; bytes: number }) : null;
      },
      { timeout: 30_000, what: "the edge's upload queue on the hub" },
    );
    expect(q.bytes).toBe(q.files * FILE_SIZE);

    await waitFor(async () => (await listed()).length >= 60, { timeout: 90_000, what: '60 files on the hub' });
    await hub.proc.kill('SIGKILL');
    // The hub down: what waits is shown on site.
    const waiting = await waitFor(
      async () => {
        const e = (await edgeLocal(edgeDir, '/status')).exports?.find(
          (x: { workload: string }) => x.workload === 'camera',
        );
        return e?.queuedFiles > 0 ? e : null;
      },
      { timeout: 30_000, what: 'the upload queue in the local status' },
    );
    expect(waiting.queuedBytes).toBe(waiting.queuedFiles * FILE_SIZE);
    expect((await cli(['edge', 'local', 'status', '--data', edgeDir])).stdout).toMatch(
      /EXPORTS \(files to the hub\)[^\n]*\ncamera  \d+  \d+  \d+/,
    );
    hub = await startHubProc(hubDir, hubPort, ['--insecure-http']);
    expect((await listed()).length).toBeLessThan(FILES);

    const files = await waitFor(
      async () => {
        const l = await listed();
        return l.length === FILES ? l : null;
      },
      { timeout: 120_000, what: 'all 100 files on the hub' },
    );
    const exportDir = path.join(edgeDir, 'data', 'export', 'camera', 'clips');
    for (const f of files) {
      expect(f.workload).toBe('camera');
      const src = path.join(exportDir, f.path.replace(/^clips\//, ''));
      expect(f.size).toBe(FILE_SIZE);
      expect(f.digest).toBe(sha256(src));
      expect(sha256(path.join(hubDir, 'blobs', 'sha256', f.digest.slice(7)))).toBe(f.digest);
    }
    expect(new Set(files.map((f) => f.path)).size).toBe(FILES);
    await waitFor(
      async () => (await hubApi(hub, 'GET', '/api/v1/projects/default/edges/e1/data-files')).json?.queue?.files === 0,
      { timeout: 30_000, what: 'the queue empty on the hub, from a heartbeat' },
    );
    const wire = link.bytes.toHub - wire0;
    console.info(`edge -> hub: ${wire} bytes on the wire for ${TOTAL} of files (${(wire / TOTAL).toFixed(3)}x)`);
    expect(wire).toBeGreaterThanOrEqual(TOTAL);
    expect(wire).toBeLessThanOrEqual(TOTAL * 1.1);

    // Copy mode: the files stay; the edge's blob store gives back what the hub holds.
    expect(fs.readdirSync(exportDir).filter((f) => f.endsWith('.bin'))).toHaveLength(FILES);
    await waitFor(() => fs.readdirSync(path.join(edgeDir, 'blobs', 'sha256')).length === 0, {
      what: "the edge's store emptied",
    });

    // A restart sends nothing again: the ledger knows every file by size and modification time.
    await edge.kill('SIGTERM');
    const wire1 = link.bytes.toHub;
    edge = await startEdgeProc(edgeDir);
    // Three complete scans of the export directory by the new process: a file it took for new
    // would have been queued by the first and its bytes on the way by the third.
    await waitFor(
      async () => ((await edgeLocalMetric(edgeDir, 'outpost_edge_egress_scans').catch(() => 0)) ?? 0) >= 3,
      {
        what: 'three scans of the export directory after the restart',
      },
    );
    expect(link.bytes.toHub - wire1).toBeLessThan(FILE_SIZE / 2);
    expect((await listed()).length).toBe(FILES);
  }, 300_000);

  it('outpost data ls and get read the files back', async () => {
    const env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
    expect((await cli(['login', '--hub', hub.url, '--token', hub.token], env)).code).toBe(0);
    const ls = await cli(['data', 'ls', 'edge/e1', 'camera', '-o', 'json'], env);
    expect(ls.code).toBe(0);
    const items = JSON.parse(ls.stdout) as Listed[];
    expect(items).toHaveLength(FILES);
    const out = path.join(dir, 'got.bin');
    const get = await cli(['data', 'get', 'edge/e1', 'camera', 'clips/clip-042.bin', '-o', out], env);
    expect(get.code, get.stderr).toBe(0);
    expect(sha256(out)).toBe(sha256(path.join(edgeDir, 'data', 'export', 'camera', 'clips', 'clip-042.bin')));
    const missing = await cli(['data', 'get', 'edge/e1', 'camera', 'clips/nope.bin', '-o', out], env);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/has exported no file clips\/nope\.bin: see `outpost data ls edge\/e1 camera`/);
  }, 60_000);
});
