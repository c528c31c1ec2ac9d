/**
 * The edge's inventory (issue 15, item 17) with real hub and edge processes: disks, NICs, CPU model
 * and DMI facts read from this host's /proc and /sys reach `describe edge`, and the labels the hub
 * derives from them (`inventory.outpost.dev/...`) select edges for a placement; operators cannot
 * set labels under that prefix.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readHardware } from '../edge/hardware.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { startFleet } from './fixtures/edge-procs.js';
import { tempDir } from './helpers.js';
import { cli, type HubProc, type Proc } from './procs.js';

let dir: string;
let pids: string;
let hub: HubProc;
let edge: Proc;

beforeAll(async () => {
  dir = tempDir();
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  // Selected by inventory facts only: the edge has no label of its own that matches.
  ({ hub, edge } = await startFleet({
    dir,
    edgeName: 'inv-1',
    labels: { site: 'x' },
    objects: [
      hostPod('inv', 'sleep 600', { pidDir: pids }),
      {
        kind: 'Placement',
        metadata: { name: 'by-inventory' },
        spec: {
          workloads: ['inv'],
          edgeSelector: {
            matchLabels: {
              'inventory.outpost.dev/runtime.process': 'true',
              'inventory.outpost.dev/arch': os.arch(),
              'inventory.outpost.dev/cpus': String(os.cpus().length),
            },
          },
        },
      },
    ],
    placement: 'by-inventory',
    ready: 1,
  }));
}, 120_000);

afterAll(async () => {
  await hubApi(hub, 'DELETE', '/api/v1/projects/default/placements/by-inventory').catch(() => undefined);
  await edge?.kill('SIGTERM');
  await hub?.proc.kill('SIGTERM');
  killHostWorkloads(pids);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('edge inventory', () => {
  it('shows disks, NICs and the CPU model in describe edge, with the derived labels', async () => {
    const hw = readHardware();
    const r = await cli(['describe', 'edge', 'inv-1'], {
      OUTPOST_HUB: hub.url,
      OUTPOST_TOKEN: hub.token,
      OUTPOST_CONFIG: path.join(dir, 'none.json'),
    });
    expect(r.code).toBe(0);
    if (hw.cpuModel) expect(r.stdout).toContain(`CPU model:`);
    for (const d of hw.disks) expect(r.stdout).toContain(d.name);
    for (const n of hw.nics) expect(r.stdout).toContain(n.name);
    expect(r.stdout).toContain('Inventory labels (selectable by placements):');
    expect(r.stdout).toContain('inventory.outpost.dev/runtime.process=true');
    const api = await hubApi(hub, 'GET', '/api/v1/projects/default/edges/inv-1');
    expect(api.json.status.inventory.disks).toEqual(hw.disks);
    expect(api.json.status.inventoryLabels['inventory.outpost.dev/disks']).toBe(String(hw.disks.length));
  });

  it('refuses labels under inventory.outpost.dev/ set by an operator', async () => {
    const r = await hubApi(hub, 'POST', '/api/v1/projects/default/edges/inv-1/labels', {
      labels: { 'inventory.outpost.dev/arch': 'arm64' },
    });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(r.json)).toContain('is reserved');
    const t = await hubApi(hub, 'POST', '/api/v1/tokens/join', { labels: { 'inventory.outpost.dev/ssd': 'true' } });
    expect(t.status).toBeGreaterThanOrEqual(400);
  });
});
