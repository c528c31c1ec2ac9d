/**
 * @module The edge agent's composition root: enroll once, then open the local replica, start the
 * runtime driver and the reconciler (they work from the replica, hub or no hub), dial the hub
 * for as long as we run, and serve the local operator API on DATA/agent.sock.
 *
 * @example
 * const agent = await startEdgeAgent({ dataDir: '/var/lib/outpost-edge', hub: 'https://hub:7443', joinToken: T });
 */
import fs from 'node:fs';
import path from 'node:path';
import type http from 'node:http';
import client from 'prom-client';
import { edgeName, mailboxDocId, type DocId } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import type { AgentReleaseState } from '../core/resources.js';
import { materializeReport, readReport, setInventory, type ReportDoc } from '../core/mailbox.js';
import { EDGE_LAG_SAMPLE_MS, RECONCILE_PERIOD_MS } from '../core/durations.js';
import { compactIfLarge } from '../sync/compaction.js';
import { buildInfo } from '../core/version.js';
import { collectProcessMetrics } from '../core/metrics.js';
import { SyncClient } from '../sync/client.js';
import { ensureMailbox } from '../sync/mailbox.js';
import { isCorruptDatabase, quickCheck } from '../sync/sqlite.js';
import { ReplicaStore, type ReplicaStoreOptions } from '../sync/store.js';
import {
  defaultEdgeName,
  driverName,
  hubUrls,
  parseHubList,
  readEdgeConfig,
  writeEdgeConfig,
  type EdgeConfig,
} from './config.js';
import type { Driver } from './drivers/driver.js';
import { createDriver } from './drivers/index.js';
import { readDecommissioned, writeDecommissioned, type Decommissioned } from './decommission.js';
import { enroll } from './enroll.js';
import { EdgeBlobStore } from './blobs/store.js';
import { EdgeTransfers } from './blobs/transfers.js';
import { EdgeDeliveries } from './data/delivery.js';
import { EdgeEgress } from './data/egress.js';
import { HeldStopped } from './held-stopped.js';
import { collectInventory } from './inventory.js';
import { listenLocal, localApp } from './local-api.js';
import { Reconciler } from './reconciler.js';
import { createTunnelAgent } from './tunnel/index.js';
import { upgradeRoute } from './upgrade/local-route.js';
import { UpgradeOrders } from './upgrade/orders.js';
import { createPodman } from './drivers/podman/cli.js';
import { EdgeImageStaging } from './images/staging.js';
import { markHealthy, readUpgradeState, TRIAL_ENV, type UpgradeState } from './upgrade/switch.js';

const log = createLogger('edge');

export interface EdgeAgentOptions {
  dataDir: string;
  hub?: string;
  joinToken?: string;
  name?: string;
  labels?: Record<string, string>;
  driver?: string;
  kubeconfig?: string;
  /** Tests and benchmarks: a faster heartbeat. */
  heartbeatMs?: number;
  /** Bytes the blob store may hold (default DEFAULT_EDGE_BLOB_BUDGET_BYTES). */
  blobBudgetBytes?: number;
  /** Called after `outpost edge local upgrade` staged a release: close the agent and start `outpost edge` again. */
  restartForSwitch?: () => void;
}

export interface EdgeAgent {
  config: EdgeConfig;
  store: ReplicaStore;
  driver: Driver;
  reconciler: Reconciler;
  sync: SyncClient;
  blobs: EdgeBlobStore;
  transfers: EdgeTransfers;
  /** Files the workloads export (edge/data/egress.ts). */
  egress: EdgeEgress;
  /** DataObjects the hub delivers (edge/data/delivery.ts). */
  deliveries: EdgeDeliveries;
  socketPath: string;
  close(): Promise<void>;
}

export function socketPathFor(dataDir: string): string {
  return path.join(dataDir, 'agent.sock');
}

export async function startEdgeAgent(o: EdgeAgentOptions): Promise<EdgeAgent> {
  const { version } = buildInfo();
  let config = readEdgeConfig(o.dataDir);
  const requestedDriver = driverName(o.driver ?? config?.driver ?? 'process');
  if (!config) {
    if (!o.hub || !o.joinToken)
      throw new Error(
        `${o.dataDir} holds no enrolled edge: pass --hub URL and --join-token T (create one on the hub with \`outpost token create\`)`,
      );
    const name = o.name ?? defaultEdgeName();
    config = await enroll({
      dataDir: o.dataDir,
      hub: o.hub,
      joinToken: o.joinToken,
      name,
      labels: o.labels,
      driver: requestedDriver,
      inventory: collectInventory(requestedDriver, version, { kubeconfig: o.kubeconfig }),
      kubeconfig: o.kubeconfig,
    });
  } else if (o.joinToken && o.name && o.name !== config.name) {
    throw new Error(
      `${o.dataDir} already belongs to edge ${config.name}: use another --data directory to enroll ${o.name}`,
    );
  } else if (o.hub) {
    // An enrolled edge given --hub again: the hub's URLs changed (a replica added, a new address).
    // The credential and the pinned CA stay; only where to dial changes.
    const hubs = parseHubList(o.hub);
    if (hubUrls(config).join(',') !== hubs.join(',')) {
      config = { ...config, hub: hubs[0]!, ...(hubs.length > 1 ? { hubs } : { hubs: undefined }) };
      writeEdgeConfig(o.dataDir, config);
      log.info({ hubs }, 'hub URLs updated from --hub');
    }
  }
  const edge = edgeName(config.name);

  let sync: SyncClient | undefined;
  let reconciler: Reconciler | undefined;
  let orders: UpgradeOrders | undefined;
  let staging: EdgeImageStaging | undefined;
  let deliveries: EdgeDeliveries | undefined;
  const specId = mailboxDocId(edge, 'spec');
  const storeOptions = {
    afterChange: (id: DocId, origin: 'local' | 'remote') => {
      sync?.notify(id);
      // A new spec (or a hub clearing intents) is desired state: act on it now.
      if (origin === 'remote' && id === specId) {
        void reconciler?.trigger();
        // An agent upgrade order or DataObjects may have come with it (edge/upgrade/, edge/data/).
        setImmediate(() => {
          orders?.check();
          deliveries?.check();
        });
        // And an image staging order (edge/images/staging.ts).
        setImmediate(() => staging?.check());
      }
    },
  };
  const store = await openReplica(path.join(o.dataDir, 'edge.db'), storeOptions);
  ensureMailbox(store, edge, 'edge');
  store.change<ReportDoc>(mailboxDocId(edge, 'report'), (d) => {
    setInventory(
      d,
      collectInventory(config.driver, version, {
        kubeconfig: config.kubeconfig,
        agentRelease: agentReleaseOf(readUpgradeState(o.dataDir)),
      }),
    );
  });

  const driver = await createDriver(config.driver, o.dataDir, { kubeconfig: config.kubeconfig });
  try {
    await driver.start();
  } catch (err) {
    store.close();
    throw new Error(`the ${config.driver} runtime is not usable`, { cause: err });
  }
  reconciler = new Reconciler(
    store,
    edge,
    driver,
    await HeldStopped.load(path.join(o.dataDir, 'held-stopped.json')),
    undefined,
    config.sealKey,
  );
  let decommissioned: Decommissioned | undefined = readDecommissioned(o.dataDir);

  let transfersRef: EdgeTransfers | undefined;
  let egressRef: EdgeEgress | undefined;
  const registry = new client.Registry();
  collectProcessMetrics(registry, 'outpost_edge_', EDGE_LAG_SAMPLE_MS);
  new client.Gauge({
    name: 'outpost_edge_connected',
    help: '1 when the sync connection to the hub is up',
    registers: [registry],
    collect() {
      this.set(sync?.state === 'connected' ? 1 : 0);
    },
  });
  new client.Gauge({
    name: 'outpost_edge_sync_bytes_out',
    help: 'Sync bytes sent on closed connections',
    registers: [registry],
    collect() {
      this.set(sync?.totals.bytesOut ?? 0);
    },
  });
  new client.Gauge({
    name: 'outpost_edge_reconcile_passes',
    help: 'Reconciler passes since start',
    registers: [registry],
    collect() {
      this.set(reconciler?.passes ?? 0);
    },
  });

  new client.Gauge({
    name: 'outpost_edge_egress_scans',
    help: 'Completed scans of the export directories since start (docs/data.md)',
    registers: [registry],
    collect() {
      this.set(egressRef?.scans ?? 0);
    },
  });
  new client.Gauge({
    name: 'outpost_edge_transfer_bytes',
    help: 'Blob bytes moved over the hub connection since start, by direction (down: from the hub, up: to it)',
    labelNames: ['direction'],
    registers: [registry],
    collect() {
      this.set({ direction: 'down' }, transfersRef?.moved.down ?? 0);
      this.set({ direction: 'up' }, transfersRef?.moved.up ?? 0);
    },
  });

  // One URL, or the hub's replicas in order: the client moves to the next when one fails.
  const wsUrls = hubUrls(config).map((u) => `${u.replace(/^http/, 'ws')}/api/v1/sync`);
  sync = new SyncClient({
    url: wsUrls,
    token: config.credential,
    edge,
    store,
    agentVersion: version,
    ...(config.caPem ? { ca: config.caPem } : {}),
    ...(o.heartbeatMs ? { heartbeatMs: o.heartbeatMs } : {}),
    // Gauges, not history: the hub shows the upload queue from them (edge/data/egress.ts).
    metrics: () => ({ rssBytes: process.memoryUsage().rss, ...egressRef?.queueMetrics() }),
  });
  const s = sync;
  s.on('state', (state, info) => log.info({ state, ...info }, `hub connection ${state}`));
  const tunnel = createTunnelAgent({
    driver,
    reconciler,
    transport: { send: (p) => s.sendTunnel(p), bufferedAmount: () => s.bufferedAmount() },
    ...(config.driver === 'kubernetes' && config.kubeconfig ? { kubeconfig: config.kubeconfig } : {}),
    metrics: async () => ({ text: await registry.metrics(), contentType: registry.contentType }),
  });
  s.on('tunnel', (p) => tunnel.receive(p));
  s.on('state', (state) => state !== 'connected' && tunnel.disconnected());
  const r0 = reconciler;
  s.on('decommissioned', (message) => {
    if (decommissioned) return;
    decommissioned = writeDecommissioned(o.dataDir, message);
    log.error(
      { message },
      'the hub decommissioned this edge: no more syncing; workloads stopped; run outpost edge uninstall',
    );
    void (async () => {
      await s.stop();
      await r0.stop();
      await stopAll(driver);
    })();
  });

  const blobs = new EdgeBlobStore(path.join(o.dataDir, 'blobs'), o.blobBudgetBytes);
  const transfers = (transfersRef = new EdgeTransfers(
    blobs,
    (h, limits) => tunnel.open(h, limits),
    () => s.state === 'connected',
  ));
  s.on('state', (state) => state === 'connected' && transfers.kick());
  const reportIdForOrders = mailboxDocId(edge, 'report');
  orders = new UpgradeOrders({
    dataDir: o.dataDir,
    edge,
    store,
    blobs,
    transfers,
    releaseKey: config.releaseKey,
    version,
    onTrial: !!process.env[TRIAL_ENV],
    // The hub should see Switching before the agent goes away; a few seconds at most.
    reportSent: async () => {
      const until = Date.now() + 3_000;
      while (Date.now() < until && !s.inSync(reportIdForOrders)) await new Promise((r) => setTimeout(r, 100));
    },
    restart: () => (o.restartForSwitch ?? (() => log.error('this agent cannot restart itself')))(),
  });
  // Image pre-staging (issue #19): the images of a new version, over this connection, before the switch.
  const imageStaging = (staging = new EdgeImageStaging({
    edge,
    dataDir: o.dataDir,
    driver: config.driver,
    store,
    blobs,
    transfers,
    ...(config.driver === 'podman' ? { podman: createPodman() } : {}),
  }));
  s.on('state', (state) => state === 'connected' && imageStaging.check());
  const egress = new EdgeEgress({
    db: store.db,
    dataDir: o.dataDir,
    driver: config.driver,
    blobs,
    transfers,
    open: (h, limits) => tunnel.open(h, limits),
    connected: () => s.state === 'connected',
    onDegradedChange: () => void r0.trigger(),
  });
  egressRef = egress;
  reconciler.decorators.push(egress);
  deliveries = new EdgeDeliveries({ dataDir: o.dataDir, edge, driver: config.driver, store, blobs, transfers });
  reconciler.decorators.push(deliveries);
  const dataIn = deliveries;
  s.on('state', (state) => state === 'connected' && egress.record());
  if (process.env[TRIAL_ENV]) {
    // On trial after a switch (edge/upgrade/switch.ts): healthy once connected and a reconcile
    // pass after the handshake finished; the launcher then commits this binary.
    const trial = (state: string) => {
      if (state !== 'connected') return;
      s.off('state', trial);
      void r0.trigger().then(() => {
        markHealthy();
        log.info('release on trial: connected and reconciled, told the launcher');
      });
    };
    s.on('state', trial);
  }

  if (decommissioned) {
    log.error(
      { at: decommissioned.at, message: decommissioned.message },
      'this edge was decommissioned: not syncing, not running workloads; run outpost edge uninstall (docs/operations.md)',
    );
    await stopAll(driver);
  } else {
    // The replica is enough to run: reconcile before (and regardless of) the first connection.
    reconciler.start();
    egress.start();
    s.start();
    orders.check();
    imageStaging.check();
    dataIn.check();
  }

  // The edge writes its report; once the hub holds all of it, a report past the threshold
  // restarts as a new epoch (sync/compaction.ts), so a mailbox stays small however long it lives.
  const reportId = mailboxDocId(edge, 'report');
  const compactTimer = setInterval(() => {
    if (!s.inSync(reportId)) return;
    if (compactIfLarge<ReportDoc>(store, reportId, (doc) => materializeReport(readReport(doc), doc.intentSeq ?? 0)))
      s.announceEpoch(reportId);
  }, RECONCILE_PERIOD_MS);
  compactTimer.unref();

  const socketPath = socketPathFor(o.dataDir);
  let local: http.Server | undefined;
  try {
    local = await listenLocal(
      localApp({
        edge,
        // The hub URL dialled now (of the list), as https://..., not the sync endpoint.
        hub: () => s.url.replace(/^ws/, 'http').replace(/\/api\/v1\/sync$/, ''),
        store,
        driver,
        reconciler,
        connection: () => (decommissioned ? 'decommissioned' : s.state),
        lastError: () => (s.state === 'connected' ? undefined : s.lastError),
        decommissioned: () => decommissioned,
        registry,
        transfers,
        upgrade: {
          state: () => readUpgradeState(o.dataDir),
          request: (body) =>
            upgradeRoute(
              {
                dataDir: o.dataDir,
                files: blobs.files,
                releaseKey: config.releaseKey,
                version,
                restart: () => (o.restartForSwitch ?? (() => log.error('this agent cannot restart itself')))(),
              },
              body,
            ),
        },
      }),
      socketPath,
    );
  } catch (err) {
    log.error({ err, socketPath }, 'the local operator API could not start; `outpost edge local` will not work');
  }
  log.info({ edge, hub: config.hub, driver: config.driver, socketPath }, 'edge agent running');

  const r = reconciler;
  return {
    config,
    store,
    driver,
    reconciler: r,
    sync: s,
    blobs,
    transfers,
    egress,
    deliveries: dataIn,
    socketPath,
    async close() {
      clearInterval(compactTimer);
      transfers.stop();
      staging?.stop();
      await egress.stop();
      await dataIn.stop();
      await s.stop();
      await r.stop();
      await new Promise<void>((res) => (local ? local.close(() => res()) : res()));
      await driver.close();
      store.close();
    },
  };
}

/** What the report says about the last release switch (edge/upgrade/switch.ts). */
function agentReleaseOf(u: UpgradeState | undefined): AgentReleaseState | undefined {
  if (!u) return undefined;
  return {
    version: u.version,
    state: u.state,
    previousVersion: u.previousVersion,
    at: u.at,
    ...(u.reason ? { reason: u.reason.slice(0, 1024) } : {}),
  };
}

/** Stops every workload (keeping them, for `outpost edge uninstall` to remove). */
async function stopAll(driver: Driver): Promise<void> {
  for (const w of await driver.list().catch(() => []))
    if (w.phase !== 'Paused' && w.phase !== 'Pending')
      await driver
        .stopWorkload(w.name)
        .catch((err: unknown) => log.warn({ err, workload: w.name }, 'stopping a workload of a decommissioned edge'));
}

/**
 * Opens the edge's replica; a damaged one is moved aside (kept for a post-mortem) and the agent
 * starts from an empty one: the spec comes back from the hub at the next sync, and the report is
 * written again from what the driver observes, while the workloads go on running. Staying down
 * instead left them unsupervised. Local intents made on site live in the replica and are lost.
 */
export async function openReplica(file: string, options: ReplicaStoreOptions): Promise<ReplicaStore> {
  try {
    const store = await ReplicaStore.open(file, options);
    try {
      quickCheck(store.db);
    } catch (err) {
      store.close();
      throw err;
    }
    return store;
  } catch (err) {
    if (!isCorruptDatabase(err)) throw err;
    const aside = `${file}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    for (const suffix of ['', '-wal', '-shm'])
      if (fs.existsSync(file + suffix)) fs.renameSync(file + suffix, aside + suffix);
    log.warn(
      { err, movedTo: aside },
      `the edge replica ${file} is damaged: moved it to ${aside} and rebuilding from the hub (spec) and the driver (status); local intents made on site are lost`,
    );
    return ReplicaStore.open(file, options);
  }
}
