/**
 * @module The hub's end of the sync connection: the versioned handshake (the hellos received
 * together answered in one go), one SyncSession per edge, keepalive, refusal of hostile input and
 * shutdown. Its parts: the HTTP upgrade (authentication, the reconnect limit) in
 * sync/http-upgrade.ts, admission of upgrades (slots, the line) in sync/admission.ts, each
 * connection's frames in sync/edge-connection.ts, and the transaction of one turn's sync frames in
 * sync/inbox.ts.
 *
 * Every inbound frame is handled inside a guard: a decode failure, a foreign document id or a
 * write to a document the edge does not own sends a typed error, closes that one connection with
 * a specific close code and is logged. Other edges are never disturbed.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server as HttpServer } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { HEARTBEAT_INTERVAL_MS, WS_PING_INTERVAL_MS } from '../core/durations.js';
import { Gatherer, type GatherWindow } from '../core/gather.js';
import { mailboxDocId, parseMailboxDocId, type DocId, type EdgeName } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import {
  serveEdgeSocket,
  type ConnectionHost,
  type EdgeConnection,
  type EdgeConnectionOptions,
  type QueuedHello,
} from './edge-connection.js';
import { UpgradeGate, type EdgeIdentity, type UpgradeOptions } from './http-upgrade.js';
import { SyncInbox } from './inbox.js';
import { adoptEpochs, ensureMailbox, type MailboxDoc } from './mailbox.js';
import {
  CLOSE_CODES,
  encodeControl,
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  ProtocolError,
  type ErrorCode,
  type HelloMessage,
} from './messages.js';
import { SyncSession } from './session.js';
import { tunnelMessage } from './tunnel-frames.js';
import type { ReplicaStore } from './store.js';
import { sameHeads } from './wasm-sync.js';
import { holdTurn } from './turn-writes.js';

export type { EdgeConnection } from './edge-connection.js';
export type { EdgeIdentity } from './http-upgrade.js';

const log = createLogger('sync:server');

/** The hub's sync server: what its upgrades (sync/http-upgrade.ts) and connections (sync/edge-connection.ts) take, and the handshake's hooks. */
export interface SyncServerOptions extends UpgradeOptions, EdgeConnectionOptions {
  hubVersion: string;
  path?: string;
  maxFrameBytes?: number;
  /** Keepalive round period (default WS_PING_INTERVAL_MS; tests shorten it). */
  pingIntervalMs?: number;
  heartbeatSeconds?(edge: EdgeName): number;
  /**
   * The hellos received together (`gatherHellos`) are answered together: called first with
   * their edges (`fresh` as for `beforeWelcome`), so the hub can read what their handshakes need
   * at once (one round trip on PostgreSQL for a whole reconnect wave, instead of one per edge).
   */
  beforeWelcomes?(edges: { edge: EdgeName; fresh: boolean }[]): void;
  /**
   * How long hellos gather to be answered together (core/gather.ts; default none: those of one
   * turn of the event loop). The hub on PostgreSQL gathers PG_HANDSHAKE_GATHER: its batch costs
   * two round trips, however many edges it holds.
   */
  gatherHellos?: GatherWindow;
  /** The connections welcomed together (see `beforeWelcomes`), after their welcomes were sent. */
  onConnect?(conns: EdgeConnection[]): void;
  /**
   * Called before the handshake answers, with the edge's mailbox in place; `fresh` when it was
   * just made here (a new edge, or one coming from another hub replica whose spec this hub never
   * wrote). The hub writes the spec from its object model first, so the edge never receives an
   * empty one, nor, from a replica that served it before, an old one.
   */
  beforeWelcome?(edge: EdgeName, fresh: boolean): void;
  /**
   * Starts a new epoch of a document the hub writes, from its current state. Called at the next
   * handshake of an edge whose copy turned out to be ahead of ours (it sent changes we never
   * made: the hub was restored from a backup); the edge then adopts the new epoch.
   */
  restartEpoch?(id: DocId): void;
  /** Refusals are reported here too (metrics, events): those of the upgrade and of the handshake. */
  onRefused?(edge: EdgeName | null, code: ErrorCode | 'unauthorized' | 'too_many_reconnects', message: string): void;
}

export class SyncServer {
  private readonly wss: WebSocketServer;
  private readonly conns = new Map<EdgeName, EdgeConnection>();
  private readonly pingTimer: NodeJS.Timeout;
  /**
   * Per socket: true when the edge was heard from since the last keepalive round, false when it
   * was pinged and not heard from since, 'quiet' when a ping was skipped and it was not heard from.
   */
  private readonly alive = new WeakMap<WebSocket, boolean | 'quiet'>();
  /** Sockets this server closed, with what it said: the owner records why they ended. */
  private readonly closedByHub = new WeakMap<WebSocket, { code: number; reason: string }>();
  /** Sockets the hub sent a sync or tunnel frame to since the last keepalive round. */
  private readonly sentTo = new WeakSet<WebSocket>();
  /** Edges whose copy of a hub-written document is ahead of ours: restart its epoch at their next hello. */
  private readonly aheadOfUs = new Map<EdgeName, Set<DocId>>();
  /** Sync frames of this turn of the event loop, applied in one transaction (sync/inbox.ts). */
  private readonly inbox: SyncInbox;
  /** Hellos received and not answered yet, answered together (`answerHellos`). */
  private readonly hellos: Gatherer<QueuedHello>;
  /** Set by close(): the owner records the stop for all edges at once, not one disconnect at a time. */
  private closing = false;
  /** Upgrade requests, up to their WebSocket (sync/http-upgrade.ts). */
  private readonly upgrades: UpgradeGate;
  /** What each connection uses of this server (sync/edge-connection.ts). */
  private readonly host: ConnectionHost;
  readonly path: string;

  constructor(private readonly opts: SyncServerOptions) {
    this.path = opts.path ?? '/api/v1/sync';
    this.hellos = new Gatherer((batch) => this.answerHellos(batch), opts.gatherHellos);
    const refuse = (ws: WebSocket, edge: EdgeName, code: ErrorCode, message: string) =>
      this.refuse(ws, edge, code, message);
    const frameFailed = (ws: WebSocket, edge: EdgeName, err: unknown) => this.frameFailed(ws, edge, err);
    this.inbox = new SyncInbox(opts.store, this.conns, frameFailed, refuse);
    this.host = {
      opts,
      conns: this.conns,
      alive: this.alive,
      closedByHub: this.closedByHub,
      hellos: this.hellos,
      inbox: this.inbox,
      closing: () => this.closing,
      refuse,
      frameFailed,
    };
    // permessage-deflate stays off: it fragments memory under many connections (ws#1202).
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: opts.maxFrameBytes ?? MAX_FRAME_BYTES,
      perMessageDeflate: false,
    });
    this.upgrades = new UpgradeGate(opts, this.wss, (ws, identity, req, handshakeDone) =>
      serveEdgeSocket(this.host, ws, identity, req, handshakeDone),
    );
    this.pingTimer = setInterval(() => this.keepalive(), opts.pingIntervalMs ?? WS_PING_INTERVAL_MS);
    this.pingTimer.unref();
  }

  /** Routes upgrade requests for the sync path to this server; others are left to other handlers. */
  attach(server: HttpServer): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== this.path) return;
      void this.upgrades.handleUpgrade(req, socket, head);
    });
  }

  connection(edge: EdgeName): EdgeConnection | undefined {
    return this.conns.get(edge);
  }

  connections(): EdgeConnection[] {
    return [...this.conns.values()];
  }

  /** A document changed locally: push it to the edge that holds it, if connected. */
  notify(id: DocId): void {
    const p = parseMailboxDocId(id);
    if (p) this.conns.get(p.edge)?.session.notify(id);
  }

  /** We (the writer) moved a document to a new epoch: tell its edge, then sync the new document. */
  announceEpoch(id: DocId): void {
    const p = parseMailboxDocId(id);
    const c = p && this.conns.get(p.edge);
    const epoch = this.opts.store.epoch(id);
    if (!c || !epoch || c.socket.readyState !== c.socket.OPEN) return;
    c.socket.send(encodeControl({ type: 'epoch', id, epoch }));
    c.session.resetDoc(id);
  }

  /** Closes an edge's connection with a typed error (e.g. decommissioned). */
  disconnect(edge: EdgeName, code: ErrorCode, message: string): void {
    const c = this.conns.get(edge);
    if (c) this.refuse(c.socket, edge, code, message);
  }

  /**
   * Stops serving. `onDisconnect` is not called for the connections it ends (10,000 of them made
   * a hub stop take 13 s): the owner records the stop for every edge in one statement. Each edge is
   * told `why` (close code 1001) on the way out, without waiting for its answer.
   */
  async close(why = 'the hub is shutting down'): Promise<void> {
    this.closing = true;
    clearInterval(this.pingTimer);
    // Persist every session's sync state in one transaction before the sockets go (their close
    // handlers would otherwise write them one commit each: 20,000 commits for 10,000 edges).
    this.opts.store.transaction(() => {
      for (const c of this.conns.values()) c.session.close();
    });
    for (const c of this.conns.values()) {
      try {
        // Close reasons are limited to 123 bytes by the WebSocket protocol.
        if (c.socket.readyState === c.socket.OPEN) c.socket.close(1001, why.slice(0, 120));
      } catch {
        // the socket is going anyway
      }
      c.socket.terminate();
    }
    await new Promise<void>((r) => this.wss.close(() => r()));
  }

  private welcome(ws: WebSocket, edge: EdgeName, hello: HelloMessage, remoteAddress: string): EdgeConnection {
    if (hello.protocol !== PROTOCOL_VERSION) {
      throw new ProtocolError(
        'protocol_version',
        `this hub speaks sync protocol ${PROTOCOL_VERSION}, the edge speaks ${hello.protocol}: upgrade the ${hello.protocol < PROTOCOL_VERSION ? 'edge' : 'hub'} binary`,
      );
    }
    for (const d of hello.docs) {
      const p = parseMailboxDocId(d.id);
      if (!p || p.edge !== edge)
        throw new ProtocolError('forbidden_document', `edge ${edge} may not sync document ${d.id}`);
    }
    const ahead = this.aheadOfUs.get(edge);
    if (ahead && this.opts.restartEpoch) {
      for (const id of ahead) this.opts.restartEpoch(id);
      log.warn(
        { edge, docs: [...ahead] },
        'the edge held changes this hub never made (restored from a backup?): started a new epoch',
      );
    }
    this.aheadOfUs.delete(edge);
    const fresh = !this.opts.store.has(mailboxDocId(edge, 'spec'));
    const docs: MailboxDoc[] = ensureMailbox(this.opts.store, edge, 'hub');
    adoptEpochs(this.opts.store, docs, hello.docs);
    this.opts.beforeWelcome?.(edge, fresh);
    const old = this.conns.get(edge);
    if (old) this.refuse(old.socket, edge, 'replaced', 'a newer connection of this edge replaced this one');
    const session = new SyncSession(
      this.opts.store,
      edge,
      docs,
      (frame) => {
        ws.send(frame);
        this.sentTo.add(ws);
      },
      log.child({ edge }),
    );
    const conn: EdgeConnection = {
      edge,
      id: randomBytes(9).toString('base64url'),
      session,
      socket: ws,
      connectedAt: Date.now(),
      remoteAddress,
      agentVersion: hello.agentVersion,
      sendTunnel: (payload, written) => {
        if (ws.readyState !== ws.OPEN) return false;
        holdTurn(ws);
        ws.send(tunnelMessage(payload), written && (() => written()));
        this.sentTo.add(ws);
        return true;
      },
    };
    this.conns.set(edge, conn);
    // Same epoch and same heads on both sides: nothing to exchange, and no document to load.
    const quiet = new Map<DocId, string[]>();
    for (const h of hello.docs) {
      const meta = h.heads && this.opts.store.meta(h.id as DocId);
      if (meta && meta.epoch === h.epoch && sameHeads(meta.heads, h.heads!)) quiet.set(h.id as DocId, meta.heads);
    }
    ws.send(
      encodeControl({
        type: 'welcome',
        protocol: PROTOCOL_VERSION,
        hubVersion: this.opts.hubVersion,
        edge,
        docs: docs.map((d) => ({ id: d.id, epoch: this.opts.store.epoch(d.id)! })),
        heartbeatSeconds: this.opts.heartbeatSeconds?.(edge) ?? HEARTBEAT_INTERVAL_MS / 1000,
        ...(quiet.size ? { quiet: [...quiet.keys()] } : {}),
      }),
    );
    session.start(quiet);
    log.info({ edge, remoteAddress, agentVersion: hello.agentVersion }, 'edge connected');
    return conn;
  }

  /**
   * Answers hellos received together: `beforeWelcomes` with all of them, each welcome, then
   * `onConnect` with the connections made.
   */
  private answerHellos(received: QueuedHello[]): void {
    const batch = received.filter((h) => h.ws.readyState === h.ws.OPEN);
    if (!batch.length || this.closing) return;
    const store = this.opts.store;
    try {
      this.opts.beforeWelcomes?.(batch.map((h) => ({ edge: h.edge, fresh: !store.has(mailboxDocId(h.edge, 'spec')) })));
    } catch (err) {
      // Only reads ahead: each handshake still reads what it needs itself.
      log.warn({ err, edges: batch.length }, 'reading ahead for a batch of handshakes failed');
    }
    const conns: EdgeConnection[] = [];
    for (const h of batch) {
      try {
        const conn = this.welcome(h.ws, h.edge, h.hello, h.remoteAddress);
        h.welcomed(conn);
        conns.push(conn);
      } catch (err) {
        this.frameFailed(h.ws, h.edge, err);
      }
    }
    if (!conns.length) return;
    try {
      this.opts.onConnect?.(conns);
    } catch (err) {
      log.error({ err, edges: conns.length }, 'internal error recording new connections');
    }
  }

  private frameFailed(ws: WebSocket, edge: EdgeName, err: unknown): void {
    if (err instanceof ProtocolError) {
      if (err.code === 'write_violation' && err.docId)
        (this.aheadOfUs.get(edge) ?? this.aheadOfUs.set(edge, new Set()).get(edge)!).add(err.docId as DocId);
      this.refuse(ws, edge, err.code, err.message);
    } else {
      log.error({ err, edge }, 'internal error handling a frame');
      this.refuse(ws, edge, 'internal', 'internal error on the hub; the edge will reconnect');
    }
  }

  private refuse(ws: WebSocket, edge: EdgeName, code: ErrorCode, message: string): void {
    if (code !== 'replaced') log.warn({ edge, code }, `closing edge connection: ${message}`);
    this.opts.onRefused?.(edge, code, message);
    if (!this.closedByHub.has(ws)) this.closedByHub.set(ws, { code: CLOSE_CODES[code], reason: message });
    try {
      if (ws.readyState === ws.OPEN) ws.send(encodeControl({ type: 'error', code, message }));
      // Close reasons are limited to 123 bytes by the WebSocket protocol.
      ws.close(CLOSE_CODES[code], message.slice(0, 120));
    } catch {
      ws.terminate();
    }
    // A peer that ignores the close handshake is cut off.
    setTimeout(() => ws.terminate(), 2_000).unref();
  }

  /**
   * Every WS_PING_INTERVAL_MS: a connection that did not answer the last ping is cut off; the others
   * are pinged, except those the hub sent a frame to since the last round and heard from: any
   * frame rearms the edge's dead-link timer as a ping does (sync/client.ts), and at 10,000 edges
   * a ping each was ~1.5 s of the hub's CPU in a fan-out (one write per socket). A connection not
   * heard from after a skipped ping is pinged in the next round, so a dead peer is cut off after
   * at most three rounds instead of two, and the edge hears from the hub at least every two.
   */
  private keepalive(): void {
    for (const ws of this.wss.clients) {
      const heard = this.alive.get(ws);
      if (heard === false) {
        log.warn('terminating an edge connection that missed a ping');
        this.closedByHub.set(ws, { code: 1006, reason: 'the edge did not answer a ping in time (a dead link)' });
        ws.terminate();
        continue;
      }
      const sent = this.sentTo.has(ws);
      this.sentTo.delete(ws);
      if (heard === true && sent) {
        this.alive.set(ws, 'quiet');
        continue;
      }
      this.alive.set(ws, false);
      ws.ping();
    }
  }
}
