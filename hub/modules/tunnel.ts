/**
 * @module The tunnel as one module: the gateway that carries API requests to edges (proxy, kube,
 * logs, exec, actions, metrics), its streams of blobs, data files and interconnect connections, and with replicas the
 * forwarder to the replica that serves an edge.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Registry as MetricsRegistry } from 'prom-client';
import { isDataFileHeader } from '../../core/data.js';
import type { EdgeName } from '../../core/ids.js';
import type { SyncServer } from '../../sync/server.js';
import type { TunnelStream } from '../../sync/tunnel.js';
import { isInterconnectHeader } from '../interconnect/relay.js';
import type { HubAuth } from '../auth/contract.js';
import type { HubBlobs } from '../blobs/index.js';
import { HubTransfers } from '../blobs/transfers.js';
import type { HubDataFiles } from '../data/index.js';
import type { HubModule } from '../module.js';
import type { HubState } from '../state/index.js';
import type { HubTls } from '../tls.js';
import { ReplicaForwarder } from '../tunnel/forward.js';
import { TunnelGateway } from '../tunnel/gateway.js';
import type { Replication } from './replication.js';

export interface TunnelModule extends HubModule {
  readonly gateway: TunnelGateway;
  /** With replicas: reaches the replica that holds an edge (the interconnect's relay dials it). */
  readonly forward?: ReplicaForwarder;
}

export function createTunnelModule(o: {
  state: HubState;
  auth: HubAuth;
  blobs: HubBlobs;
  dataFiles: HubDataFiles;
  registry: MetricsRegistry;
  tls: HubTls | undefined;
  replication: Replication;
  /** The sync server, once made (the tunnel's frames arrive through it). */
  sync(): SyncServer | undefined;
  /** A request another replica forwards here is not counted against its address (hub/http-limits.ts). */
  exempt(socket: Socket): void;
  /** A connection a consuming edge accepted for a ServiceImport (hub/interconnect/relay.ts). */
  interconnect(edge: EdgeName, s: TunnelStream): void;
  /** Whether an edge may read a blob of the hub-wide scope (a global ClusterTemplate's artifact its node needs). */
  globalBlob(edge: string, digest: string): boolean;
  /** The project's tunnelSessions quota (hub/projects/). */
  checkSession(project: string, open: number): void;
  /** An interconnect connection another replica relays to an edge connected here (hub/interconnect/relay.ts). */
  replicaInterconnect(edge: EdgeName, project: string, name: string, socket: Duplex, head: Buffer): void;
}): TunnelModule {
  const { state, blobs, dataFiles, replication } = o;
  const transfers = new HubTransfers(state.edges, blobs, o.registry, o.globalBlob);
  const leases = replication.leases;
  const forward = leases
    ? new ReplicaForwarder({
        self: replication.id,
        key: replication.registry.forwardKey(),
        holder: (edge) => {
          const id = leases.holder(edge);
          return id === undefined ? undefined : replication.registry.live(id);
        },
        ...(o.tls ? { ca: o.tls.caPem } : {}),
      })
    : undefined;
  const gateway = new TunnelGateway({
    state,
    edges: state.edges,
    auth: o.auth,
    sync: o.sync,
    registry: o.registry,
    ...(forward ? { forward, onReplicaConnection: (s: Socket) => o.exempt(s) } : {}),
    checkSession: o.checkSession,
    onReplicaInterconnect: o.replicaInterconnect,
    onEdgeStream: (conn, s) =>
      isDataFileHeader(s.header)
        ? dataFiles.serve(conn.edge, s)
        : isInterconnectHeader(s.header)
          ? o.interconnect(conn.edge, s)
          : transfers.serve(conn.edge, s),
  });
  return { name: 'tunnel', gateway, ...(forward ? { forward } : {}), stop: () => gateway.close() };
}
