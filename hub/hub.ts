/**
 * @module The hub's composition root: one SQLite file (replica store + hub tables), TLS, the REST
 * API, the sync endpoint, the scheduler and status projection, metrics. `startHub` is what
 * `outpost hub` runs; tests start it in-process.
 *
 * @example
 * const hub = await startHub({ dataDir: '/var/lib/outpost-hub', listen: '0.0.0.0:7443' });
 * console.log(hub.url, hub.adminToken);
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import path from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { PG_HANDSHAKE_GATHER, REFUSAL_LOG_INTERVAL_MS } from '../core/durations.js';
import { edgeName, type EdgeName } from '../core/ids.js';
import { errorMessage } from '../core/errors.js';
import { createLogger, throttle } from '../core/logger.js';
import { materializeSpec, readSpec, type SpecDoc } from '../core/mailbox.js';
import { buildInfo } from '../core/version.js';
import { compactIfLarge } from '../sync/compaction.js';
import { SyncServer } from '../sync/server.js';
import { ReplicaStore } from '../sync/store.js';
import { isCorruptDatabase } from '../sync/sqlite.js';
import { createApi } from './api/app.js';
import { HubBlobs } from './blobs/index.js';
import { dependsOnGate } from './catalog/gate.js';
import { Catalog } from './catalog/index.js';
import type { ScannerSpec } from './scan/clamd.js';
import { handleBlobRequest, isBlobRoute } from './blobs/routes.js';
import { handleImageRequest, ImageCache } from './images/cache.js';
import { imagesGate } from './images/gate.js';
import { ImagePins } from './images/pins.js';
import { HubStaging } from './images/staging.js';
import type { Registry } from '../core/resources.js';
import { HubTransfers } from './blobs/transfers.js';
import { AgentUpgradeController } from './upgrades/controller.js';
import { DataDeliveries } from './data/delivery.js';
import { HubDataFiles } from './data/index.js';
import { S3Sink, type S3SinkOptions } from './data/s3-sink.js';
import { isDataFileHeader } from '../core/data.js';
import { AgentReleases } from './upgrades/releases.js';
import { ensureReleaseKey } from './upgrades/release-key.js';
import { ChangeFeed } from './api/stream.js';
import type { HubAuth, Principal } from './api/context.js';
import * as auth from './auth/index.js';
import { Scheduler } from './scheduler/index.js';
import { projectReport } from './controllers/status.js';
import { migrateHub } from './db.js';
import { EdgeLifecycle } from './edges/lifecycle.js';
import { limitConnections, MAX_CONNECTIONS_PER_ADDRESS, serverTimeouts } from './http-limits.js';
import { createHubMetrics } from './metrics.js';
import { ObjectStore, rolledBackFrom, sealedKeyId } from './objects.js';
import { SqlAssignmentStore } from './state/assignments.js';
import {
  postgresHubState,
  prefetchDisconnects,
  prefetchHandshakes,
  sqliteHubState,
  type HubState,
} from './state/index.js';
import { openPostgres } from './state/pg/open.js';
import { EdgeLeases } from './state/leases.js';
import { renewMembership, startReplicas, type Replicas } from './replicas/index.js';
import { advertiseUrlOf, HubReplicas, newReplicaId } from './state/replicas.js';
import { redactUrl } from './state/pg/statements.js';
import type { SqlDb } from './state/sql.js';
import { HubSecrets, loadSecretsKey } from './secrets.js';
import { shareHubIdentity } from './identity/index.js';
import { loadIdentityKey } from './identity/key.js';
import { ensureHubTls, loadUserTls, type HubTls } from './tls.js';
import { ReplicaForwarder } from './tunnel/forward.js';
import { TunnelGateway } from './tunnel/gateway.js';

const log = createLogger('hub');

export interface HubOptions {
  dataDir: string;
  /** HOST:PORT; port 0 picks a free one. */
  listen: string;
  insecureHttp?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  requireApproval?: boolean;
  /** Extra names for the server certificate (the hub's public DNS name). */
  hosts?: string[];
  /** Connections one source address may hold, edges' sync sockets not counted (default 1,024). */
  maxConnectionsPerAddress?: number;
  /** Loaded mailbox documents are evicted beyond this estimate (default HUB_DOC_CACHE_BYTES). */
  memoryBudgetBytes?: number;
  /**
   * Where blob files live (default DATA/blobs). Hub replicas on one PostgreSQL share the blob index,
   * so they must share the files too: one directory on a shared filesystem (docs/operations.md).
   */
  blobDir?: string;
  /** Bytes of blobs one project may hold (default DEFAULT_BLOB_QUOTA_BYTES). */
  blobQuotaBytes?: number;
  /** How long a blob nothing refers to is kept (default DEFAULT_BLOB_GRACE_MS). */
  blobGraceMs?: number;
  /** The catalog's malware scanner (`--scanner`); undefined: none configured, packages stay Pending. */
  scanner?: ScannerSpec;
  /** Forward the files edges export to this S3-compatible bucket (docs/data.md). */
  dataSinkS3?: S3SinkOptions;
  /** How often Pending packages are tried again while the scanner is unreachable (default SCAN_RETRY_MS). */
  scanRetryMs?: number;
  /**
   * `postgres://...`: the hub's tables in this PostgreSQL database instead of the SQLite file of
   * `dataDir` (issue #22); the edges' documents stay in `dataDir` (docs/architecture.md).
   */
  database?: string;
  /**
   * The identity key file (`--identity-key`, hub/identity/key.ts): with `database`, the replicas'
   * one CA, secrets key and release key are kept sealed in the database and written into `dataDir`.
   */
  identityKeyFile?: string;
  /**
   * With `database`: the URL the other replicas reach this one at, for tunnel requests they
   * forward (docs/tunnel.md). Default: the hub's own URL when it listens on one address, else
   * PROTO://HOSTNAME:PORT.
   */
  advertiseUrl?: string;
}

/**
 * What node's server-wide `requestTimeout` did for every route: a request body must arrive within
 * this time. The server's own timeout is off because it would cut a long blob upload; blob routes
 * have an idle timeout instead (hub/blobs/routes.ts).
 */
export const REQUEST_BODY_TIMEOUT_MS = 300_000;

/**
 * The hub's document cache: 384 MiB holds the 20,000 mailboxes of 10,000 edges with one or two
 * workloads each (~17 KiB a document, sync/store.ts). A fleet-wide change touches every mailbox
 * once; when they do not all fit, each is loaded again from SQLite (docs/benchmarks.md).
 */
export const HUB_DOC_CACHE_BYTES = 384 * 1024 * 1024;

/**
 * The hub's WAL is checkpointed every 10,000 pages (~40 MB) instead of SQLite's 1,000: the hub
 * commits thousands of small transactions a second in a fan-out, and each checkpoint copies the
 * WAL into the database file with two fsyncs; with a larger WAL the pages written again and again
 * (indexes, status rows) are copied once per checkpoint. Fan-out to 10,000: hub CPU 17.6 -> 14.2 s
 * (docs/benchmarks.md, "Fourth round"). Edges keep the default: their disks are small and their
 * write rate is not.
 */
export const HUB_WAL_AUTOCHECKPOINT_PAGES = 10_000;

export interface Hub {
  url: string;
  port: number;
  adminToken: string;
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
  close(): Promise<void>;
}

function parseListen(s: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(s);
  if (!m) throw new Error(`--listen ${s}: use HOST:PORT, e.g. 0.0.0.0:7443 or 127.0.0.1:0`);
  return { host: m[1].replace(/^\[|\]$/g, '') || '0.0.0.0', port: Number(m[2]) };
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
  // The replicas' one identity into --data before TLS, secrets and the release key are read there.
  if (pg)
    await shareHubIdentity(pg, {
      dataDir: opts.dataDir,
      key: identityKey,
      ownCa: !opts.insecureHttp && !(opts.tlsCert && opts.tlsKey),
    });

  let tls: HubTls | undefined;
  if (!opts.insecureHttp) {
    tls =
      opts.tlsCert && opts.tlsKey
        ? loadUserTls(opts.tlsCert, opts.tlsKey, opts.tlsCa)
        : await ensureHubTls(opts.dataDir, {
            hosts: [...(opts.hosts ?? []), ...(host !== '0.0.0.0' && host !== '::' ? [host] : [])],
          });
  }

  // Wired below; the store's hooks need the scheduler and sync server, which need the store.
  let sync: SyncServer | undefined;
  let scheduler: Scheduler | undefined;
  let upgrades: AgentUpgradeController | undefined;
  let deliveries: DataDeliveries | undefined;
  const reportChanged = new Set<string>();
  /** A report since the last afterChange said something of an upgrade or a delivery. */
  let ordersReported = false;
  const inventoryChanged = new Set<string>();
  let changes: ChangeFeed | undefined;
  let state: HubState | undefined;
  const dbFile = path.join(opts.dataDir, 'hub.db');
  const store = await ReplicaStore.open(dbFile, {
    memoryBudgetBytes: opts.memoryBudgetBytes ?? HUB_DOC_CACHE_BYTES,
    walAutocheckpointPages: HUB_WAL_AUTOCHECKPOINT_PAGES,
    // `c.doc` only for remote changes: reading it builds the JS view of a document written through
    // its backend (every spec write), and destructuring it in the parameter list read it for every
    // change: a third of a fan-out's spec writes (docs/benchmarks.md, issue #17).
    onChange: (c) => {
      if (c.origin === 'remote') {
        const r = state && projectReport(state, c.id, c.doc);
        if (r) reportChanged.add(r.edge);
        if (r?.carriesOrders) ordersReported = true;
        if (r?.inventoryChanged) inventoryChanged.add(r.edge);
      }
    },
    afterChange: (id, origin) => {
      // The hub writes spec documents; one that grew past the threshold restarts as a new epoch.
      if (
        origin === 'local' &&
        id.endsWith('/spec') &&
        compactIfLarge<SpecDoc>(store, id, (doc) => materializeSpec(readSpec(doc)))
      ) {
        sync?.announceEpoch(id);
        return;
      }
      sync?.notify(id);
      changes?.notifyDoc(id);
      if (ordersReported) {
        ordersReported = false;
        upgrades?.mark();
        deliveries?.mark();
      }
      for (const e of reportChanged) scheduler?.markStatus(e);
      reportChanged.clear();
      // New inventory labels may make placements select the edge, or stop selecting it.
      for (const e of inventoryChanged) scheduler?.markEdge(e);
      inventoryChanged.clear();
    },
  }).catch((err: unknown) => {
    if (!isCorruptDatabase(err)) throw err;
    throw new Error(
      `the hub database ${dbFile} is damaged (${errorMessage(err)}): stop the hub, move the file aside and restore the last backup in its place (outpost hub backup made it; docs/operations.md, "Backup and restore"), then start the hub again`,
      { cause: err },
    );
  });
  // The hub's tables: in PostgreSQL (migrated by openPostgres) or in the SQLite file with the documents.
  const db: SqlDb = pg ?? store.db;
  // Only hubs sharing a PostgreSQL need leases: a SQLite hub is the only one of its database.
  const replicaId = newReplicaId();
  const leases = pg ? new EdgeLeases(pg, replicaId) : undefined;
  // The replicas' URLs, for tunnel requests one forwards to the replica serving the edge.
  const replicas = pg ? new HubReplicas(pg, replicaId) : undefined;
  if (!pg) migrateHub(store.db);
  state = pg ? postgresHubState(pg) : sqliteHubState(store.db);
  changes = new ChangeFeed(state);
  auth.migrateAuth(db);
  const secrets = new HubSecrets(loadSecretsKey(opts.dataDir, sealedKeyId(state.objects)), (edge) =>
    auth.edgeSealKey(db, edge),
  );
  const objects = new ObjectStore(state, secrets);
  const sealedAtStart = objects.sealStoredSecrets();
  if (sealedAtStart) log.info({ rows: sealedAtStart }, 'sealed Secret values a previous version stored in clear');
  scheduler = new Scheduler(db, objects, store, secrets);
  const sched = scheduler;
  let imageStagingRef: HubStaging | undefined;
  let peers: Replicas | undefined;
  objects.onChange((c) => {
    changes?.notify(c.project, 'objects');
    peers?.send({ t: 'object', kind: c.kind, project: c.project, name: c.name });
    if (c.kind === 'Edge') sched.markEdge(c.name);
    else if (c.kind === 'Workload') sched.markWorkload(c.project, c.name);
    else if (c.kind === 'AgentUpgrade') upgrades?.onObjectChange(c);
    else if (c.kind === 'DataObject') deliveries?.onObjectChange(c);
    else if (c.kind === 'Registry')
      // Which edges get its credentials depends on every placement's images: re-plan them all.
      for (const p of objects.list('Placement', c.project)) sched.markPlacement(c.project, p.metadata.name);
    else {
      sched.markPlacement(c.project, c.name);
      // A deleted placement's staging orders go from its edges' specs (the gate no longer sees it).
      if (c.kind === 'Placement' && !c.after) imageStagingRef?.setPlacement(`${c.project}/${c.name}`, new Map());
    }
  });

  const admin = auth.ensureAdminToken(db, opts.dataDir, tls?.caFingerprint ?? null);
  const fingerprint = tls?.caFingerprint ?? null;

  // Metrics: gauges read at scrape time, counters bumped by the sync hooks (hub/metrics.ts).
  const metrics = createHubMetrics({ state, store, objects, scheduler: sched, sync: () => sync });
  const { registry, refused, heartbeats, throttled } = metrics;

  const hubAuth: HubAuth = {
    verifyApiToken: (t) => {
      const p = auth.verifyApiToken(db, t);
      return p ? ({ tokenId: p.id, role: p.role, project: p.project } satisfies Principal) : null;
    },
    createApiToken: (o) => {
      const token = auth.createApiToken(db, { ...o, caFingerprint: fingerprint });
      return { token, id: auth.parseToken(token)?.id ?? '' };
    },
    createJoinToken: (o) => {
      const now = Date.now();
      const token = auth.createJoinToken(db, { ...o, caFingerprint: fingerprint }, now);
      return { token, id: auth.parseToken(token)?.id ?? '', expiresAt: auth.joinTokenExpiry(o.ttlMs, now) };
    },
    listTokens: () => ({ api: auth.listApiTokens(db), join: auth.listJoinTokens(db) }),
    revokeToken: (kind, id) => (kind === 'api' ? auth.revokeApiToken(db, id) : auth.revokeJoinToken(db, id)),
    rotateAdminToken: () => auth.rotateAdminToken(db, opts.dataDir, fingerprint),
    consumeJoinToken: (t) => auth.consumeJoinToken(db, t),
    issueEdgeCredential: (e, sealKey) => auth.issueEdgeCredential(db, e, sealKey),
    decommissionEdgeCredential: (e) => void auth.revokeEdgeCredential(db, e, { decommissioned: true }),
  };

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
  upgrades = new AgentUpgradeController(db, objects, store, blobs, releaseKey.publicKeyPem, state.agentUpgrades);
  if (pg) {
    // With replicas, the leader plans the rollouts; each writes the orders of the edges it serves.
    upgrades.holds = (edge) => !!sync?.connection(edge as EdgeName);
    upgrades.leading = () => sched.leading;
  }
  upgrades.start();
  deliveries = new DataDeliveries(db, objects, store, blobs, state.dataProgress);
  // With replicas, each writes the data orders of the edges it serves (the others': their replica).
  if (pg) deliveries.holds = (edge) => !!sync?.connection(edge as EdgeName);
  deliveries.start();
  const edges = new EdgeLifecycle({
    state,
    objects,
    store,
    scheduler: sched,
    assignments: new SqlAssignmentStore(db),
    credentials: hubAuth,
    disconnect: (e, message) => sync?.disconnect(e as EdgeName, 'decommissioned', message),
    requireApproval: !!opts.requireApproval,
    // On PostgreSQL: what recording a turn's disconnections reads, in one round trip.
    readAheadDisconnects: (list) => prefetchDisconnects(db, list),
  });
  const sink = opts.dataSinkS3 ? new S3Sink(db, blobs.files, opts.dataSinkS3) : undefined;
  sink?.start();
  const dataFiles = new HubDataFiles(db, blobs, state.edges, () => sink?.kick());
  // Image pre-staging (hub/images/staging.ts): the images gate below orders, the API shows progress.
  const imageStaging = (imageStagingRef = new HubStaging(store, blobs, state.imageStaging));
  // With replicas, the planning one records the orders; each writes those of the edges it serves.
  if (pg) imageStaging.holds = (edge) => !!sync?.connection(edge as EdgeName);
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
    requireApproval: !!opts.requireApproval,
    unready: () => {
      // SQLite is a file of this process: ready while the process runs. PostgreSQL may be away.
      if (!pg) return undefined;
      try {
        pg.one('SELECT 1');
        return undefined;
      } catch (err) {
        return errorMessage(err);
      }
    },
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
    ...(replicas && leases
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
  const listener: http.RequestListener = (req, res) => {
    if (isBlobRoute(req)) {
      handleBlobRequest({ blobs, auth: hubAuth }, req, res);
      return;
    }
    // The image cache's OCI pull API (/v2/...) and its tag route stream blobs like the blob routes.
    if (handleImageRequest({ cache: images, blobs, auth: hubAuth }, req, res)) return;
    if (!req.complete) {
      const t = setTimeout(() => req.destroy(), REQUEST_BODY_TIMEOUT_MS);
      t.unref();
      req.once('end', () => clearTimeout(t)).once('close', () => clearTimeout(t));
    }
    void (tunnel.handleRequest(req, res) || honoListener(req, res));
  };
  const server = tls
    ? https.createServer({ cert: tls.certPem, key: tls.keyPem, ...serverTimeouts() }, listener)
    : http.createServer(serverTimeouts(), listener);
  const connLimit = limitConnections(server, opts.maxConnectionsPerAddress ?? MAX_CONNECTIONS_PER_ADDRESS);
  // A blob upload asking `Expect: 100-continue` is told no (quota, rights, already here) before its body.
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (!isBlobRoute(req)) res.writeContinue();
    listener(req, res);
  });
  server.on('upgrade', (req, socket, head) => tunnel.handleUpgrade(req, socket, head));

  const throttledLog = throttle(REFUSAL_LOG_INTERVAL_MS);
  // Whether a handshake writes the edge's spec and orders first (`beforeWelcome` below).
  const writesAtHandshake = (fresh: boolean) => fresh || !!peers;
  // On PostgreSQL the credentials of the upgrades that come together are read in one round trip (PG_HANDSHAKE_GATHER).
  const verifyCredential = auth.edgeCredentialVerifier(db);
  sync = new SyncServer({
    store,
    hubVersion: version,
    authenticate: async (token) => {
      const id = await verifyCredential(token);
      return id ? { edge: edgeName(id.edge) } : null;
    },
    decommissioned: (token) => {
      const at = auth.decommissionedAt(db, token);
      return at === undefined
        ? undefined
        : `this edge was decommissioned on ${new Date(at).toISOString()}: it is no longer part of the fleet; run outpost edge uninstall on it, or enroll it again with a new join token`;
    },
    onConnect: (conns) => {
      edges.connected(conns);
      for (const conn of conns) leases?.take(conn.edge);
    },
    // On PostgreSQL: what the handshakes that come together read (below and the connection
    // history), in one round trip for all of them, and their connections recorded in one more.
    gatherHellos: pg ? PG_HANDSHAKE_GATHER : undefined,
    beforeWelcomes: (batch) => {
      prefetchHandshakes(
        db,
        batch.filter((b) => writesAtHandshake(b.fresh)).map((b) => b.edge),
      );
    },
    // An edge this process never served (a replica taking it over, docs/operations.md): its spec is
    // written from the assignments before the edge is answered, in this replica's new epoch, with
    // its data, upgrade and image staging orders (a spec without them would have the edge take them for withdrawn
    // and remove its files). With replicas,
    // every time: another replica may have served the edge since this one last did.
    beforeWelcome: (edge, fresh) => {
      if (!writesAtHandshake(fresh)) return;
      sched.writeSpec(edge);
      deliveries?.writeEdge(edge);
      upgrades?.writeEdge(edge);
      imageStaging.writeEdge(edge);
    },
    onDisconnect: (conn, code, reason) => {
      // Recorded at the end of this turn with the others that ended in it.
      edges.disconnected({ edge: conn.edge, code, reason });
      // A newer connection of the edge to this same process holds the lease now: keep it.
      if (!sync?.connection(conn.edge)) leases?.release(conn.edge);
      tunnel.onDisconnect(conn);
      metrics.connectionClosed(conn.session.stats);
    },
    onTunnel: (conn, payload) => tunnel.onTunnel(conn, payload),
    onHeartbeat: (edge, hb) => {
      heartbeats.inc();
      edges.heartbeat(edge);
      dataFiles.noteHeartbeat(edge, hb.metrics);
    },
    onRefused: (_edge, code) => refused.inc({ code }),
    onThrottled: (edge) => {
      throttled.inc();
      throttledLog((suppressed) =>
        log.warn({ edge, suppressed }, 'an edge sends frames faster than FRAMES_PER_SECOND: reading it more slowly'),
      );
    },
    onUpgraded: (socket) => connLimit.exempt(socket as Socket),
    restartEpoch: (id) => void compactIfLarge<SpecDoc>(store, id, (doc) => materializeSpec(readSpec(doc)), -1),
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
      objectWritten: (kind) => {
        if (kind === 'AgentUpgrade') upgrades?.mark();
        else if (kind === 'DataObject') deliveries?.mark();
      },
    });

  // Heartbeat batches, the scan for edges gone quiet, history retention (hub/edges/lifecycle.ts).
  edges.start();
  // Several hub processes on one PostgreSQL: one serves each edge (hub/state/leases.ts); leases
  // and this replica's row in hub_replicas are renewed every few seconds (hub/replicas/).
  let advertiseUrl = '';
  const leaseTimer =
    leases && replicas
      ? renewMembership({
          leases,
          registry: replicas,
          connections: servedEdges,
          replaced: (edge) =>
            sync?.disconnect(
              edge as EdgeName,
              'replaced',
              'a newer connection of this edge is served by another hub replica',
            ),
          advertiseUrl: () => advertiseUrl,
        })
      : undefined;

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `cannot listen on ${opts.listen}: the address is in use (another hub running? pick another port with --listen)`
            : `cannot listen on ${opts.listen}: ${err.message}`,
          { cause: err },
        ),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  const actualPort = (server.address() as { port: number }).port;
  const urlHost =
    host === '0.0.0.0' || host === '::' ? (tls ? 'localhost' : '127.0.0.1') : host.includes(':') ? `[${host}]` : host;
  const url = `${tls ? 'https' : 'http'}://${urlHost}:${actualPort}`;
  advertiseUrl = opts.advertiseUrl ?? advertiseUrlOf(host, url, tls ? 'https' : 'http', actualPort);
  replicas?.register(advertiseUrl);
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
      ...(replicas ? { replica: replicaId, advertiseUrl } : {}),
    },
    'hub ready',
  );

  return {
    url,
    port: actualPort,
    adminToken: admin.token,
    adminTokenCreated: admin.created,
    caPem: tls?.caPem,
    caFingerprint: tls?.caFingerprint,
    store,
    state,
    scheduler,
    objects,
    sync,
    blobs,
    async close() {
      try {
        replicas?.remove(); // the other replicas stop forwarding here at once
      } catch (err) {
        log.warn({ err }, "could not remove this replica's row (it expires)");
      }
      blobs.stop();
      pins.stop();
      upgrades?.stop();
      imageStaging.stop();
      clearInterval(leaseTimer);
      peers?.close();
      deliveries?.stop();
      await sink?.stop();
      await catalog.stop();
      changes?.close();
      tunnel.close();
      edges.stop();
      await sync!.close();
      // Idle keep-alive API connections would hold close() for their timeout: end them now.
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections?.();
      await closed;
      await scheduler!.idle();
      store.close();
      await pg?.close();
    },
  };
}
