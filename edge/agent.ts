/**
 * @module The edge agent's composition root: enroll once (enroll.ts), then open the local replica
 * (replica.ts), start the runtime driver and the reconciler (they work from the replica, hub or no
 * hub), dial the hub for as long as we run, and serve the local operator API on DATA/agent.sock
 * with the agent's metrics (metrics.ts). It wires the parts; what each does lives in its module.
 *
 * @example
 * const agent = await startEdgeAgent({ dataDir: '/var/lib/outpost-edge', hub: 'https://hub:7443', joinToken: T });
 */
import path from 'node:path';
import type http from 'node:http';
import { edgeName, mailboxDocId, type DocId } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import { materializeReport, readReport, setInventory, type ReportDoc } from '../core/mailbox.js';
import { RECONCILE_PERIOD_MS } from '../core/durations.js';
import { compactIfLarge } from '../sync/compaction.js';
import { buildInfo } from '../core/version.js';
import { SyncClient } from '../sync/client.js';
import { ensureMailbox } from '../sync/mailbox.js';
import type { ReplicaStore } from '../sync/store.js';
import { hubUrls, type EdgeConfig } from './config.js';
import type { Driver } from './drivers/driver.js';
import { createDriver } from './drivers/index.js';
import { readDecommissioned, stopAll, writeDecommissioned, type Decommissioned } from './decommission.js';
import { enrollOnce, type EnrollOnceOptions } from './enroll.js';
import { EdgeBlobStore } from './blobs/store.js';
import { EdgeTransfers } from './blobs/transfers.js';
import { EdgeDeliveries } from './data/delivery.js';
import { InterconnectListeners } from './interconnect/listeners.js';
import { EdgeEgress } from './data/egress.js';
import { HeldStopped } from './held-stopped.js';
import { agentReleaseOf, collectInventory } from './inventory.js';
import { listenLocal, localApp } from './local-api.js';
import { edgeMetricsRegistry } from './metrics.js';
import { Reconciler } from './reconciler.js';
import { openReplica } from './replica.js';
import { createTunnelAgent } from './tunnel/index.js';
import { upgradeRoute } from './upgrade/local-route.js';
import { UpgradeOrders } from './upgrade/orders.js';
import { createPodman } from './drivers/podman/cli.js';
import { EdgeImageStaging } from './images/staging.js';
import { SpecFollowers } from './orders/followers.js';
import { ClusterFollower } from './clusters/follower.js';
import { controlPlaneKubeconfig } from './clusters/kubeconfig.js';
import { AGENT_UPGRADE_ORDER, DATA_ORDERS, IMAGE_STAGING_ORDER } from '../core/orders/kinds.js';
import { markHealthy, readUpgradeState, TRIAL_ENV } from './upgrade/switch.js';

const log = createLogger('edge');

export interface EdgeAgentOptions extends EnrollOnceOptions {
  /** Tests and benchmarks: a faster heartbeat. */
  heartbeatMs?: number;
  /**
   * With several hub URLs: how long the agent dials only the replica that served it after that
   * connection ended (`outpost edge --home-redial`; default HOME_REDIAL_MS).
   */
  homeRedialMs?: number;
  /**
   * The process driver: how long a workload restarted after a failure runs before it counts as
   * recovered (Ready again, its back-off reset) (`outpost edge --process-stable-run`; default 10 s).
   */
  processStableMs?: number;
  /**
   * Tests: how often interconnect tries an address of the driver again and publishes the imports
   * again (edge/interconnect/listeners.ts; default 10 s).
   */
  interconnectRetryMs?: number;
  /** Bytes the blob store may hold (default DEFAULT_EDGE_BLOB_BUDGET_BYTES). */
  blobBudgetBytes?: number;
  /** Called after `outpost edge local upgrade` staged a release: close the agent and start `outpost edge` again. */
  restartForSwitch?: (version: string) => void;
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
  /** Stops; `why` goes to the hub as the close reason of its connection (its history shows it). */
  close(why?: string): Promise<void>;
}

export function socketPathFor(dataDir: string): string {
  return path.join(dataDir, 'agent.sock');
}

export async function startEdgeAgent(o: EdgeAgentOptions): Promise<EdgeAgent> {
  const { version } = buildInfo();
  const config = await enrollOnce(o, version);
  const edge = edgeName(config.name);
  const reportId = mailboxDocId(edge, 'report');
  // `outpost edge local upgrade` and the hub's upgrade orders both end with this.
  const restartForSwitch = (version: string) =>
    (o.restartForSwitch ?? (() => log.error('this agent cannot restart itself')))(version);

  let sync: SyncClient | undefined;
  let reconciler: Reconciler | undefined;
  let staging: EdgeImageStaging | undefined;
  // One follower per kind of order in the spec (edge/orders/followers.ts), registered below.
  const followers = new SpecFollowers();
  const specId = mailboxDocId(edge, 'spec');
  const storeOptions = {
    afterChange: (id: DocId, origin: 'local' | 'remote') => {
      sync?.notify(id);
      // A new spec (or a hub clearing intents) is desired state: every follower acts on it now.
      if (origin === 'remote' && id === specId) followers.checkAll();
    },
  };
  const store = await openReplica(path.join(o.dataDir, 'edge.db'), storeOptions);
  ensureMailbox(store, edge, 'edge');
  store.change<ReportDoc>(reportId, (d) => {
    setInventory(
      d,
      collectInventory(config.driver, version, {
        kubeconfig: config.kubeconfig,
        agentRelease: agentReleaseOf(readUpgradeState(o.dataDir)),
      }),
    );
  });

  // Without a kubeconfig, the kubernetes driver targets the cluster whose control plane this edge runs.
  const driver = await createDriver(config.driver, o.dataDir, {
    kubeconfig: config.kubeconfig,
    clusterKubeconfig: () => controlPlaneKubeconfig(o.dataDir),
    ...(o.processStableMs !== undefined ? { processStableMs: o.processStableMs } : {}),
    ...(config.interconnectAddress ? { interconnectAddress: config.interconnectAddress } : {}),
  });
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
  followers.add(reconciler);
  let decommissioned: Decommissioned | undefined = readDecommissioned(o.dataDir);

  let transfersRef: EdgeTransfers | undefined;
  let egressRef: EdgeEgress | undefined;
  const registry = edgeMetricsRegistry(() => ({ sync, reconciler, egress: egressRef, transfers: transfersRef }));

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
    ...(o.homeRedialMs !== undefined ? { homeRedialMs: o.homeRedialMs } : {}),
    // Gauges, not history: the hub shows the upload queue from them (edge/data/egress.ts).
    metrics: () => ({ rssBytes: process.memoryUsage().rss, ...egressRef?.queueMetrics() }),
  });
  const s = sync;
  s.on('state', (state, info) => log.info({ state, ...info }, `hub connection ${state}`));
  const tunnel = createTunnelAgent({
    driver,
    reconciler,
    transport: { send: (p, written) => s.sendTunnel(p, written), bufferedAmount: () => s.bufferedAmount() },
    ...(config.driver === 'kubernetes' && config.kubeconfig ? { kubeconfig: config.kubeconfig } : {}),
    clusterKubeconfig: () => controlPlaneKubeconfig(o.dataDir),
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
      await s.stop('the hub decommissioned this edge');
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
  const orders = new UpgradeOrders({
    dataDir: o.dataDir,
    edge,
    store,
    blobs,
    transfers,
    releaseKey: config.releaseKey,
    project: config.project,
    version,
    onTrial: !!process.env[TRIAL_ENV],
    // The hub should see Switching before the agent goes away; a few seconds at most.
    reportSent: async () => {
      const until = Date.now() + 3_000;
      while (Date.now() < until && !s.inSync(reportId)) await new Promise((r) => setTimeout(r, 100));
    },
    restart: restartForSwitch,
  });
  followers.add({ kind: AGENT_UPGRADE_ORDER.name, check: () => orders.check() });
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
  followers.add({
    kind: IMAGE_STAGING_ORDER.name,
    check: () => imageStaging.check(),
    // Staging fetches over the connection: what waited for it goes on once it is up.
    connected: () => imageStaging.check(),
  });
  s.on('state', (state) => state === 'connected' && followers.connected());
  const egress = new EdgeEgress({
    db: store.db,
    dataDir: o.dataDir,
    driver: config.driver,
    blobs,
    transfers,
    open: (h, limits) => tunnel.open(h, limits),
    connected: () => s.state === 'connected',
    onDegradedChange: () => r0.check(),
  });
  egressRef = egress;
  reconciler.decorators.push(egress);
  const dataIn = new EdgeDeliveries({ dataDir: o.dataDir, edge, driver: config.driver, store, blobs, transfers });
  reconciler.decorators.push(dataIn);
  followers.add({ kind: DATA_ORDERS.name, check: () => dataIn.check() });
  // ServiceImports (docs/interconnect.md): local listeners whose connections go through the hub.
  const interconnect = new InterconnectListeners({
    edge,
    store,
    open: (h) => tunnel.open(h),
    ...(driver.hostAddresses ? { hostAddresses: () => driver.hostAddresses!() } : {}),
    // The kubernetes driver: a Service and Endpoints per import, for the cluster's pods.
    ...(driver.publishImports
      ? { publish: (imports) => driver.publishImports!(imports, { edge, project: config.project }) }
      : {}),
    ...(o.interconnectRetryMs !== undefined ? { retryMs: o.interconnectRetryMs } : {}),
  });
  followers.add(interconnect);
  // Clusters at the sites (docs/clusters.md): this edge's node of a Cluster.
  const clusterNode = new ClusterFollower({
    dataDir: o.dataDir,
    edge,
    project: config.project,
    store,
    blobs,
    transfers,
    releaseKey: config.releaseKey,
    sealKey: config.sealKey,
  });
  followers.add(clusterNode);
  s.on('state', (state) => state === 'connected' && egress.record());
  if (process.env[TRIAL_ENV]) {
    // On trial after a switch (edge/upgrade/switch.ts): healthy once connected and a reconcile
    // pass after the handshake finished; the launcher then commits this binary.
    const trial = (state: string) => {
      if (state !== 'connected') return;
      s.off('state', trial);
      r0.trigger().then(
        () => {
          markHealthy();
          log.info('release on trial: connected and reconciled, told the launcher');
        },
        // Not healthy: the launcher's deadline rolls the release back.
        (err: unknown) => log.error({ err }, 'release on trial: its first reconcile pass failed; not told healthy'),
      );
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
    followers.checkAll();
  }

  // The edge writes its report; once the hub holds all of it, a report past the threshold
  // restarts as a new epoch (sync/compaction.ts), so a mailbox stays small however long it lives.
  const compactTimer = setInterval(() => {
    if (!s.inSync(reportId)) return;
    try {
      if (compactIfLarge<ReportDoc>(store, reportId, (doc) => materializeReport(readReport(doc), doc.intentSeq ?? 0)))
        s.announceEpoch(reportId);
    } catch (err) {
      // A timer's callback: a throw (the replica cannot be written: a full disk) would end the agent.
      log.warn({ err }, 'could not compact the report document; tried again at the next period');
    }
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
        egress,
        upgrade: {
          state: () => readUpgradeState(o.dataDir),
          request: (body) =>
            upgradeRoute(
              {
                dataDir: o.dataDir,
                files: blobs.files,
                releaseKey: config.releaseKey,
                project: config.project,
                version,
                restart: restartForSwitch,
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
    async close(why?: string) {
      clearInterval(compactTimer);
      interconnect.stop();
      transfers.stop();
      staging?.stop();
      await clusterNode.stop();
      await egress.stop();
      await dataIn.stop();
      await s.stop(why);
      await r.stop();
      await new Promise<void>((res) => (local ? local.close(() => res()) : res()));
      await driver.close();
      store.close();
    },
  };
}
