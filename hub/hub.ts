/**
 * @module The hub's composition root: it opens the database and TLS (open.ts), the store and the
 * hub's tables, auth and the objects, and builds a list of modules (hub/module.ts) that it starts
 * in order and stops in reverse (shutdown.ts); the API serves the modules (api/app.ts), the sync
 * endpoint connects edges to them (sync-endpoint.ts), and the change hooks route each change to
 * what it concerns (change-hooks.ts). `startHub` is what `outpost hub` runs; tests start it
 * in-process. It wires only: each module's parts live in the folders of hub/ (hub/modules/ builds
 * the ones of several parts).
 *
 * @example
 * const hub = await startHub({ dataDir: '/var/lib/outpost-hub', listen: '0.0.0.0:7443' });
 * console.log(hub.url, hub.adminToken);
 */
import path from 'node:path';
import { getRequestListener } from '@hono/node-server';
import type { EdgeName } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import { buildInfo } from '../core/version.js';
import type { SyncServer } from '../sync/server.js';
import type { Hub } from './handle.js';
import { createApi } from './api/app.js';
import { HubBlobs } from './blobs/index.js';
import { ChangeFeed } from './changes/feed.js';
import { documentHooks, routeObjectChanges } from './change-hooks.js';
import { HubDataFiles } from './data/index.js';
import { migrateHub } from './state/schema/index.js';
import { EdgeLifecycle } from './edges/lifecycle.js';
import { GitRepos } from './gitops/index.js';
import { KubeWatchRecord } from './k8s/watch-record.js';
import type { ConnectionLimiter } from './http-limits.js';
import { createHubServer, listenHub } from './http-server.js';
import { createHubMetrics } from './metrics.js';
import { HubModules, loop } from './module.js';
import { createAuthModule } from './modules/auth.js';
import { createCatalogModule } from './modules/catalog.js';
import { createInterconnectRelay } from './modules/interconnect.js';
import { createImagesModule } from './modules/images.js';
import { createPeopleModule } from './modules/people.js';
import { createOrderKinds } from './modules/orders.js';
import { createReplication } from './modules/replication.js';
import { createTunnelModule } from './modules/tunnel.js';
import { ObjectStore, sealedKeyId } from './objects.js';
import { ProjectDeletions } from './projects/deletion.js';
import { Projects } from './projects/store.js';
import { openHub } from './open.js';
import { parseListen, type HubOptions } from './options.js';
import { OrderEngine } from './orders/engine.js';
import { Scheduler } from './scheduler/index.js';
import { HubSecrets, loadSecretsKey } from './secrets.js';
import { closeHub } from './shutdown.js';
import { sqliteHubState, type HubState } from './state/index.js';
import { redactUrl } from './state/pg/statements.js';
import { advertiseUrlOf } from './state/replicas.js';
import * as auth from './auth/index.js';
import { openHubStore } from './store.js';
import { createSyncEndpoint } from './sync-endpoint.js';
import { ensureReleaseKey } from './upgrades/release-key.js';
import { AgentReleases } from './upgrades/releases.js';

const log = createLogger('hub');

export type { HubOptions };
export type { Hub };

export async function startHub(opts: HubOptions): Promise<Hub> {
  const { version } = buildInfo();
  const { host, port } = parseListen(opts.listen);
  const { identityKey, pg, pgState, tls } = await openHub(opts, host);

  // Parts made after those that reach them (the store's hooks, the tunnel): each is read when used.
  const late: {
    state?: HubState;
    sync?: SyncServer;
    scheduler?: Scheduler;
    orders?: OrderEngine;
    changes?: ChangeFeed;
    connLimit?: ConnectionLimiter;
  } = {};
  const store = await openHubStore(opts.dataDir, {
    memoryBudgetBytes: opts.memoryBudgetBytes,
    ...documentHooks({
      store: () => store,
      state: () => late.state,
      sync: () => late.sync,
      scheduler: () => late.scheduler,
      orders: () => late.orders,
      changes: () => late.changes,
    }),
  });

  // State: the hub's tables, in PostgreSQL (migrated by openPostgres) or in the SQLite file with the documents.
  if (!pg) migrateHub(store.db);
  const state = (late.state = pgState ?? sqliteHubState(store.db));
  const replication = createReplication(pg, state, opts.replicaLeaseMs);
  const changes = (late.changes = new ChangeFeed(state));

  // Auth, then the objects (their Secrets sealed to each edge's key) and the scheduler.
  const fingerprint = tls?.caFingerprint ?? null;
  const authModule = createAuthModule({
    state,
    replicas: !!pg,
    dataDir: opts.dataDir,
    caFingerprint: fingerprint,
    identityKey,
    broadcastRevoked: (tokens) => replication.peers()?.send({ t: 'revoked', tokens }),
  });
  const hubAuth = authModule.auth;
  const secrets = new HubSecrets(loadSecretsKey(opts.dataDir, sealedKeyId(state.objects)), (edge) =>
    auth.edgeSealKey(state.auth, edge),
  );
  const objects = new ObjectStore(state, secrets);
  // Projects (hub/projects/): every object write passes its project's admission (quotas, defaults).
  const projects = new Projects({ state });
  projects.attach(objects);
  // People from the identity provider (--oidc-issuer): their sessions stand for principals as tokens do.
  const people = opts.oidc
    ? createPeopleModule({
        oidc: opts.oidc,
        state,
        projects,
        box: secrets.box,
        caFingerprint: fingerprint,
        tokenStreams: authModule.tokenStreams,
        leading: () => late.scheduler?.leading ?? false,
      })
    : undefined;
  authModule.people = people?.sessions;
  const sealedAtStart = objects.sealStoredSecrets();
  if (sealedAtStart) log.info({ rows: sealedAtStart }, 'sealed Secret values a previous version stored in clear');
  // Orders to edges (hub/orders/engine.ts): each kind's parts copied into the spec documents; the
  // scheduler's workloads are its first kind. With replicas, each writes the orders of the edges it
  // serves (the others': their replica).
  const orders = (late.orders = new OrderEngine(store));
  if (pg) orders.holds = (edge) => !!late.sync?.connection(edge as EdgeName);
  const scheduler = (late.scheduler = new Scheduler(state, objects, store, secrets, orders));
  // Metrics: gauges read at scrape time, counters bumped by the sync hooks (hub/metrics.ts).
  const metrics = createHubMetrics({ state, store, objects, scheduler, sync: () => late.sync });
  const { registry } = metrics;

  const blobs = new HubBlobs({
    tables: state.blobs,
    dir: opts.blobDir ?? path.join(opts.dataDir, 'blobs'),
    ...(opts.blobQuotaBytes !== undefined ? { quotaBytes: opts.blobQuotaBytes } : {}),
    ...(opts.blobGraceMs !== undefined ? { graceMs: opts.blobGraceMs } : {}),
  });
  blobs.quota.projectQuota = (project) => projects.blobQuota(project);
  // Packages and Helm charts (hub/modules/catalog.ts): published, scanned, rendered per edge.
  const { catalog, charts } = createCatalogModule({
    state,
    blobs,
    objects,
    box: secrets.box,
    scheduler,
    scanner: opts.scanner,
    helm: opts.helm,
    scanRetryMs: opts.scanRetryMs,
  });
  const releaseKey = ensureReleaseKey(opts.dataDir);
  // The other kinds of order (hub/modules/orders.ts): upgrades, deliveries, clusters, staging, interconnect.
  const kinds = createOrderKinds({
    state,
    objects,
    store,
    orders,
    blobs,
    secrets,
    releasePublicKeyPem: releaseKey.publicKeyPem,
    scheduler,
    replicated: !!pg,
    registry,
  });
  const { upgrades, deliveries, clusters, imageStaging, interconnect } = kinds;
  const edges = new EdgeLifecycle({
    state,
    objects,
    store,
    scheduler,
    modules: { forgetEdge: (edge) => modules.forgetEdge(edge) },
    credentials: hubAuth,
    disconnect: (e, message) => late.sync?.disconnect(e as EdgeName, 'decommissioned', message),
    requireApproval: !!opts.requireApproval,
    // On PostgreSQL: what recording a turn's disconnections reads, in one round trip.
    readAheadDisconnects: (list) => state.readAheadDisconnects(list),
    replica: replication.id,
    peer: (id) => replication.directory.peer(id),
  });
  const deletions = new ProjectDeletions({
    state,
    objects,
    projects,
    blobs,
    edges,
    auth: hubAuth,
    markEdge: (e) => scheduler.markEdge(e),
    leading: () => scheduler.leading,
  });
  // Loaded only when configured: the AWS SDK is ~40 ms of a hub's start (its side bundle).
  const sink = opts.dataSinkS3
    ? new (await import('./data/s3-sink.js')).S3Sink(state.dataFiles, blobs.files, opts.dataSinkS3)
    : undefined;
  const dataFiles = new HubDataFiles(state.dataFiles, blobs, state.edges, () => sink?.kick());
  // An object written here goes to every module below, in their order (hub/change-hooks.ts).
  routeObjectChanges(objects, () => modules);
  const tunnel = createTunnelModule({
    state,
    auth: hubAuth,
    blobs,
    dataFiles,
    registry,
    tls,
    replication,
    sync: () => late.sync,
    exempt: (s) => late.connLimit?.exempt(s),
    globalBlob: (edge, digest) => clusters.needsGlobalBlob(edge, digest),
    checkSession: (project, open) => projects.checkTunnelSession(project, open),
    interconnect: (edge, s) => interconnectRelay.serve(edge, s),
    replicaInterconnect: (edge, project, name, socket, head) =>
      interconnectRelay.serveReplica(edge, project, name, socket, head),
  });
  // ServiceImports' connections relayed to an edge serving the export (hub/modules/interconnect.ts).
  const interconnectRelay = createInterconnectRelay({
    planner: interconnect,
    objects,
    edges: state.edges,
    registry,
    tunnel,
  });
  projects.openSessions = (project) => tunnel.gateway.openSessions(project);
  const images = createImagesModule({ state, blobs, objects, secrets, scheduler });
  // The Kubernetes API's record of object changes, for its watches (hub/k8s/, docs/kubernetes-api.md).
  const kubeWatch = new KubeWatchRecord(state);
  // GitRepos (hub/gitops/): objects applied from Git; with replicas, the leader polls.
  const gitRepos = new GitRepos({
    dataDir: opts.dataDir,
    state,
    objects,
    box: secrets.box,
    leading: () => scheduler.leading,
  });

  // In dependency order: started in this order, stopped in reverse (hub/module.ts).
  const modules = new HubModules([
    loop('blobs', blobs),
    authModule,
    ...(people ? [people] : []),
    { name: 'changes', onObjectChange: (c) => changes.notify(c.project, 'objects'), stop: () => changes.close() },
    // Every kind of order (the workloads first) marks what it plans from an object and forgets a
    // decommissioned edge (hub/orders/engine.ts).
    { name: 'orders', onObjectChange: (c) => orders.objectChanged(c), forgetEdge: (e) => orders.forgetEdge(e) },
    {
      name: 'edges',
      start: () => edges.start(),
      stop: (why) => {
        edges.stop(why);
      },
    },
    tunnel,
    { ...loop('catalog', catalog), onObjectChange: (c) => catalog.onObjectChange(c) },
    ...(sink ? [loop('data sink', sink)] : []),
    ...kinds.modules,
    images,
    { ...loop('gitrepos', gitRepos), onObjectChange: (c) => gitRepos.onObjectChange(c) },
    { name: 'kube-api', onObjectChange: (c) => kubeWatch.record(c) },
    loop('project deletions', deletions),
    replication,
  ]);

  const agentReleases = new AgentReleases(blobs, releaseKey, opts.scanner);
  const app = createApi({
    hub: {
      version,
      databaseFile: store.db.name,
      unready: () => state.unready(),
      caPem: tls?.caPem,
      metricsText: () => registry.metrics(),
      metricsContentType: registry.contentType,
    },
    auth: hubAuth,
    changes,
    replicas: replication.directory,
    edges,
    objects: {
      state,
      store,
      objects,
      scheduler,
      secrets,
      replicas: replication.directory,
      catalog,
      upgrades,
      deliveries,
      interconnect,
      imageStaging,
      gitRepos,
      projects,
      clusters,
    },
    projects: { projects, deletions },
    ...(people ? { people } : {}),
    data: { state, uploads: dataFiles },
    releases: agentReleases,
    clusterArtifacts: agentReleases,
    catalog,
    gitRepos,
    kubeWatch,
  });
  // Tunnel routes stream with backpressure and pass upgrades through, so they bypass hono.
  const { server, connLimit } = createHubServer({
    tls,
    maxConnectionsPerAddress: opts.maxConnectionsPerAddress,
    firstRequestTimeoutMs: opts.firstRequestTimeoutMs,
    blobs,
    blobIdleTimeoutMs: opts.blobIdleTimeoutMs,
    auth: hubAuth,
    images: images.cache,
    tunnel: tunnel.gateway,
    api: getRequestListener(app.fetch),
  });
  late.connLimit = connLimit;

  // Sync: the endpoint edges connect to.
  const sync = (late.sync = createSyncEndpoint({
    store,
    version,
    credentials: {
      verify: auth.edgeCredentialVerifier(state.auth),
      decommissionedAt: (token) => auth.decommissionedAt(state.auth, token),
    },
    readAhead: (list) => state.readAheadHandshakes(list, orders),
    postgres: !!pg,
    replicated: () => !!replication.peers(),
    replica: replication.id,
    leases: replication.leases,
    edges,
    orders,
    tunnel: tunnel.gateway,
    dataFiles,
    metrics,
    connLimit,
  }));
  sync.attach(server);
  replication.wire({
    scheduler,
    sync,
    changes,
    tokens: authModule.tokenStreams,
    objectWritten: (kind) => orders.peerObjectChanged(kind),
  });

  modules.start();
  const { port: actualPort, urlHost, url } = await listenHub(server, { listen: opts.listen, host, port, tls: !!tls });
  const advertiseUrl = opts.advertiseUrl ?? advertiseUrlOf(host, url, tls ? 'https' : 'http', actualPort);
  replication.listening(advertiseUrl);
  images.listening(
    [...new Set([urlHost, host, 'localhost', '127.0.0.1', ...(opts.hosts ?? [])])]
      .filter((h) => h !== '0.0.0.0' && h !== '::')
      .map((h) => `${h}:${actualPort}`),
  );
  scheduler.markAll();
  log.info(
    {
      url,
      dataDir: opts.dataDir,
      database: opts.database ? redactUrl(opts.database) : 'sqlite',
      tls: !!tls,
      version,
      ...(pg ? { replica: replication.id, advertiseUrl } : {}),
    },
    'hub ready',
  );

  const { admin } = authModule;
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
    charts,
    clusters,
    interconnect: interconnectRelay,
    replicaId: replication.id,
    ...(people ? { people } : {}),
    close: (why?: string) => closeHub({ why, modules, sync, server, scheduler, store, pg }),
  };
}
