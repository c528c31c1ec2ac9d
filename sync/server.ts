/**
 * @module The hub's end of the sync connection: authentication in the HTTP upgrade, the versioned
 * handshake (the hellos received together answered in one go), one SyncSession per edge,
 * keepalive, and refusal of hostile input. Admission of upgrades (slots, the line, reconnect
 * tokens): sync/admission.ts.
 *
 * Every inbound frame is handled inside a guard: a decode failure, a foreign document id or a
 * write to a document the edge does not own sends a typed error, closes that one connection with
 * a specific close code and is logged. Other edges are never disturbed.
 */
import type { IncomingMessage, Server as HttpServer } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket, type RawData } from 'ws';
import {
  FRAME_BURST,
  FRAMES_PER_SECOND,
  HANDSHAKE_TIMEOUT_MS,
  HEARTBEAT_INTERVAL_MS,
  REFUSAL_LOG_INTERVAL_MS,
  UPGRADE_DEADLINE_MS,
  WS_PING_INTERVAL_MS,
} from '../core/durations.js';
import { Gatherer, type GatherWindow } from '../core/gather.js';
import { OutpostError } from '../core/errors.js';
import { bearerToken } from '../core/http.js';
import { mailboxDocId, parseMailboxDocId, type DocId, type EdgeName } from '../core/ids.js';
import { createLogger, throttle } from '../core/logger.js';
import { answerAndDestroy, HandshakeAdmission } from './admission.js';
import { adoptEpochs, ensureMailbox, type MailboxDoc } from './mailbox.js';
import {
  CLOSE_CODES,
  decodeBinary,
  decodeControl,
  encodeControl,
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  ProtocolError,
  type ErrorCode,
  type HeartbeatMessage,
  type HelloMessage,
  type SyncFrame,
} from './messages.js';
import { SyncSession } from './session.js';
import type { ReplicaStore } from './store.js';
import { sameHeads } from './wasm-sync.js';

const log = createLogger('sync:server');

export interface EdgeIdentity {
  edge: EdgeName;
}

export interface EdgeConnection {
  readonly edge: EdgeName;
  readonly session: SyncSession;
  readonly socket: WebSocket;
  readonly connectedAt: number;
  readonly remoteAddress: string;
  readonly agentVersion: string;
  /** Sends a tunnel payload (frame type 0x02) to this edge. */
  sendTunnel(payload: Buffer): boolean;
}

export interface SyncServerOptions {
  store: ReplicaStore;
  hubVersion: string;
  path?: string;
  maxFrameBytes?: number;
  /** Keepalive round period (default WS_PING_INTERVAL_MS; tests shorten it). */
  pingIntervalMs?: number;
  /**
   * Handshakes in progress beyond which new upgrades get 503 with Retry-After. After a hub
   * restart thousands of edges return at once; admitting them all makes every handshake slow
   * enough to time out and be retried, which feeds the storm (measured in docs/benchmarks.md).
   */
  maxPendingHandshakes?: number;
  /**
   * Upgrades beyond `maxPendingHandshakes` wait in a FIFO queue of this length for a free slot
   * (the hub never idles while edges wait, and no edge redials into the back of the line); only
   * beyond the queue do they get 503, with a Retry-After that grows with the queue.
   */
  maxQueuedUpgrades?: number;
  /** Resolves the bearer credential of an upgrade request; null refuses it with 401. */
  authenticate(token: string, req: IncomingMessage): EdgeIdentity | null | Promise<EdgeIdentity | null>;
  /**
   * For a credential `authenticate` refused: the message when it is a decommissioned edge's own
   * (then the 401 carries code `decommissioned`, which the edge takes as final), else undefined.
   */
  decommissioned?(token: string): string | undefined;
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
  onDisconnect?(conn: EdgeConnection, code: number, reason: string): void;
  onHeartbeat?(edge: EdgeName, hb: HeartbeatMessage): void;
  onTunnel?(conn: EdgeConnection, payload: Buffer): void;
  /**
   * Starts a new epoch of a document the hub writes, from its current state. Called at the next
   * handshake of an edge whose copy turned out to be ahead of ours (it sent changes we never
   * made: the hub was restored from a backup); the edge then adopts the new epoch.
   */
  restartEpoch?(id: DocId): void;
  /** Refusals are reported here too (metrics, events). */
  onRefused?(edge: EdgeName | null, code: ErrorCode | 'unauthorized' | 'too_many_reconnects', message: string): void;
  /** A connection sent frames past FRAMES_PER_SECOND: the hub stopped reading it for a while. */
  onThrottled?(edge: EdgeName): void;
  /** The upgrade of an authenticated edge succeeded: its socket is long-lived (hub/http-limits.ts exempts it). */
  onUpgraded?(socket: Duplex): void;
}

/** A hello waiting for its turn's batch (SyncServer `answerHellos`). */
interface QueuedHello {
  ws: WebSocket;
  edge: EdgeName;
  hello: HelloMessage;
  remoteAddress: string;
  welcomed(conn: EdgeConnection): void;
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
  /** Sockets the hub sent a sync or tunnel frame to since the last keepalive round. */
  private readonly sentTo = new WeakSet<WebSocket>();
  /** Edges whose copy of a hub-written document is ahead of ours: restart its epoch at their next hello. */
  private readonly aheadOfUs = new Map<EdgeName, Set<DocId>>();
  /**
   * Sync frames received since the last drain, of every connection, in arrival order: applied
   * together in one transaction (a savepoint each) once the socket reads of this turn of the
   * event loop are done, and answered after it committed. One commit per burst instead of one
   * per frame: under a fan-out's Ready reports that commit was the hub's largest single cost.
   */
  private inbox: { conn: EdgeConnection; frame: SyncFrame; bytes: number }[] = [];
  /** Hellos received and not answered yet, answered together (`answerHellos`). */
  private readonly hellos: Gatherer<QueuedHello>;
  private inboxScheduled = false;
  /** Set by close(): the owner records the stop for all edges at once, not one disconnect at a time. */
  private closing = false;
  private readonly admission: HandshakeAdmission;
  /** Refused upgrades are logged at most once per REFUSAL_LOG_INTERVAL_MS, with a count of the others. */
  private readonly refusedLog = throttle(REFUSAL_LOG_INTERVAL_MS);
  readonly path: string;

  constructor(private readonly opts: SyncServerOptions) {
    this.path = opts.path ?? '/api/v1/sync';
    this.hellos = new Gatherer((batch) => this.answerHellos(batch), opts.gatherHellos);
    this.admission = new HandshakeAdmission({
      maxPending: opts.maxPendingHandshakes ?? 256,
      maxQueued: opts.maxQueuedUpgrades ?? 4096,
    });
    // permessage-deflate stays off: it fragments memory under many connections (ws#1202).
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: opts.maxFrameBytes ?? MAX_FRAME_BYTES,
      perMessageDeflate: false,
    });
    this.pingTimer = setInterval(() => this.keepalive(), opts.pingIntervalMs ?? WS_PING_INTERVAL_MS);
    this.pingTimer.unref();
  }

  /** Routes upgrade requests for the sync path to this server; others are left to other handlers. */
  attach(server: HttpServer): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== this.path) return;
      void this.handleUpgrade(req, socket, head);
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

  /** The edge compacted a document it writes: drop our replica and resync the new epoch. */
  private adoptEdgeEpoch(conn: EdgeConnection, id: string, epoch: string): void {
    const p = parseMailboxDocId(id);
    if (!p || p.edge !== conn.edge || p.role !== 'report')
      throw new ProtocolError('forbidden_document', `edge ${conn.edge} may not move ${id} to a new epoch`);
    adoptEpochs(
      this.opts.store,
      [{ id: id as DocId, weWrite: false, epoch: this.opts.store.epoch(id as DocId) ?? '' }],
      [{ id, epoch }],
    );
    conn.session.resetDoc(id as DocId);
  }

  /** Closes an edge's connection with a typed error (e.g. decommissioned). */
  disconnect(edge: EdgeName, code: ErrorCode, message: string): void {
    const c = this.conns.get(edge);
    if (c) this.refuse(c.socket, edge, code, message);
  }

  /**
   * Stops serving. `onDisconnect` is not called for the connections it ends (10,000 of them made
   * a hub stop take 13 s): the owner records the stop for every edge in one statement.
   */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.pingTimer);
    // Persist every session's sync state in one transaction before the sockets go (their close
    // handlers would otherwise write them one commit each: 20,000 commits for 10,000 edges).
    this.opts.store.transaction(() => {
      for (const c of this.conns.values()) c.session.close();
    });
    for (const c of this.conns.values()) c.socket.terminate();
    await new Promise<void>((r) => this.wss.close(() => r()));
  }

  private async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    // Every state before the WebSocket exists has a deadline (authenticating, waiting in line);
    // after it, the hello must come within HANDSHAKE_TIMEOUT_MS (onSocket).
    const deadline = setTimeout(() => {
      this.admission.dropQueued(socket);
      answerAndDestroy(
        socket,
        new OutpostError('unavailable', 'the hub took too long to admit this edge: come back in 5 s'),
        {
          'Retry-After': 5,
        },
      );
    }, UPGRADE_DEADLINE_MS);
    deadline.unref();
    socket.once('close', () => clearTimeout(deadline));
    // The credential is checked before the upgrade takes a handshake slot or a place in line:
    // unauthenticated clients cannot crowd out edges.
    const token = bearerToken(req.headers.authorization);
    let identity: EdgeIdentity | null = null;
    try {
      identity = token ? await this.opts.authenticate(token, req) : null;
    } catch (err) {
      // The credential could not be checked (the hub's database is away): not a refusal of the
      // credential, which would tell the edge to enroll again. It comes back later.
      log.error({ err }, 'authenticating an edge failed');
      clearTimeout(deadline);
      answerAndDestroy(
        socket,
        new OutpostError('unavailable', 'the hub cannot check edge credentials now: come back in 5 s'),
        { 'Retry-After': 5 },
      );
      return;
    }
    if (socket.destroyed) return;
    if (!identity) {
      clearTimeout(deadline);
      const why = token
        ? 'the edge credential is not valid (revoked, decommissioned or unknown): enroll the edge again with a new join token'
        : 'missing bearer credential';
      this.refusedLog((suppressed) =>
        log.warn(
          { remote: req.socket.remoteAddress, ...(suppressed ? { suppressed } : {}) },
          `refused sync upgrade: ${why}${suppressed ? ` (and ${suppressed} more refusals since the last line)` : ''}`,
        ),
      );
      const gone = token ? this.opts.decommissioned?.(token) : undefined;
      this.opts.onRefused?.(null, 'unauthorized', gone ?? why);
      answerAndDestroy(socket, new OutpostError(gone ? 'decommissioned' : 'unauthorized', gone ?? why));
      return;
    }
    const wait = this.admission.reconnectWaitMs(identity.edge);
    if (wait > 0) {
      clearTimeout(deadline);
      const retry = Math.ceil(wait / 1000);
      const why = `edge ${identity.edge} reconnects too often: come back in ${retry} s`;
      this.refusedLog((suppressed) =>
        log.warn({ edge: identity.edge, ...(suppressed ? { suppressed } : {}) }, `refused sync upgrade: ${why}`),
      );
      this.opts.onRefused?.(identity.edge, 'too_many_reconnects', why);
      answerAndDestroy(socket, new OutpostError('too_many_requests', why), { 'Retry-After': retry });
      return;
    }
    this.admission.admit(socket, deadline, (done) => {
      try {
        this.wss.handleUpgrade(req, socket, head, (ws) => this.onSocket(ws, identity, req, done));
      } catch (err) {
        done();
        socket.destroy();
        log.error({ err }, 'upgrading a sync connection failed');
      }
    });
  }

  private onSocket(ws: WebSocket, identity: EdgeIdentity, req: IncomingMessage, handshakeDone: () => void): void {
    const edge = identity.edge;
    const remoteAddress = req.socket.remoteAddress ?? '';
    let conn: EdgeConnection | undefined;
    let helloSent = false;
    this.alive.set(ws, true);
    ws.on('pong', () => this.alive.set(ws, true));
    const handshakeTimer = setTimeout(
      () => this.refuse(ws, edge, 'bad_frame', 'no hello within the handshake timeout'),
      HANDSHAKE_TIMEOUT_MS,
    );
    this.opts.onUpgraded?.(req.socket);
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
      this.opts.onThrottled?.(edge);
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
      this.alive.set(ws, true);
      try {
        if (!conn) {
          if (helloSent)
            throw new ProtocolError('bad_frame', 'a frame before the welcome: wait for the hub to answer the hello');
          if (isBinary) throw new ProtocolError('bad_frame', 'expected a hello text frame first');
          const msg = decodeControl(buf.toString('utf8'));
          if (msg.type !== 'hello') throw new ProtocolError('bad_frame', `expected hello, got ${msg.type}`);
          clearTimeout(handshakeTimer);
          helloSent = true;
          this.queueHello({
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
          if (f.kind === 'sync') this.enqueue(conn, f.frame, buf.length);
          else this.opts.onTunnel?.(conn, f.payload);
          return;
        }
        const msg = decodeControl(buf.toString('utf8'));
        if (msg.type === 'heartbeat') this.opts.onHeartbeat?.(edge, msg);
        else if (msg.type === 'epoch') this.adoptEdgeEpoch(conn, msg.id, msg.epoch);
        else if (msg.type === 'error') log.warn({ edge, code: msg.code }, `edge reported: ${msg.message}`);
        else throw new ProtocolError('bad_frame', `unexpected ${msg.type} message after the handshake`);
      } catch (err) {
        this.frameFailed(ws, edge, err);
      }
    });

    ws.on('close', (code, reasonBuf) => {
      clearTimeout(handshakeTimer);
      handshakeDone();
      if (!conn) return;
      conn.session.close();
      if (this.conns.get(edge) === conn) this.conns.delete(edge);
      const reason = reasonBuf.toString();
      if (this.closing) return;
      log.info(
        { edge, code, reason, bytesIn: conn.session.stats.bytesIn, bytesOut: conn.session.stats.bytesOut },
        'edge disconnected',
      );
      this.opts.onDisconnect?.(conn, code, reason);
    });
    ws.on('error', (err) => log.warn({ err, edge }, 'edge socket error'));
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
      session,
      socket: ws,
      connectedAt: Date.now(),
      remoteAddress,
      agentVersion: hello.agentVersion,
      sendTunnel: (payload) => {
        if (ws.readyState !== ws.OPEN) return false;
        ws.send(Buffer.concat([Buffer.from([0x02]), payload]));
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

  private queueHello(h: QueuedHello): void {
    this.hellos.add(h);
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

  private enqueue(conn: EdgeConnection, frame: SyncFrame, bytes: number): void {
    this.inbox.push({ conn, frame, bytes });
    if (this.inboxScheduled) return;
    this.inboxScheduled = true;
    setImmediate(() => this.drainInbox());
  }

  /** Applies the frames received since the last drain in one transaction, then answers them. */
  private drainInbox(): void {
    this.inboxScheduled = false;
    const items = this.inbox;
    this.inbox = [];
    // One answer per connection and document, however many of its frames the burst held.
    const answer = new Map<EdgeConnection, Set<DocId>>();
    const failed = new Set<EdgeConnection>();
    try {
      this.opts.store.batch(() => {
        for (const it of items) {
          // A connection refused earlier in this burst, or gone since: its later frames are moot.
          if (failed.has(it.conn) || this.conns.get(it.conn.edge) !== it.conn) continue;
          try {
            const id = it.conn.session.receive(it.frame, it.bytes, { deferFlush: true });
            if (id) (answer.get(it.conn) ?? answer.set(it.conn, new Set()).get(it.conn)!).add(id);
          } catch (err) {
            failed.add(it.conn);
            this.frameFailed(it.conn.socket, it.conn.edge, err);
          }
        }
      });
    } catch (err) {
      // The commit failed (a full disk): nothing of this burst is kept. What each session learnt
      // from its frames is forgotten, and its edge reconnects and sends them again.
      log.error({ err, frames: items.length }, 'could not keep a burst of sync frames; those edges reconnect');
      for (const it of items) {
        it.conn.session.forget(it.frame.docId as DocId);
        if (!failed.has(it.conn)) {
          failed.add(it.conn);
          this.refuse(
            it.conn.socket,
            it.conn.edge,
            'internal',
            'the hub could not store what the edge sent; it will reconnect',
          );
        }
      }
      return;
    }
    for (const [conn, ids] of answer) if (!failed.has(conn)) for (const id of ids) conn.session.flush(id);
  }

  private refuse(ws: WebSocket, edge: EdgeName, code: ErrorCode, message: string): void {
    if (code !== 'replaced') log.warn({ edge, code }, `closing edge connection: ${message}`);
    this.opts.onRefused?.(edge, code, message);
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
