/**
 * Issue 20, test 2: the edge is offline while its workload writes into its export directory
 * (real hub and edge processes, the link cut by a proxy). The queue waits on disk within the
 * export's maxBytes (refuse-new: what does not fit stays in the export directory), the workload is
 * reported Degraded with the reason, and on reconnect everything is uploaded, once; mode `move`
 * empties the export directory once the hub holds the files.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EGRESS_ANNOTATION } from '../core/data.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { tempDir, waitFor } from './helpers.js';
import { edgeLocal, edgeLocalMetric } from './fixtures/edge-local.js';
import { CuttableProxy, freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

const MiB = 1024 * 1024;
const FILES = 6;

let dir: string;
let edgeDir: string;
let pids: string;
let hub: HubProc;
let edge: Proc;
let proxy: CuttableProxy;

const local = (p: string) => edgeLocal(edgeDir, p);

/** What `yes N | head -c 1MiB` writes. */
function contentDigest(n: number): string {
  const line = Buffer.from(`${n}\n`);
  const b = Buffer.alloc(MiB);
  for (let i = 0; i < MiB; i += line.length) line.copy(b, i);
  return `sha256:${createHash('sha256').update(b).digest('hex')}`;
}

const workloadStatus = async () =>
  ((await local('/status')).workloads as { name: string; status: { phase: string; message?: string } | null }[]).find(
    (w) => w.name === 'sensor',
  )?.status;

beforeAll(async () => {
  dir = tempDir('outpost-data-offline-');
  edgeDir = path.join(dir, 'edge');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  const port = await freePort();
  hub = await startHubProc(path.join(dir, 'hub'), port, ['--insecure-http']);
  proxy = new CuttableProxy(port);
  await proxy.listen();
  const join = await hubApi(hub, 'POST', '/api/v1/tokens/join', { labels: { site: 'a' } });
  edge = await startEdgeProc(edgeDir, [
    '--hub',
    `http://127.0.0.1:${proxy.port}`,
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
  await hub?.proc.kill('SIGTERM').catch(() => undefined);
  await proxy?.close();
  killHostWorkloads(pids);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('exports written while the edge is offline (real processes)', () => {
  it('wait on disk within maxBytes, report Degraded at the bound, and all arrive after reconnect', async () => {
    const trigger = path.join(dir, 'go');
    const script = `while [ ! -e ${trigger} ]; do sleep 0.2; done; for i in 1 2 3 4 5 6; do yes $i | head -c ${MiB} > $OUTPOST_EXPORT_DIR/.p && mv $OUTPOST_EXPORT_DIR/.p $OUTPOST_EXPORT_DIR/f$i; sleep 0.3; done; exec sleep 3600`;
    const w = hostPod('sensor', `sh -c '${script}'`, { pidDir: pids });
    (w.spec.manifests[0].metadata as Record<string, unknown>).annotations = {
      [EGRESS_ANNOTATION]: JSON.stringify([{ target: 'readings', mode: 'move', maxBytes: 3 * MiB }]),
    };
    const applied = await hubApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        w,
        {
          kind: 'Placement',
          metadata: { name: 'sensor' },
          spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['sensor'] },
        },
      ],
    });
    expect(applied.status).toBe(200);
    await waitFor(async () => (await workloadStatus())?.phase === 'Ready', { timeout: 60_000, what: 'sensor Ready' });

    proxy.sever();
    await waitFor(async () => (await local('/status')).connection !== 'connected', { what: 'the edge offline' });
    fs.writeFileSync(trigger, '');

    // The bound: three files queued (3 MiB), the other three wait in the export directory.
    const st = await waitFor(
      async () => {
        const s = await workloadStatus();
        return s?.phase === 'Degraded' ? s : null;
      },
      { timeout: 60_000, what: 'sensor Degraded' },
    );
    expect(st.message).toMatch(
      /export "readings": the upload queue holds 3145728 bytes of its 3145728-byte bound \(maxBytes\); \d newer file\(s\) wait/,
    );
    const exportDir = path.join(edgeDir, 'data', 'export', 'sensor', 'readings');
    await waitFor(() => fs.readdirSync(exportDir).filter((f) => /^f\d$/.test(f)).length === FILES, {
      what: 'all six written',
    });
    // Two more complete scans of the export directory: the bound still holds.
    const scans = (await edgeLocalMetric(edgeDir, 'outpost_edge_egress_scans'))!;
    await waitFor(async () => (await edgeLocalMetric(edgeDir, 'outpost_edge_egress_scans'))! >= scans + 2, {
      what: 'two more scans of the export directory',
    });
    const stored = fs.readdirSync(path.join(edgeDir, 'blobs', 'sha256'));
    expect(stored).toHaveLength(3);
    expect(fs.readdirSync(path.join(edgeDir, 'blobs', 'outbox'))).toHaveLength(3);
    expect((await hubApi(hub, 'GET', '/api/v1/projects/default/edges/e1/data-files')).json.items).toHaveLength(0);

    proxy.heal();
    const files = await waitFor(
      async () => {
        const items = (await hubApi(hub, 'GET', '/api/v1/projects/default/edges/e1/data-files')).json.items as {
          path: string;
          digest: string;
          size: number;
        }[];
        return items.length === FILES ? items : null;
      },
      { timeout: 90_000, what: 'six files on the hub' },
    );
    for (const f of files) {
      const n = Number(/f(\d)$/.exec(f.path)![1]);
      expect(f.path).toBe(`readings/f${n}`);
      expect(f.size).toBe(MiB);
      expect(f.digest).toBe(contentDigest(n));
    }
    // move: the hub holds them, so the export directory and the edge's store are emptied.
    await waitFor(() => fs.readdirSync(exportDir).length === 0, { what: 'the export directory emptied' });
    await waitFor(() => fs.readdirSync(path.join(edgeDir, 'blobs', 'sha256')).length === 0, {
      what: "the edge's store emptied",
    });
    await waitFor(async () => (await workloadStatus())?.phase === 'Ready', { what: 'sensor Ready again' });
  }, 240_000);
});
