/**
 * DataObjects across hub replicas (issue #22): three `outpost hub` processes on one PostgreSQL,
 * three real edges (process driver), one served by each replica. The replicas' blob files are one
 * directory (`--blob-dir`, a shared filesystem in production).
 *
 * 1. A DataObject published through replica 1 is delivered to the edges every replica serves, and
 *    `get dataobjects` / `describe` through each replica shows `delivered 3/3` (the edges' progress
 *    is projected into a table at report time, not read from the answering process's documents).
 * 2. The replica serving an edge is killed -9: the edge moves to another replica and keeps its
 *    file (never removed, the same inode) and does not download it again (its transfer metric):
 *    the new replica writes the data orders into its spec before it answers the handshake.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeLocal, edgeLocalMetric } from './fixtures/edge-local.js';
import { killHostWorkloads } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { connectedTo, startReplicaEdges, startReplicas } from './fixtures/replicas.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, type HubProc, type Proc } from './procs.js';

const server = new TestPostgres();
const EDGES = ['d-e1', 'd-e2', 'd-e3'];
const SIZE = 2 * 1024 * 1024;
let dir: string;
let hubs: HubProc[] = [];
const edges = new Map<string, Proc>();
const edgeDir = (e: string) => path.join(dir, e);
const objectFile = (e: string) => path.join(edgeDir(e), 'data', 'objects', 'models', 'm.bin');
const envOf = (h: HubProc) => ({ OUTPOST_HUB: h.url, OUTPOST_TOKEN: h.token });

async function status(h: HubProc): Promise<{ summary: string; edges: { edge: string; state: string }[] }> {
  const r = await cli(['get', 'dataobject', 'model', '-o', 'json'], envOf(h));
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).status;
}

beforeAll(async () => {
  dir = tempDir('outpost-replicas-data-');
  await server.start();
  const url = server.createDatabase('hub');
  // One blob directory for the replicas (--blob-dir, a shared filesystem in production: docs/operations.md,
  // "HA and scale-out"): an edge downloads the DataObject's bytes from the replica that serves it.
  const blobs = path.join(dir, 'blobs');
  hubs = await startReplicas(dir, 3, url, ['--blob-dir', blobs]);
  await startReplicaEdges(hubs, EDGES, { fleet: 'd' }, edgeDir, edges);
  for (const [i, e] of EDGES.entries()) await connectedTo(edgeDir(e), hubs[i]!, `${e} connected to replica ${i + 1}`);
}, 120_000);

afterAll(async () => {
  for (const p of edges.values()) await p.kill('SIGTERM').catch(() => undefined);
  killHostWorkloads(path.join(dir, 'pids'));
  for (const h of hubs) await h.proc.kill('SIGTERM').catch(() => undefined);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('DataObjects across three hub replicas on one PostgreSQL', () => {
  it('published through replica 1: delivered to the edges of every replica, delivered 3/3 through each', async () => {
    const file = path.join(dir, 'payload.bin');
    fs.writeFileSync(file, Buffer.alloc(SIZE, 'a'));
    const r = await cli(
      ['data', 'publish', '-f', file, '--name', 'model', '-l', 'fleet=d', '--path', 'models/m.bin'],
      envOf(hubs[0]),
    );
    expect(r.code, r.stderr).toBe(0);
    for (const e of EDGES)
      await waitFor(() => fs.existsSync(objectFile(e)) && fs.statSync(objectFile(e)).size === SIZE, {
        timeout: 30_000,
        what: `the file on ${e}`,
      });
    for (const h of hubs) {
      await waitFor(async () => (await status(h)).summary === 'delivered 3/3', {
        timeout: 20_000,
        what: `delivered 3/3 through ${h.url}`,
      });
      const d = await cli(['describe', 'dataobject', 'model'], envOf(h));
      expect(d.stdout).toMatch(/Summary:\s+delivered 3\/3/);
      for (const e of EDGES) expect(d.stdout).toMatch(new RegExp(`${e}\\s+Delivered v1`));
    }
  }, 90_000);

  it('an edge whose replica is killed moves to another and keeps its file: never removed, not downloaded again', async () => {
    const moved = EDGES[1];
    const f = objectFile(moved);
    const inode = fs.statSync(f).ino;
    expect(await edgeLocalMetric(edgeDir(moved), 'outpost_edge_transfer_bytes{direction="down"}')).toBe(SIZE);
    // Watch the file through the move: any moment it is absent or another file is a withdrawn order.
    const changes: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        try {
          const ino = fs.statSync(f).ino;
          if (ino !== inode) changes.push(`inode ${ino}`);
        } catch {
          changes.push('absent');
        }
        await new Promise((res) => setTimeout(res, 5));
      }
    })();
    await hubs[1].proc.kill('SIGKILL');
    await waitFor(
      async () => {
        const s = await edgeLocal(edgeDir(moved), '/status');
        return s.connection === 'connected' && s.hub === hubs[2].url;
      },
      { timeout: 60_000, what: `${moved} connected to replica 3` },
    );
    // Past the delivery pass (DELIVERY_TICK_MS) on the new replica and the edge's reaction to it.
    await new Promise((res) => setTimeout(res, 7_000));
    watching = false;
    await watcher;
    expect(changes.slice(0, 5)).toEqual([]);
    expect(await edgeLocalMetric(edgeDir(moved), 'outpost_edge_transfer_bytes{direction="down"}')).toBe(SIZE);
    for (const h of [hubs[0], hubs[2]])
      await waitFor(async () => (await status(h)).summary === 'delivered 3/3', {
        timeout: 20_000,
        what: `delivered 3/3 through ${h.url} after the move`,
      });
  }, 90_000);
});
