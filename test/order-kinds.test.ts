/**
 * The order kinds on the engine (hub/orders/engine.ts) pass the acceptance suite
 * (test/fixtures/order-kind-suite.ts), each given and withdrawn as an operator does: a DataObject
 * applied and deleted, an AgentUpgrade pushed, applied and deleted, and image staging as the
 * images gate hands it over (hub/images/staging.ts `setPlacement`). Workloads are written by the
 * scheduler's spec writer, with the edge's labels (test/placements.test.ts and others).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { readSpecAgentUpgrade, readSpecData } from '../core/mailbox.js';
import { AGENT_UPGRADE_ORDER, DATA_ORDERS, IMAGE_STAGING_ORDER } from '../core/orders/kinds.js';
import { readSpecStaging } from '../core/staging.js';
import type { Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { adminApi } from './fixtures/in-process-fleet.js';
import { orderKindSuite, SUITE_EDGE } from './fixtures/order-kind-suite.js';
import { waitFor } from './helpers.js';

const SELECT = { matchLabels: { suite: 'orders' } };

let blob: { digest: string; size: number };
orderKindSuite('data-orders', {
  kind: DATA_ORDERS,
  async setup(hub) {
    const res = await fetch(`${hub.url}/api/v1/projects/default/blobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hub.adminToken}` },
      body: Buffer.from('the bytes of the suite'),
    });
    blob = (await res.json()) as typeof blob;
  },
  async order(hub) {
    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'DataObject',
          metadata: { name: 'suite-data' },
          spec: { version: 'v1', digest: blob.digest, size: blob.size, path: 'suite/file.txt', edgeSelector: SELECT },
        },
      ],
    });
  },
  async withdraw(hub) {
    await adminApi(hub, 'DELETE', '/api/v1/projects/default/dataobjects/suite-data');
  },
  async settled(hub) {
    await waitFor(
      async () =>
        (await adminApi(hub, 'GET', '/api/v1/projects/default/dataobjects/suite-data')).status?.delivered === 1,
      { what: 'suite-data delivered to the edge' },
    );
  },
  read: (doc) => {
    const orders = readSpecData(doc);
    return Object.keys(orders).length ? new Map(Object.entries(orders)) : undefined;
  },
  rows: (hub, edge) => (hub.state.dataProgress.byObject('suite-data').has(edge) ? 1 : 0),
});

orderKindSuite('image-staging', {
  kind: IMAGE_STAGING_ORDER,
  // What the images gate hands over for a prestage placement (its own tests: test/images-prestage.test.ts).
  async order(hub) {
    hub.imageStaging.setPlacement(
      'default/suite',
      new Map([[SUITE_EDGE, { placement: 'default/suite', budgetBytes: 1_000_000, images: [] }]]),
    );
  },
  async withdraw(hub) {
    hub.imageStaging.setPlacement('default/suite', new Map());
  },
  read: (doc) => {
    const groups = readSpecStaging(doc)?.groups;
    return groups?.length ? groups : undefined;
  },
  rows: (hub, edge) => hub.state.imageStaging.ordersOf(edge).length + (hub.state.imageStaging.reported(edge) ? 1 : 0),
});

let upgrade: Record<string, unknown> | undefined;
orderKindSuite('agent-upgrade', {
  kind: AGENT_UPGRADE_ORDER,
  async setup(hub: Hub, dir: string) {
    // A stand-in binary that reports a version newer than the agent's, as `agent push` checks.
    const binary = path.join(dir, 'outpost-9.9.0');
    fs.writeFileSync(binary, '#!/bin/sh\necho "outpost 9.9.0 (commit suite)"\n', { mode: 0o755 });
    const r = await runCli(['agent', 'push', binary, '--name', 'suite-upgrade', '-l', 'suite=orders'], {
      env: { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken },
    });
    if (r.code !== 0) throw new Error(`agent push failed: ${r.stderr}`);
    upgrade = parse(r.stdout) as Record<string, unknown>;
  },
  async order(hub) {
    await adminApi(hub, 'POST', '/api/v1/apply', { objects: [upgrade] });
    hub.upgrades.tick();
  },
  async withdraw(hub) {
    await adminApi(hub, 'DELETE', '/api/v1/projects/default/agentupgrades/suite-upgrade');
    hub.upgrades.tick();
  },
  read: (doc) => readSpecAgentUpgrade(doc),
  rows: (hub, edge) =>
    (hub.state.agentUpgrades.order(edge) ? 1 : 0) + (hub.state.agentUpgrades.progress().has(edge) ? 1 : 0),
});
