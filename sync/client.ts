/**
 * @module The edge's end of the sync connection: it dials the hub (the edge is never dialled), sends
 * hello, adopts the hub's epochs, runs a SyncSession and heartbeats, and redials with exponential
 * backoff and jitter for as long as it runs.
 *
 * Connection policy: any close or error leads to a redial; a refusal by the hub (401, protocol
 * version, decommissioned) is logged as an error with what to do, and redialled at the slowest
 * pace, because the fix (a new credential, an upgraded hub) may happen without restarting us.
 */
import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import {
  backoffDelay,
  HANDSHAKE_TIMEOUT_MS,
  HOME_BUSY_GRACE_MS,
  HOME_BUSY_MAX_MS,
  HOME_REDIAL_MS,
  RECONNECT_REFUSED_MS,
  WS_PING_INTERVAL_MS,
} from '../core/durations.js';
import type { DocId, EdgeName } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import { adoptEpochs, ensureMailbox, type MailboxDoc } from './mailbox.js';
import {
  decodeBinary,
  decodeControl,
  encodeControl,
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  ProtocolError,
  type HeartbeatMessage,
  type WelcomeMessage,
} from './messages.js';
import { SyncSession, type SessionStats } from './session.js';
import { tunnelMessage } from './tunnel-frames.js';
import type { ReplicaStore } from './store.js';
import { holdTurn, noteSocket } from './turn-writes.js';

const log = createLogger('sync:client');

export interface SyncClientOptions {
  /**
   * ws:// or wss:// URL of the hub's sync endpoint, or several (hub replicas, docs/operations.md
   * "HA and scale-out"): the client stays with the one that works and moves to the next in the
   * list whenever a connection fails or ends.
   */
  url: string | readonly string[];
  token: string;
  edge: EdgeName;
  store: ReplicaStore;
  agentVersion: string;
  /** PEM of the CA the hub's certificate must chain to (pinned at enrollment). */
  ca?: string;
  maxFrameBytes?: number;
  /** Gauges sent with each heartbeat (never written into a document). */
  metrics?: () => HeartbeatMessage['metrics'];
  /** Override the heartbeat period (tests, benchmarks); otherwise the hub's welcome decides. */
  heartbeatMs?: number;
  /** With several URLs: how long only the URL that served it is dialled (default HOME_REDIAL_MS). */
  homeRedialMs?: number;
}

export type ConnectionState = 'connecting' | 'connected' | 'disconnected' | 'stopped';

export interface SyncClientEvents {
  state: [ConnectionState, { code?: number; reason?: string }];
  /** The hub says this edge is decommissioned (a typed close, or a 401 with that code): final. */
  decommissioned: [string];
  welcome: [WelcomeMessage];
  tunnel: [Buffer];
}

/**
 * The masks of our frames on a TLS connection: all zero, which `ws` skips on both ends. RFC 6455
 * has a client mask its frames so that a cleartext proxy that does not speak WebSocket cannot be
 * made to cache attacker-chosen bytes; inside TLS no proxy sees them, and masking was a fifth of
 * what a relayed byte cost the hub (docs/benchmarks.md, "Interconnect"). Cleartext (`ws:`,
 * --insecure-http) keeps random masks.
 */
function zeroMask(mask: Buffer): void {
  mask.fill(0);
}

export class SyncClient extends EventEmitter<SyncClientEvents> {
  state: ConnectionState = 'disconnected';
  session: SyncSession | undefined;
  /** Totals over every connection of this client. */
  readonly totals: SessionStats & { connects: number } = {
    bytesIn: 0,
    bytesOut: 0,
    messagesIn: 0,
    messagesOut: 0,
    staleFrames: 0,
    connects: 0,
  };
  private ws: WebSocket | undefined;
  private attempt = 0;
  private stopped = true;
  private retryTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private deadTimer: NodeJS.Timeout | undefined;
  private refusedSlow = false;
  private retryAfterMs: number | undefined;

  constructor(private readonly opts: SyncClientOptions) {
    super();
  }

  /** Makes sure the local mailbox exists (the edge works offline from the first second) and dials. */
  start(): void {
    if (!this.stopped) return;
    ensureMailbox(this.opts.store, this.opts.edge, 'edge');
    this.stopped = false;
    this.dial();
  }

  /**
   * Stops for good, telling the hub `why` (close code 1001, going away): an agent upgrade, an
   * operator's stop or restart. The hub's connection history shows it.
   */
  async stop(why = 'edge agent stopping'): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const ws = this.ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        // Close reasons are limited to 123 bytes by the WebSocket protocol.
        ws.close(1001, Buffer.from(why).subarray(0, 120).toString());
        setTimeout(() => {
          ws.terminate();
          resolve();
        }, 1_000).unref();
      });
    }
    this.teardown();
    this.setState('stopped', {});
  }

  /** A local document changed: push it if connected (otherwise the next connection carries it). */
  notify(id: DocId): void {
    this.session?.notify(id);
  }

  /** We (the writer) moved a document to a new epoch: tell the hub, then sync the new document. */
  announceEpoch(id: DocId): void {
    const ws = this.ws;
    const epoch = this.opts.store.epoch(id);
    if (!ws || ws.readyState !== WebSocket.OPEN || !this.session || !epoch) return;
    ws.send(encodeControl({ type: 'epoch', id, epoch }));
    this.session.resetDoc(id);
  }

  /** True when the hub is known to hold exactly our heads of `id`. */
  inSync(id: DocId): boolean {
    return this.state === 'connected' && !!this.session?.inSync([id]);
  }

  /** Sends a tunnel payload (frame type 0x02); false when not connected. `written` once it left for the kernel. */
  sendTunnel(payload: Buffer, written?: () => void): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || !this.session) return false;
    holdTurn(ws);
    ws.send(tunnelMessage(payload), written && (() => written()));
    return true;
  }

  /**
   * Milliseconds until the hub answers a WebSocket ping sent now (undefined when not connected).
   * Frames on one connection arrive in order, so once it resolves every frame the hub sent before
   * it answered is here: a barrier for readings of the connection's counters, and a latency probe.
   */
  roundTrip(): Promise<number | undefined> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.resolve(undefined);
    const t0 = Date.now();
    return new Promise((resolve) => {
      const done = (): void => {
        ws.off('pong', done);
        ws.off('close', done);
        resolve(ws.readyState === WebSocket.OPEN ? Date.now() - t0 : undefined);
      };
      ws.on('pong', done);
      ws.on('close', done);
      ws.ping();
    });
  }

  /** Bytes buffered in the socket but not yet written (for tunnel flow control). */
  bufferedAmount(): number {
    return this.ws?.bufferedAmount ?? 0;
  }

  /** Why the last attempt to connect failed, until a connection succeeds (`outpost edge local status`). */
  lastError: { message: string; at: string } | undefined;
  private lastErrorLoggedAt = 0;

  private noteError(message: string): void {
    this.lastError = { message, at: new Date().toISOString() };
  }

  private setState(s: ConnectionState, info: { code?: number; reason?: string }): void {
    this.state = s;
    this.emit('state', s, info);
  }

  private dial(): void {
    if (this.stopped) return;
    this.setState('connecting', {});
    const ws = new WebSocket(this.url, {
      headers: { authorization: `Bearer ${this.opts.token}` },
      maxPayload: this.opts.maxFrameBytes ?? MAX_FRAME_BYTES,
      perMessageDeflate: false,
      handshakeTimeout: 2 * HANDSHAKE_TIMEOUT_MS,
      ...(this.opts.ca ? { ca: this.opts.ca } : {}),
      ...(this.url.startsWith('wss:') ? { generateMask: zeroMask } : {}),
    });
    this.ws = ws;
    ws.once('upgrade', (res) => noteSocket(ws, res.socket));
    let docs: MailboxDoc[] = [];
    let helloHeads = new Map<DocId, string[]>();
    /** This connection was welcomed: the hub at this URL serves the edge and holds its documents. */
    let served = false;
    // The upgrade has its own limit (handshakeTimeout: a busy hub may queue it); the welcome must
    // follow the upgrade within HANDSHAKE_TIMEOUT_MS.
    let welcomeTimer: NodeJS.Timeout | undefined;

    ws.on('unexpected-response', (_req, res) => {
      // 503: the hub is busy; 429: this edge reconnected too often. Both say when to come back.
      if (res.statusCode === 503 || res.statusCode === 429) {
        const retry = Number(res.headers['retry-after']);
        if (retry > 0) this.retryAfterMs = retry * 1000 * (0.75 + Math.random() * 0.5);
        log.debug({ retryAfter: retry, status: res.statusCode }, 'hub busy; coming back later');
        if (res.statusCode === 429)
          this.noteError(`the hub asked this edge to reconnect less often (HTTP 429), retry in ${retry} s`);
        ws.terminate();
        return;
      }
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        const hint =
          res.statusCode === 401
            ? ': the hub does not accept this edge credential; enroll again with a new join token (outpost edge --join-token ...)'
            : '';
        log.error(
          { status: res.statusCode, body: body.slice(0, 500) },
          `hub refused the connection (HTTP ${res.statusCode})${hint}`,
        );
        this.noteError(`hub refused the connection (HTTP ${res.statusCode})${hint}`);
        this.refusedSlow = res.statusCode === 401 || res.statusCode === 403;
        ws.terminate();
        if (res.statusCode === 401) {
          let parsed: { error?: { code?: string; message?: string } } = {};
          try {
            parsed = JSON.parse(body) as typeof parsed;
          } catch {
            // not JSON: an ordinary refusal
          }
          if (parsed.error?.code === 'decommissioned') this.emit('decommissioned', parsed.error.message ?? '');
        }
      });
    });

    ws.on('open', () => {
      welcomeTimer = setTimeout(() => {
        log.warn('no welcome from the hub in time; redialling');
        ws.terminate();
      }, HANDSHAKE_TIMEOUT_MS);
      docs = ensureMailbox(this.opts.store, this.opts.edge, 'edge');
      helloHeads = new Map(docs.map((d) => [d.id, this.opts.store.meta(d.id)?.heads ?? []]));
      ws.send(
        encodeControl({
          type: 'hello',
          protocol: PROTOCOL_VERSION,
          agentVersion: this.opts.agentVersion,
          docs: docs.map((d) => ({ id: d.id, epoch: this.opts.store.epoch(d.id)!, heads: helloHeads.get(d.id) })),
        }),
      );
      this.armDeadTimer();
    });
    ws.on('ping', () => this.armDeadTimer());

    ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
      const buf = Array.isArray(data)
        ? Buffer.concat(data)
        : Buffer.isBuffer(data)
          ? data
          : Buffer.from(data as ArrayBuffer);
      this.armDeadTimer();
      try {
        if (isBinary) {
          const f = decodeBinary(buf);
          if (!this.session) throw new ProtocolError('bad_frame', 'binary frame before welcome');
          if (f.kind === 'sync') this.session.receive(f.frame, buf.length);
          else this.emit('tunnel', f.payload);
          return;
        }
        const msg = decodeControl(buf.toString('utf8'));
        if (msg.type === 'welcome') {
          clearTimeout(welcomeTimer);
          served = true;
          this.homeLostAt = undefined;
          const reset = adoptEpochs(this.opts.store, docs, msg.docs);
          if (reset.length) log.info({ docs: reset }, 'adopted the hub epoch; replica reset and resyncing');
          this.session = new SyncSession(this.opts.store, 'hub', docs, (frame) => ws.send(frame), log);
          this.attempt = 0;
          this.refusedSlow = false;
          this.totals.connects++;
          this.lastError = undefined;
          this.setState('connected', {});
          this.emit('welcome', msg);
          // The hub found our hello heads equal to its own for these: start them settled (the
          // session still sends whatever we changed since the hello).
          const quiet = new Map<DocId, string[]>();
          for (const id of msg.quiet ?? []) {
            const heads = helloHeads.get(id as DocId);
            if (heads && !reset.includes(id as DocId)) quiet.set(id as DocId, heads);
          }
          this.session.start(quiet);
          this.startHeartbeats(this.opts.heartbeatMs ?? msg.heartbeatSeconds * 1000);
        } else if (msg.type === 'error') {
          const fatal = msg.code === 'protocol_version' || msg.code === 'decommissioned';
          this.refusedSlow = fatal;
          (fatal ? log.error.bind(log) : log.warn.bind(log))(
            { code: msg.code },
            `hub closed the connection: ${msg.message}`,
          );
          if (msg.code === 'decommissioned') this.emit('decommissioned', msg.message);
        } else if (msg.type === 'epoch') {
          const d = docs.find((x) => x.id === msg.id);
          if (!d || d.weWrite)
            throw new ProtocolError(
              'forbidden_document',
              `hub announced an epoch for ${msg.id}, which it does not write`,
            );
          adoptEpochs(this.opts.store, docs, [msg]);
          this.session?.resetDoc(d.id);
        }
      } catch (err) {
        const code = err instanceof ProtocolError ? err.code : 'internal';
        log.error({ err, code }, 'bad frame from the hub; reconnecting');
        ws.close(4400, String((err as Error).message).slice(0, 120));
      }
    });

    ws.on('close', (code, reason) => {
      clearTimeout(welcomeTimer);
      this.teardown();
      if (this.stopped) return;
      this.setState('disconnected', { code, reason: reason.toString() });
      this.scheduleRedial(served);
    });
    ws.on('error', (err: NodeJS.ErrnoException) => {
      // A TLS failure is the edge's own to fix (its clock, its CA pin): say which, where an
      // operator looks. Logged when it changes and at most once a minute while it stays.
      const message = connectionErrorMessage(err);
      const now = Date.now();
      if (message !== this.lastError?.message || now - this.lastErrorLoggedAt > 60_000) {
        this.lastErrorLoggedAt = now;
        log.warn({ code: err.code, err: err.message }, `cannot connect to the hub: ${message}`);
      }
      this.noteError(message);
    });
  }

  private teardown(): void {
    clearInterval(this.heartbeatTimer);
    clearTimeout(this.deadTimer);
    if (this.session) {
      const s = this.session.stats;
      this.totals.bytesIn += s.bytesIn;
      this.totals.bytesOut += s.bytesOut;
      this.totals.messagesIn += s.messagesIn;
      this.totals.messagesOut += s.messagesOut;
      this.totals.staleFrames += s.staleFrames;
      this.session.close();
      this.session = undefined;
    }
  }

  private urlAt = 0;

  /** The hub URL this client dials now (of the list it was given). */
  get url(): string {
    const urls = typeof this.opts.url === 'string' ? [this.opts.url] : this.opts.url;
    return urls[this.urlAt % urls.length]!;
  }

  /** When the last connection that was served ended; undefined once served again (or never served). */
  private homeLostAt: number | undefined;
  /** Until when the next dials go to that URL only (homeRedialMs, longer while it answers busy). */
  private homeUntil = 0;

  /**
   * Several hub URLs: the next attempt goes to the next one (a replica down, or unreachable from
   * here), except for homeRedialMs (HOME_REDIAL_MS) after a connection that was served ended (its hub restarted,
   * or closed it): that URL only, whose replica holds this edge's documents and syncs nothing if
   * they are as they were; another replica would write its spec again and take the whole report (a
   * restart of every replica at once moved every edge, docs/benchmarks.md). Then it moves on.
   * While that replica answers busy (503 or 429 with Retry-After: it is up, and holds the
   * documents) the edge waits for it as it asks, up to HOME_BUSY_MAX_MS after the connection ended:
   * in a storm the others are as busy, and taking the edge over costs them more.
   */
  private scheduleRedial(served = false): void {
    const several = typeof this.opts.url !== 'string' && this.opts.url.length > 1;
    const now = Date.now();
    if (served && several) {
      this.homeLostAt = now;
      this.homeUntil = now + (this.opts.homeRedialMs ?? HOME_REDIAL_MS);
    } else if (this.homeLostAt !== undefined && this.retryAfterMs !== undefined)
      this.homeUntil = Math.max(
        this.homeUntil,
        Math.min(this.homeLostAt + HOME_BUSY_MAX_MS, now + this.retryAfterMs + HOME_BUSY_GRACE_MS),
      );
    const homeLeftMs = this.homeLostAt === undefined ? 0 : this.homeUntil - now;
    if (several && homeLeftMs <= 0) {
      if (this.homeLostAt !== undefined) {
        // Its replica stayed down: on to the others at once, not after the backoff built up meanwhile.
        this.homeLostAt = undefined;
        this.attempt = 0;
      }
      this.urlAt = (this.urlAt + 1) % this.opts.url.length;
      log.info({ url: this.url }, 'trying the next hub URL');
    }
    let delay = this.refusedSlow ? RECONNECT_REFUSED_MS : (this.retryAfterMs ?? backoffDelay(this.attempt++));
    // The last dial home comes when its time is up, not a backoff later.
    if (homeLeftMs > 0) delay = Math.min(delay, homeLeftMs);
    this.retryAfterMs = undefined;
    log.debug({ delay }, 'redialling');
    this.retryTimer = setTimeout(() => this.dial(), delay);
  }

  private startHeartbeats(periodMs: number): void {
    clearInterval(this.heartbeatTimer);
    const beat = () => {
      if (this.ws?.readyState === WebSocket.OPEN)
        this.ws.send(encodeControl({ type: 'heartbeat', at: Date.now(), metrics: this.opts.metrics?.() }));
    };
    beat();
    this.heartbeatTimer = setInterval(beat, periodMs);
  }

  /** A hub that neither pings nor sends for two ping periods is gone (half-open TCP): redial. */
  private armDeadTimer(): void {
    clearTimeout(this.deadTimer);
    this.deadTimer = setTimeout(
      () => {
        log.warn('hub silent for two ping periods; reconnecting');
        this.ws?.terminate();
      },
      2 * WS_PING_INTERVAL_MS + 5_000,
    );
  }
}

/** TLS verification codes that mean the edge's clock is off rather than the hub's certificate. */
const CLOCK_CODES = new Set(['CERT_NOT_YET_VALID', 'CERT_HAS_EXPIRED', 'CRL_NOT_YET_VALID', 'CRL_HAS_EXPIRED']);

/** A connection error as an operator should read it: the TLS reason and what to check. */
export function connectionErrorMessage(err: NodeJS.ErrnoException): string {
  const code = err.code ?? '';
  if (CLOCK_CODES.has(code))
    return `TLS: ${err.message} (${code}); this edge's clock says ${new Date().toISOString()}: if that is wrong, fix the clock (NTP) and the edge reconnects by itself`;
  if (code.startsWith('ERR_TLS') || code.includes('CERT') || code.includes('SELF_SIGNED') || code.includes('SSL'))
    return `TLS: ${err.message} (${code}): check the hub's CA pinned at enrollment and the hub's certificate`;
  return `${err.message}${code && !err.message.includes(code) ? ` (${code})` : ''}`;
}
