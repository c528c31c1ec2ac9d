/**
 * @module One edge's connection on the hub (sync/server.ts), from its WebSocket to its close: the
 * hello first (within HANDSHAKE_TIMEOUT_MS, and nothing else before the welcome), a token bucket of
 * frames that stops reading a socket past FRAMES_PER_SECOND for a while, then each frame handed on:
 * sync frames to the inbox (sync/inbox.ts), tunnel frames and heartbeats to the server's owner, a
 * new epoch of a document the edge writes adopted. A frame that fails closes this connection only.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import { FRAME_BURST, FRAMES_PER_SECOND, HANDSHAKE_TIMEOUT_MS } from '../core/durations.js';
import { parseMailboxDocId, type DocId, type EdgeName } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import type { EdgeIdentity } from './http-upgrade.js';
import { adoptEpochs } from './mailbox.js';
import {
  decodeBinary,
  decodeControl,
  ProtocolError,
  type ErrorCode,
  type HeartbeatMessage,
  type HelloMessage,
  type SyncFrame,
} from './messages.js';
import type { SyncSession } from './session.js';
import type { ReplicaStore } from './store.js';

const log = createLogger('sync:server');

/** An edge's connection once its hello was answered (SyncServer `welcome`). */
export interface EdgeConnection {
  readonly edge: EdgeName;
  /** Unique among the connections of every hub process: the hub's connection history names it. */
  readonly id: string;
  readonly session: SyncSession;
  readonly socket: WebSocket;
  readonly connectedAt: number;
  readonly remoteAddress: string;
  readonly agentVersion: string;
  /** Sends a tunnel payload (frame type 0x02) to this edge; `written` once it left for the kernel. */
  sendTunnel(payload: Buffer, written?: () => void): boolean;
}

/** A hello waiting for its turn's batch (SyncServer `answerHellos`). */
export interface QueuedHello {
  ws: WebSocket;
  edge: EdgeName;
  hello: HelloMessage;
  remoteAddress: string;
  welcomed(conn: EdgeConnection): void;
}

/** The SyncServerOptions a connection uses (sync/server.ts documents them). */
export interface EdgeConnectionOptions {
  store: ReplicaStore;
  /**
   * A connection ended: with the close code and reason the hub sent when it closed it (`byHub`), or
   * else those the edge sent (1006 and no reason: nobody closed it, the link was lost).
   */
  onDisconnect?(conn: EdgeConnection, code: number, reason: string, byHub: boolean): void;
  onHeartbeat?(edge: EdgeName, hb: HeartbeatMessage): void;
  onTunnel?(conn: EdgeConnection, payload: Buffer): void;
  /** A connection sent frames past FRAMES_PER_SECOND: the hub stopped reading it for a while. */
  onThrottled?(edge: EdgeName): void;
  /** The upgrade of an authenticated edge succeeded: its socket is long-lived (hub/http-limits.ts exempts it). */
  onUpgraded?(socket: Duplex): void;
}

/** What a connection uses of its SyncServer. */
export interface ConnectionHost {
  readonly opts: EdgeConnectionOptions;
  /** The connections welcomed, by edge: a connection leaves it when its socket closes. */
  readonly conns: Map<EdgeName, EdgeConnection>;
  /** Per socket: heard from since the last keepalive round (SyncServer `keepalive`). */
  readonly alive: WeakMap<WebSocket, boolean | 'quiet'>;
  /** Sockets the hub closed itself, with the code and reason it gave (`onDisconnect` says so). */
  readonly closedByHub: WeakMap<WebSocket, { code: number; reason: string }>;
  /** Hellos to answer together (SyncServer `answerHellos`). */
  readonly hellos: { add(hello: QueuedHello): void };
  /** Sync frames to apply in this turn's transaction (sync/inbox.ts). */
  readonly inbox: { enqueue(conn: EdgeConnection, frame: SyncFrame, bytes: number): void };
  /** True once SyncServer `close()` began: the owner records the stop for all edges at once. */
  closing(): boolean;
  /** Sends a typed error and closes the socket (SyncServer `refuse`). */
  refuse(ws: WebSocket, edge: EdgeName, code: ErrorCode, message: string): void;
  /** Refuses the connection of a frame that could not be handled (SyncServer `frameFailed`). */
  frameFailed(ws: WebSocket, edge: EdgeName, err: unknown): void;
}

/** Serves an edge's WebSocket once its upgrade was admitted (sync/http-upgrade.ts). */
export function serveEdgeSocket(
  host: ConnectionHost,
  ws: WebSocket,
  identity: EdgeIdentity,
  req: IncomingMessage,
  handshakeDone: () => void,
): void {
  const edge = identity.edge;
  const remoteAddress = req.socket.remoteAddress ?? '';
  let conn: EdgeConnection | undefined;
  let helloSent = false;
  host.alive.set(ws, true);
  ws.on('pong', () => host.alive.set(ws, true));
  const handshakeTimer = setTimeout(
    () => host.refuse(ws, edge, 'bad_frame', 'no hello within the handshake timeout'),
    HANDSHAKE_TIMEOUT_MS,
  );
  host.opts.onUpgraded?.(req.socket);
  // Frames are a token bucket per connection; an empty bucket pauses reading this socket.
  const bucket = { tokens: FRAME_BURST, at: performance.now(), paused: false };
  const take = () => {
    const now = performance.now();
    bucket.tokens = Math.min(FRAME_BURST, bucket.tokens + ((now - bucket.at) * FRAMES_PER_SECOND) / 1000);
    bucket.at = now;
    bucket.tokens -= 1;
    if (bucket.tokens >= 0 || bucket.paused) return;
    bucket.paused = true;
    ws.pause();
    host.opts.onThrottled?.(edge);
    setTimeout(
      () => {
        bucket.paused = false;
        if (ws.readyState === ws.OPEN) ws.resume();
      },
      Math.ceil((-bucket.tokens * 1000) / FRAMES_PER_SECOND),
    ).unref();
  };

  ws.on('message', (data: RawData, isBinary: boolean) => {
    take();
    const buf = Array.isArray(data)
      ? Buffer.concat(data)
      : Buffer.isBuffer(data)
        ? data
        : Buffer.from(data as ArrayBuffer);
    host.alive.set(ws, true);
    try {
      if (!conn) {
        if (helloSent)
          throw new ProtocolError('bad_frame', 'a frame before the welcome: wait for the hub to answer the hello');
        if (isBinary) throw new ProtocolError('bad_frame', 'expected a hello text frame first');
        const msg = decodeControl(buf.toString('utf8'));
        if (msg.type !== 'hello') throw new ProtocolError('bad_frame', `expected hello, got ${msg.type}`);
        clearTimeout(handshakeTimer);
        helloSent = true;
        host.hellos.add({
          ws,
          edge,
          hello: msg,
          remoteAddress,
          welcomed: (c) => {
            conn = c;
            handshakeDone();
          },
        });
        return;
      }
      if (isBinary) {
        const f = decodeBinary(buf);
        if (f.kind === 'sync') host.inbox.enqueue(conn, f.frame, buf.length);
        else host.opts.onTunnel?.(conn, f.payload);
        return;
      }
      const msg = decodeControl(buf.toString('utf8'));
      if (msg.type === 'heartbeat') host.opts.onHeartbeat?.(edge, msg);
      else if (msg.type === 'epoch') adoptEdgeEpoch(host.opts.store, conn, msg.id, msg.epoch);
      else if (msg.type === 'error') log.warn({ edge, code: msg.code }, `edge reported: ${msg.message}`);
      else throw new ProtocolError('bad_frame', `unexpected ${msg.type} message after the handshake`);
    } catch (err) {
      host.frameFailed(ws, edge, err);
    }
  });

  ws.on('close', (code, reasonBuf) => {
    clearTimeout(handshakeTimer);
    handshakeDone();
    if (!conn) return;
    conn.session.close();
    if (host.conns.get(edge) === conn) host.conns.delete(edge);
    if (host.closing()) return;
    const hub = host.closedByHub.get(ws);
    const reason = hub?.reason ?? reasonBuf.toString();
    log.info(
      {
        edge,
        code: hub?.code ?? code,
        reason,
        closedBy: hub ? 'hub' : 'edge',
        bytesIn: conn.session.stats.bytesIn,
        bytesOut: conn.session.stats.bytesOut,
      },
      'edge disconnected',
    );
    host.opts.onDisconnect?.(conn, hub?.code ?? code, reason, !!hub);
  });
  ws.on('error', (err) => log.warn({ err, edge }, 'edge socket error'));
}

/** The edge compacted a document it writes: drop our replica and resync the new epoch. */
function adoptEdgeEpoch(store: ReplicaStore, conn: EdgeConnection, id: string, epoch: string): void {
  const p = parseMailboxDocId(id);
  if (!p || p.edge !== conn.edge || p.role !== 'report')
    throw new ProtocolError('forbidden_document', `edge ${conn.edge} may not move ${id} to a new epoch`);
  adoptEpochs(store, [{ id: id as DocId, weWrite: false, epoch: store.epoch(id as DocId) ?? '' }], [{ id, epoch }]);
  conn.session.resetDoc(id as DocId);
}
