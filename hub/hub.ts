/**
 * @module The hub's composition root: one SQLite file (replica store + hub tables), TLS, the REST
 * API, the sync endpoint, the scheduler and status projection, metrics. `startHub` is what
 * `outpost hub` runs; tests start it in-process. It wires only: the parts with a job of their own
 * live beside it (options.ts, store.ts, change-hooks.ts, http-server.ts, sync-endpoint.ts,
 * shutdown.ts) and in the folders of hub/.
 *
 * @example
 * const hub = await startHub({ dataDir: '/var/lib/outpost-hub', listen: '0.0.0.0:7443' });
 * console.log(hub.url, hub.adminToken);
 */
import fs from 'node:fs';
import type { Socket } from 'node:net';
import path from 'node:path';
import { getRequestListener } from '@hono/node-server';
import type { EdgeName } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import { buildInfo } from '../core/version.js';
import type { SyncServer } from '../sync/server.js';
import type { ReplicaStore } from '../sync/store.js';
import { createApi } from './api/app.js';
import { HubBlobs } from './blobs/index.js';
import { dependsOnGate } from './catalog/gate.js';
import { Catalog } from './catalog/index.js';
import { ImageCache } from './images/cache.js';
import { imagesGate } from './images/gate.js';
import { ImagePins } from './images/pins.js';
import { HubStaging } from './images/staging.js';
import type { Registry } from '../core/resources.js';
import { HubTransfers } from './blobs/transfers.js';
import { AgentUpgradeController } from './upgrades/controller.js';
import { DataDeliveries } from './data/delivery.js';
import { HubDataFiles } from './data/index.js';
import { S3Sink } from './data/s3-sink.js';
import { isDataFileHeader } from '../core/data.js';
import { AgentReleases } from './upgrades/releases.js';
import { ensureReleaseKey } from './upgrades/release-key.js';
import { ChangeFeed } from './api/stream.js';
import * as auth from './auth/index.js';
import { documentHooks, routeObjectChanges } from './change-hooks.js';
import { Scheduler } from './scheduler/index.js';
import { recordTablesAtStart } from './database-marker.js';
import { migrateHub } from './db.js';
import { EdgeLifecycle } from './edges/lifecycle.js';
import { createHubServer, listenHub } from './http-server.js';
import { createHubMetrics } from './metrics.js';
import { ObjectStore, rolledBackFrom, sealedKeyId } from './objects.js';
import { parseListen, type HubOptions } from './options.js';
import { closeHub } from './shutdown.js';
import {
  databaseUnready,
  postgresHubState,
  prefetchDisconnects,
  prefetchHandshakes,
  sqliteHubState,
  type HubState,
} from './state/index.js';
import { openPostgres } from './state/pg/open.js';
import { EdgeLeases } from './state/leases.js';
import { ReplicaDirectory } from './replicas/directory.js';
import { endEarlierRuns, renewMembership, startReplicas, type Replicas } from './replicas/index.js';
import { advertiseUrlOf, HubReplicas, newReplicaId } from './state/replicas.js';
import { redactUrl } from './state/pg/statements.js';
import type { SqlDb } from './state/sql.js';
import { HubSecrets, loadSecretsKey } from './secrets.js';
import { ensureReplicaAdminToken, shareRotatedAdminToken } from './identity/admin-token.js';
import { shareHubIdentity } from './identity/index.js';
import { OrderEngine } from './orders/engine.js';
import { loadIdentityKey } from './identity/key.js';
import { openHubStore } from './store.js';
import { createSyncEndpoint } from './sync-endpoint.js';
import { hubTls } from './tls.js';
import { ReplicaForwarder } from './tunnel/forward.js';
import { TunnelGateway } from './tunnel/gateway.js';

const log = createLogger('hub');

export type { HubOptions };

export interface Hub {
  url: string;
  port: number;
  /**
   * DATA/admin.token. Throws on a replica without --identity-key whose database's admin token
   * another replica made (it has none: hub/identity/admin-token.ts).
   */
  readonly adminToken: string;
  adminTokenCreated: boolean;
  caPem?: string;
  caFingerprint?: string;
  store: ReplicaStore;
  /** The hub's tables (hub/state/). */
  state: HubState;
  scheduler: Scheduler;
  objects: ObjectStore;
  sync: SyncServer;
  blobs: HubBlobs;
  /** AgentUpgrade rollouts (hub/upgrades/controller.ts): `tick()` plans a pass now. */
  upgrades: AgentUpgradeController;
  /** Orders to edges (hub/orders/engine.ts): each kind's parts copied into the spec documents. */
  orders: OrderEngine;
  /** Image pre-staging (hub/images/staging.ts). */
  imageStaging: HubStaging;
  /** This hub process among the replicas (a SQLite hub is the only one). */
  replicaId: string;
  /** Stops; `why` (e.g. the signal) goes into its edges' connection history. */
  close(why?: string): Promise<void>;
}

export async function startHub(opts: HubOptions): Promise<Hub> {
  const { version } = buildInfo();
  const { host, port } = parseListen(opts.listen);
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  // First: a wrong URL or a database that cannot be reached ends the start before anything else.
  if (opts.identityKeyFile && !opts.database)
    throw new Error(
      '--identity-key is for hub replicas sharing a database: give --database too, or drop --identity-key',
    );
  const identityKey = opts.identityKeyFile ? loadIdentityKey(opts.identityKeyFile) : undefined;
  const pg = opts.database ? await openPostgres(opts.database) : undefined;
  // For `outpost hub backup --data`: where this directory's hub keeps its tables (database-marker.ts).
  recordTablesAtStart(opts.dataDir, opts.database);
  // The replicas' one identity into --data before TLS, secrets and the release key are read there.
  if (pg)
    await shareHubIdentity(pg, {
      dataDir: opts.dataDir,
      key: identityKey,
      ownCa: !opts.insecureHttp && !(opts.tlsCert && opts.tlsKey),
    });

  const tls = await hubTls({ ...opts, listenHost: host });

  // Wired below; the store's hooks need the scheduler and sync server, which need the store.
  let sync: SyncServer | undefined;
  let scheduler: Scheduler | undefined;
  let upgrades: AgentUpgradeController | undefined;
  let deliveries: DataDeliveries | undefined;
  let ordersRef: OrderEngine | undefined;
  let changes: ChangeFeed | undefined;
  let state: HubState | undefined;
  const store = await openHubStore(opts.dataDir, {
    memoryBudgetBytes: opts.memoryBudgetBytes,
    ...documentHooks({
      store: () => store,
      state: () => state,
      sync: () => sync,
      scheduler: () => scheduler,
      orders: () => ordersRef,
      changes: () => changes,
    }),
  });
  // The hub's tables: in PostgreSQL (migrated by openPostgres) or in the SQLite file with the documents.
  const db: SqlDb = pg ?? store.db;
  // Only hubs sharing a PostgreSQL need leases: a SQLite hub is the only one of its database.
  const replicaId = newReplicaId();
  const leases = pg ? new EdgeLeases(pg, replicaId) : undefined;
  // The replicas' URLs, for tunnel requests one forwards to the replica serving the edge, and for
  // `outpost get replicas`: a SQLite hub has one row, its own.
  const replicas = new HubReplicas(db, replicaId);
  if (!pg) migrateHub(store.db);
  state = pg ? postgresHubState(pg) : sqliteHubState(store.db);
  // Before any edge connects: what a run of this SQLite hub that was killed left open ends.
  if (!pg) endEarlierRuns(state, replicas);
  let advertiseUrl = '';
  const directory = new ReplicaDirectory(replicas, state.edges, () => advertiseUrl);
  changes = new ChangeFeed(state);
  auth.migrateAuth(db);
  const secrets = new HubSecrets(loadSecretsKey(opts.dataDir, sealedKeyId(state.objects)), (edge) =>
    auth.edgeSealKey(db, edge),
  );
  const objects = new ObjectStore(state, secrets);
  const sealedAtStart = objects.sealStoredSecrets();
  if (sealedAtStart) log.info({ rows: sealedAtStart }, 'sealed Secret values a previous version stored in clear');
  // Orders to edges (hub/orders/engine.ts): each kind's parts copied into the spec documents; the
  // scheduler's workloads are its first kind.
  const orders = (ordersRef = new OrderEngine(store));
  // With replicas, each writes the orders of the edges it serves (the others': their replica).
  if (pg) orders.holds = (edge) => !!sync?.connection(edge as EdgeName);
  scheduler = new Scheduler(state, objects, store, secrets, orders);
  const sched = scheduler;
  let peers: Replicas | undefined;
  routeObjectChanges(objects, { orders, changes, peers: () => peers });

  // Replicas on one database share one admin token (identity/admin-token.ts); a SQLite hub makes its own.
  const admin = pg
    ? ensureReplicaAdminToken(pg, opts.dataDir, tls?.caFingerprint ?? null, identityKey)
    : auth.ensureAdminToken(db, opts.dataDir, tls?.caFingerprint ?? null);
  const fingerprint = tls?.caFingerprint ?? null;

  // Metrics: gauges read at scrape time, counters bumped by the sync hooks (hub/metrics.ts).
  const metrics = createHubMetrics({ state, store, objects, scheduler: sched, sync: () => sync });
  const { registry } = metrics;

  // A token's open streams end when it is revoked (here, or on another replica: the bus) or expires.
  const tokenStreams = new auth.TokenStreams({
    live: (ids) => auth.liveApiTokens(db, ids),
    broadcast: (tokens) => peers?.send({ t: 'revoked', tokens }),
  });
  const hubAuth = auth.createHubAuth(db, opts.dataDir, fingerprint, tokenStreams, (t) => {
    if (pg && identityKey) shareRotatedAdminToken(pg, identityKey, t);
  });

  const blobs = new HubBlobs({
    db,
    dir: opts.blobDir ?? path.join(opts.dataDir, 'blobs'),
    ...(opts.blobQuotaBytes !== undefined ? { quotaBytes: opts.blobQuotaBytes } : {}),
    ...(opts.blobGraceMs !== undefined ? { graceMs: opts.blobGraceMs } : {}),
  });
  blobs.start();
  const catalog = new Catalog({
    db,
    blobs,
    objects,
    box: secrets.box,
    scanner: opts.scanner,
    ...(opts.scanRetryMs !== undefined ? { retryMs: opts.scanRetryMs } : {}),
  });
  scheduler.addGate(dependsOnGate(db, objects));
  catalog.start();
  const releaseKey = ensureReleaseKey(opts.dataDir);
  upgrades = new AgentUpgradeController(
    state,
    objects,
    store,
    orders,
    blobs,
    releaseKey.publicKeyPem,
    state.agentUpgrades,
  );
  // With replicas, the leader plans the rollouts.
  if (pg) upgrades.leading = () => sched.leading;
  upgrades.start();
  deliveries = new DataDeliveries(state, objects, orders, blobs, state.dataProgress);
  deliveries.start();
  const edges = new EdgeLifecycle({
    state,
    objects,
    store,
    scheduler: sched,
    orders,
    credentials: hubAuth,
    disconnect: (e, message) => sync?.disconnect(e as EdgeName, 'decommissioned', message),
    requireApproval: !!opts.requireApproval,
    // On PostgreSQL: what recording a turn's disconnections reads, in one round trip.
    readAheadDisconnects: (list) => prefetchDisconnects(db, list),
    replica: replicaId,
    peer: (id) => directory.peer(id),
  });
  const sink = opts.dataSinkS3 ? new S3Sink(db, blobs.files, opts.dataSinkS3) : undefined;
  sink?.start();
  const dataFiles = new HubDataFiles(db, blobs, state.edges, () => sink?.kick());
  // Image pre-staging (hub/images/staging.ts): the images gate below orders, the API shows progress.
  // With replicas, the planning one records the orders; each writes those of the edges it serves.
  const imageStaging = new HubStaging(orders, blobs, state);
  imageStaging.start();
  const app = createApi({
    imageStaging,
    uploads: dataFiles,
    releases: new AgentReleases(blobs, releaseKey, opts.scanner),
    upgrades,
    deliveries,
    catalog,
    db,
    state,
    edges,
    changes,
    store,
    objects,
    scheduler,
    auth: hubAuth,
    secrets,
    version,
    replicas: directory,
    requireApproval: !!opts.requireApproval,
    unready: () => databaseUnready(db),
    caPem: tls?.caPem,
    metricsText: () => registry.metrics(),
    metricsContentType: registry.contentType,
  });
  const honoListener = getRequestListener(app.fetch);
  // Tunnel routes stream with backpressure and pass upgrades through, so they bypass hono.
  const transfers = new HubTransfers(state.edges, blobs, registry);
  const tunnel = new TunnelGateway({
    db,
    edges: state.edges,
    auth: hubAuth,
    sync: () => sync,
    registry,
    ...(pg && leases
      ? {
          forward: new ReplicaForwarder({
            self: replicaId,
            key: replicas.forwardKey(),
            holder: (edge) => {
              const id = leases.holder(edge);
              return id === undefined ? undefined : replicas.live(id);
            },
            ...(tls ? { ca: tls.caPem } : {}),
          }),
          onReplicaConnection: (s: Socket) => connLimit.exempt(s),
        }
      : {}),
    onEdgeStream: (conn, s) =>
      isDataFileHeader(s.header) ? dataFiles.serve(conn.edge, s) : transfers.serve(conn.edge, s),
  });
  const images = new ImageCache(db, blobs, {
    registry: (project, name) => objects.get<Registry>('Registry', project, name),
    box: secrets.box,
  });
  // The hub's own names, as images on it spell them (known once it listens).
  let selfHosts: string[] = [];
  const pins = new ImagePins(
    db,
    images,
    {
      selfHosts: () => selfHosts,
      rolledBackFrom: (project, workload, revision) =>
        rolledBackFrom(objects.revisions(project, workload).find((r) => r.revision === revision)?.changeCause),
    },
    (project) => sched.markProject(project),
  );
  sched.useImagePins(pins);
  sched.addGate(imagesGate(imageStaging));
  const { server, connLimit } = createHubServer({
    tls,
    maxConnectionsPerAddress: opts.maxConnectionsPerAddress,
    blobs,
    blobIdleTimeoutMs: opts.blobIdleTimeoutMs,
    auth: hubAuth,
    images,
    tunnel,
    api: honoListener,
  });

  sync = createSyncEndpoint({
    store,
    version,
    credentials: {
      verify: auth.edgeCredentialVerifier(db),
      decommissionedAt: (token) => auth.decommissionedAt(db, token),
    },
    readAhead: (list) => prefetchHandshakes(db, list, orders),
    postgres: !!pg,
    replicated: () => !!peers,
    replica: replicaId,
    leases,
    edges,
    orders,
    tunnel,
    dataFiles,
    metrics,
    connLimit,
  });
  sync.attach(server);
  const servedEdges = () => sync?.connections().map((c) => c.edge) ?? [];
  // Several hub processes on one PostgreSQL: one plans, each writes its edges' specs (hub/replicas/).
  if (pg && leases)
    peers = startReplicas({
      pg,
      id: leases.replica,
      scheduler: sched,
      connected: (edge) => !!sync?.connection(edge as EdgeName),
      connections: servedEdges,
      changes,
      tokens: tokenStreams,
      objectWritten: (kind) => orders.peerObjectChanged(kind),
    });

  // Heartbeat batches, the scan for edges gone quiet, history retention (hub/edges/lifecycle.ts).
  edges.start();
  // Several hub processes on one PostgreSQL: one serves each edge (hub/state/leases.ts); leases
  // and this replica's row in hub_replicas are renewed every few seconds (hub/replicas/). A
  // SQLite hub renews its own row only (`outpost get replicas`).
  const leaseTimer = renewMembership({
    leases,
    registry: replicas,
    state,
    connections: servedEdges,
    replaced: (edge) =>
      sync?.disconnect(
        edge as EdgeName,
        'replaced',
        'lease lost: a newer connection of this edge is served by another hub replica',
      ),
    leaseLost: (list, awayMs) => {
      const why = `lease lost: this hub replica could not reach its database for ${Math.round(awayMs / 1000)} s`;
      for (const edge of list) sync?.disconnect(edge as EdgeName, 'replaced', why);
    },
    leading: () => sched.leading,
    advertiseUrl: () => advertiseUrl,
  });

  const { port: actualPort, urlHost, url } = await listenHub(server, { listen: opts.listen, host, port, tls: !!tls });
  advertiseUrl = opts.advertiseUrl ?? advertiseUrlOf(host, url, tls ? 'https' : 'http', actualPort);
  replicas.register(advertiseUrl);
  selfHosts = [...new Set([urlHost, host, 'localhost', '127.0.0.1', ...(opts.hosts ?? [])])]
    .filter((h) => h !== '0.0.0.0' && h !== '::')
    .map((h) => `${h}:${actualPort}`);
  scheduler.markAll();
  log.info(
    {
      url,
      dataDir: opts.dataDir,
      database: opts.database ? redactUrl(opts.database) : 'sqlite',
      tls: !!tls,
      version,
      ...(pg ? { replica: replicaId, advertiseUrl } : {}),
    },
    'hub ready',
  );

  return {
    url,
    port: actualPort,
    get adminToken(): string {
      if (admin.token === undefined)
        throw new Error(
          `this replica has no admin token: the database's was made by another replica; copy its admin.token into ${opts.dataDir}`,
        );
      return admin.token;
    },
    adminTokenCreated: admin.created,
    caPem: tls?.caPem,
    caFingerprint: tls?.caFingerprint,
    store,
    state,
    scheduler,
    objects,
    sync,
    blobs,
    upgrades,
    orders,
    imageStaging,
    replicaId,
    async close(why?: string) {
      await closeHub({
        why,
        replicas,
        blobs,
        pins,
        upgrades,
        imageStaging,
        leaseTimer,
        peers,
        deliveries,
        sink,
        catalog,
        changes,
        tokenStreams,
        tunnel,
        edges,
        sync,
        server,
        scheduler,
        store,
        pg,
      });
    },
  };
}
