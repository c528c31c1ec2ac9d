/**
 * @module The tunnel: many byte streams from the hub into an edge, multiplexed inside frame type
 * 0x02 of the one sync WebSocket (docs/tunnel.md). Both ends run a `TunnelMux`. Both may open
 * streams: the hub's ids are 1..0x7fffffff, the edge's 0x80000000..0xffffffff (so the two never
 * collide); the edge opens streams only for blob transfers (sync/transfer.ts).
 *
 * Payload of a 0x02 frame: `[u8 kind][u32 BE stream id][body]`, kinds:
 * OPEN (JSON header, hub -> edge), DATA (bytes), WINDOW (u32 BE credit), END (no more data from
 * the sender), RESET (JSON `{code, message}`, aborts both directions), META (JSON, out-of-band
 * about the stream: response head, exit status; ordered with DATA).
 *
 * Why flow control lives here and not in ws: a 50 MB download must never stall mailbox sync on
 * the same socket. So (1) each direction of each stream has a credit window: a sender never has
 * more than `INITIAL_WINDOW` unacknowledged bytes, and the receiver grants more only as its
 * consumer drains them (a slow consumer stops its own stream, nobody else's); (2) the mux sends
 * tunnel bytes only while the socket's `bufferedAmount` is under `SOCKET_HIGH_WATER`, so a sync
 * frame queued by `ws.send` waits behind at most that much; (3) every stream is a Node Duplex
 * with bounded buffers: `write()` returns false and callers (pipe) wait for 'drain'. Nothing
 * queues without bound.
 *
 * @example
 * const mux = new TunnelMux({ send: (p) => conn.sendTunnel(p), bufferedAmount: () => conn.socket.bufferedAmount });
 * const s = mux.open({ type: 'logs', workload: 'web' });
 * s.pipe(res);
 */
import { Duplex } from 'node:stream';
import { z } from 'zod';
import { createLogger } from '../core/logger.js';
import { OutpostError, type ConvertsToOutpostError, type ErrorCode } from '../core/errors.js';

const log = createLogger('sync:tunnel');

export const TUNNEL_OPEN = 1;
export const TUNNEL_DATA = 2;
export const TUNNEL_WINDOW = 3;
export const TUNNEL_END = 4;
export const TUNNEL_RESET = 5;
export const TUNNEL_META = 6;

/** Credit per direction of a stream: large enough to fill a WAN pipe per stream, small enough that 256 streams stay under 64 MiB. */
export const INITIAL_WINDOW = 256 * 1024;
/** Largest DATA body; well under MAX_FRAME_BYTES, and small so sync frames interleave finely. */
export const MAX_DATA_BYTES = 32 * 1024;
/** Tunnel bytes may fill the socket buffer up to here; above it the mux waits so sync frames go first. */
export const SOCKET_HIGH_WATER = 512 * 1024;
/** How often a mux blocked on the socket buffer looks again (ws has no drain event for bufferedAmount). */
const BLOCKED_POLL_MS = 5;
/** Bound on a JSON header or META body. */
const MAX_JSON_BYTES = 64 * 1024;

export type TunnelErrorCode =
  | 'refused'
  | 'not_found'
  | 'forbidden'
  | 'unavailable'
  | 'deadline'
  | 'budget'
  | 'disconnected'
  | 'protocol'
  | 'aborted'
  | 'internal';

/** What each tunnel code means to the hub's HTTP client (core/errors.ts ERROR_CODES). */
const CLIENT_CODES: Partial<Record<TunnelErrorCode, ErrorCode>> = {
  not_found: 'not_found',
  forbidden: 'forbidden',
  refused: 'bad_request',
  unavailable: 'bad_gateway',
  disconnected: 'edge_disconnected',
  deadline: 'deadline',
  budget: 'too_large',
};

/** A stream that ended abnormally, with a code both ends understand. */
export class TunnelError extends Error implements ConvertsToOutpostError {
  constructor(
    readonly code: TunnelErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'TunnelError';
  }

  /** The error a client of the tunnel is told (protocol, aborted and internal: bad_gateway). */
  toOutpostError(): OutpostError {
    return new OutpostError(CLIENT_CODES[this.code] ?? 'bad_gateway', this.message, { cause: this });
  }
}

export interface TunnelTransport {
  /** Sends one 0x02 payload; false when the connection is gone. */
  send(payload: Buffer): boolean;
  bufferedAmount(): number;
}

export interface StreamLimits {
  /** The stream is reset with `deadline` after this long. */
  deadlineMs?: number;
  /** The stream is reset with `budget` once this many bytes moved (both directions together). */
  maxBytes?: number;
}

type Outgoing =
  | { kind: 'data'; buf: Buffer; cb?: (err?: Error | null) => void }
  | { kind: 'meta'; json: unknown }
  | { kind: 'end'; cb?: (err?: Error | null) => void };

function frame(kind: number, id: number, body?: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + (body?.length ?? 0));
  out[0] = kind;
  out.writeUInt32BE(id, 1);
  if (body) body.copy(out, 5);
  return out;
}

function json(v: unknown): Buffer {
  return Buffer.from(JSON.stringify(v), 'utf8');
}

export interface TunnelStreamEvents {
  meta: (m: Record<string, unknown>) => void;
}

/** One multiplexed stream: a Duplex whose writes go to the peer and whose reads come from it. */
export class TunnelStream extends Duplex {
  /** Bytes we may still send before the peer grants more. */
  sendWindow = INITIAL_WINDOW;
  readonly queue: Outgoing[] = [];
  bytesIn = 0;
  bytesOut = 0;
  localEnded = false;
  remoteEnded = false;
  reset = false;
  /** Credit given back to the peer so far. */
  granted = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly id: number,
    private readonly mux: TunnelMux,
    readonly header: Record<string, unknown>,
    private readonly limits: StreamLimits = {},
  ) {
    super({ readableHighWaterMark: INITIAL_WINDOW, writableHighWaterMark: 64 * 1024, allowHalfOpen: true });
    if (limits.deadlineMs) {
      this.timer = setTimeout(
        () =>
          this.destroy(
            new TunnelError('deadline', `the stream passed its deadline of ${Math.round(limits.deadlineMs! / 1000)}s`),
          ),
        limits.deadlineMs,
      );
      this.timer.unref();
    }
  }

  /** Sends an out-of-band JSON message, ordered with the data written before it. */
  sendMeta(m: Record<string, unknown>): void {
    if (this.reset || this.localEnded) return;
    this.queue.push({ kind: 'meta', json: m });
    this.mux.schedule();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.reset) return cb(new TunnelError('aborted', 'the stream was reset'));
    this.count(chunk.length, 'out');
    if (this.destroyed) return cb();
    for (let off = 0; off < chunk.length; off += MAX_DATA_BYTES) {
      const last = off + MAX_DATA_BYTES >= chunk.length;
      this.queue.push({ kind: 'data', buf: chunk.subarray(off, off + MAX_DATA_BYTES), ...(last ? { cb } : {}) });
    }
    if (chunk.length === 0) return cb();
    this.mux.schedule();
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (this.reset) return cb();
    this.queue.push({ kind: 'end', cb });
    this.mux.schedule();
  }

  /**
   * Credit goes back as our consumer takes bytes out of the read buffer. Checked after every
   * `read()` (pipe, flowing mode and async iteration all go through it), not in `_read`, which
   * Node calls before it takes the data out and then not again until the next push.
   */
  override read(size?: number): any {
    const chunk: unknown = super.read(size);
    const consumed = this.bytesIn - this.readableLength - this.granted;
    if (consumed >= INITIAL_WINDOW / 4 || (consumed > 0 && this.readableLength === 0)) {
      this.granted += consumed;
      this.mux.sendNow(frame(TUNNEL_WINDOW, this.id, u32(consumed)));
    }
    return chunk;
  }

  override _read(): void {
    // Data arrives when the peer sends it; credit is granted in read().
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    clearTimeout(this.timer);
    if (!this.reset && !(this.localEnded && this.remoteEnded)) {
      this.reset = true;
      const e =
        err instanceof TunnelError
          ? err
          : new TunnelError('aborted', err?.message ?? 'closed by the other side of the tunnel');
      this.mux.sendNow(frame(TUNNEL_RESET, this.id, json({ code: e.code, message: e.message })));
    }
    for (const o of this.queue.splice(0))
      if (o.kind !== 'meta') o.cb?.(err ?? new TunnelError('aborted', 'the stream was closed'));
    this.mux.forget(this);
    cb(err);
  }

  /** @internal */
  count(n: number, dir: 'in' | 'out'): void {
    if (dir === 'in') this.bytesIn += n;
    else this.bytesOut += n;
    if (this.limits.maxBytes && this.bytesIn + this.bytesOut > this.limits.maxBytes) {
      this.destroy(new TunnelError('budget', `the stream passed its budget of ${this.limits.maxBytes} bytes`));
    }
  }

  /** @internal the peer reset the stream */
  remoteReset(code: TunnelErrorCode, message: string): void {
    this.reset = true;
    this.destroy(new TunnelError(code, message));
  }

  /** @internal */
  onEnded(): void {
    if (this.localEnded && this.remoteEnded) {
      clearTimeout(this.timer);
      this.mux.forget(this);
    }
  }
}

function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n, 0);
  return b;
}

/** Ids of streams the edge opens start here; the hub's stay below. */
export const EDGE_STREAM_ID_BASE = 0x80000000;

export interface TunnelMuxOptions extends TunnelTransport {
  /** Which end this is: it decides the ids of the streams we open and those the peer may open. */
  side?: 'hub' | 'edge';
  /** Called for each stream the peer opens (the edge's side); without it OPEN is refused. */
  onStream?(stream: TunnelStream): void;
  /** Bound on concurrently open streams; more are refused. */
  maxStreams?: number;
}

/** Both ends of the tunnel: stream table, frame codec, flow control and fair scheduling. */
export class TunnelMux {
  private readonly streams = new Map<number, TunnelStream>();
  private nextId: number;
  private readonly firstId: number;
  private readonly lastId: number;
  private ready: TunnelStream[] = [];
  private pumping = false;
  private blockedTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Streams opened over the mux's life (for metrics). */
  opened = 0;

  constructor(private readonly opts: TunnelMuxOptions) {
    const edge = opts.side === 'edge';
    this.firstId = edge ? EDGE_STREAM_ID_BASE : 1;
    this.lastId = edge ? 0xffffffff : EDGE_STREAM_ID_BASE - 1;
    this.nextId = this.firstId;
  }

  /** True for an id the peer may open (one from its own range). */
  private peerId(id: number): boolean {
    return id !== 0 && (id < this.firstId || id > this.lastId);
  }

  get size(): number {
    return this.streams.size;
  }

  /** Opens a stream to the peer with `header` (the edge decides what it means). */
  open(header: Record<string, unknown>, limits: StreamLimits = {}): TunnelStream {
    if (this.closed) throw new TunnelError('disconnected', 'the tunnel is closed');
    const max = this.opts.maxStreams ?? 1024;
    if (this.streams.size >= max)
      throw new TunnelError('unavailable', `too many open tunnel streams (${max}); retry when some finish`);
    const id = this.nextId;
    this.nextId = this.nextId >= this.lastId ? this.firstId : this.nextId + 1;
    const s = new TunnelStream(id, this, header, limits);
    this.streams.set(id, s);
    this.opened++;
    this.sendNow(frame(TUNNEL_OPEN, id, json(header)));
    return s;
  }

  /**
   * Handles one 0x02 payload from the peer. Throws on a malformed frame (the caller closes the
   * connection: peer input is untrusted); frames about unknown streams are dropped, since a reset
   * may cross DATA already in flight.
   */
  receive(payload: Buffer): void {
    if (payload.length < 5) throw new TunnelError('protocol', 'truncated tunnel frame');
    const kind = payload[0];
    const id = payload.readUInt32BE(1);
    const body = payload.subarray(5);
    const s = this.streams.get(id);
    switch (kind) {
      case TUNNEL_OPEN: {
        if (s || !this.opts.onStream || !this.peerId(id)) {
          this.sendNow(
            frame(
              TUNNEL_RESET,
              id,
              json({
                code: 'refused',
                message: s
                  ? 'stream id in use'
                  : this.opts.onStream
                    ? "stream id outside the opener's range"
                    : 'this side does not accept streams',
              }),
            ),
          );
          return;
        }
        const header = parseJson(body);
        if (this.streams.size >= (this.opts.maxStreams ?? 1024)) {
          this.sendNow(
            frame(
              TUNNEL_RESET,
              id,
              json({ code: 'unavailable', message: 'too many open tunnel streams on the edge; retry later' }),
            ),
          );
          return;
        }
        const ns = new TunnelStream(id, this, header);
        this.streams.set(id, ns);
        this.opened++;
        this.opts.onStream(ns);
        return;
      }
      case TUNNEL_DATA: {
        if (!s) return;
        if (s.remoteEnded) throw new TunnelError('protocol', `data after end on stream ${id}`);
        // The peer may have at most INITIAL_WINDOW bytes we have not granted back; more means it ignores flow control.
        if (s.bytesIn - s.granted + body.length > INITIAL_WINDOW) {
          log.warn({ stream: id }, 'tunnel peer exceeded its flow-control window; resetting the stream');
          s.destroy(new TunnelError('protocol', 'flow control window exceeded'));
          return;
        }
        s.count(body.length, 'in');
        if (!s.destroyed) s.push(Buffer.from(body));
        return;
      }
      case TUNNEL_WINDOW: {
        if (!s || body.length !== 4) return;
        s.sendWindow += body.readUInt32BE(0);
        this.schedule();
        return;
      }
      case TUNNEL_END: {
        if (!s) return;
        s.remoteEnded = true;
        s.push(null);
        s.onEnded();
        return;
      }
      case TUNNEL_RESET: {
        if (!s) return;
        let code: TunnelErrorCode = 'aborted';
        let message = 'reset by the other side of the tunnel';
        try {
          const j = parseJson(body) as { code?: string; message?: string };
          if (typeof j.code === 'string') code = j.code as TunnelErrorCode;
          if (typeof j.message === 'string') message = j.message.slice(0, 2000);
        } catch {
          // a reset is final whatever its body says
        }
        s.remoteReset(code, message);
        return;
      }
      case TUNNEL_META: {
        if (!s) return;
        s.emit('meta', parseJson(body));
        return;
      }
      default:
        throw new TunnelError('protocol', `unknown tunnel frame kind ${kind}`);
    }
  }

  /** The connection is gone: every stream fails with `disconnected`. */
  close(message = 'the edge disconnected'): void {
    this.closed = true;
    clearTimeout(this.blockedTimer);
    for (const s of [...this.streams.values()]) {
      s.reset = true;
      s.destroy(new TunnelError('disconnected', message));
    }
    this.streams.clear();
    this.ready = [];
  }

  /** @internal control frames (OPEN, WINDOW, RESET) skip the data queue: they are tiny and unblock the peer. */
  sendNow(payload: Buffer): void {
    if (!this.closed) this.opts.send(payload);
  }

  /** @internal */
  forget(s: TunnelStream): void {
    if (this.streams.get(s.id) === s) this.streams.delete(s.id);
  }

  /** @internal */
  schedule(): void {
    if (!this.pumping) queueMicrotask(() => this.pump());
    this.pumping = true;
  }

  /** Round-robin over streams with something sendable, while the socket buffer has room. */
  private pump(): void {
    this.pumping = false;
    clearTimeout(this.blockedTimer);
    this.blockedTimer = undefined;
    if (this.closed) return;
    this.ready = [...this.streams.values()].filter((s) => s.queue.length > 0);
    let progressed = true;
    while (progressed) {
      progressed = false;
      for (const s of this.ready) {
        if (this.opts.bufferedAmount() >= SOCKET_HIGH_WATER) {
          this.blockedTimer = setTimeout(() => this.pump(), BLOCKED_POLL_MS);
          return;
        }
        if (this.sendOne(s)) progressed = true;
      }
      this.ready = this.ready.filter((s) => s.queue.length > 0 && !s.destroyed);
    }
  }

  /** Sends the head of one stream's queue (or part of it); false when the stream cannot send now. */
  private sendOne(s: TunnelStream): boolean {
    const o = s.queue[0];
    if (!o || s.destroyed) return false;
    if (o.kind === 'meta') {
      s.queue.shift();
      this.opts.send(frame(TUNNEL_META, s.id, json(o.json)));
      return true;
    }
    if (o.kind === 'end') {
      s.queue.shift();
      this.opts.send(frame(TUNNEL_END, s.id));
      s.localEnded = true;
      o.cb?.();
      s.onEnded();
      return true;
    }
    if (s.sendWindow <= 0) return false;
    const n = Math.min(o.buf.length, s.sendWindow);
    const piece = o.buf.subarray(0, n);
    s.sendWindow -= n;
    if (!this.opts.send(frame(TUNNEL_DATA, s.id, piece))) {
      s.destroy(new TunnelError('disconnected', 'the tunnel connection is gone'));
      return false;
    }
    if (n === o.buf.length) {
      s.queue.shift();
      o.cb?.();
    } else o.buf = o.buf.subarray(n);
    return true;
  }
}

function parseJson(body: Buffer): Record<string, unknown> {
  if (body.length > MAX_JSON_BYTES)
    throw new TunnelError('protocol', `tunnel JSON of ${body.length} bytes exceeds ${MAX_JSON_BYTES}`);
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    throw new TunnelError('protocol', 'tunnel frame body is not JSON');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new TunnelError('protocol', 'tunnel frame body is not a JSON object');
  return v as Record<string, unknown>;
}

/** What a stream is for: the OPEN header, validated by the edge (peer input is untrusted). */
export const TunnelRequest = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('http'),
    /** `kube`: the edge's cluster API; otherwise a declared port of a workload. */
    target: z.union([
      z.literal('kube'),
      z.object({ workload: z.string().max(63), port: z.number().int().min(1).max(65535) }),
    ]),
    method: z.string().regex(/^[A-Z]{1,16}$/),
    /** Path and query on the target, starting with `/`. */
    path: z.string().startsWith('/').max(8192),
    headers: z.record(z.string().max(256), z.union([z.string().max(16384), z.array(z.string().max(16384)).max(64)])),
    /** An HTTP upgrade (WebSocket, SPDY): after the 101 the stream carries raw bytes both ways. */
    upgrade: z.boolean().optional(),
  }),
  z.object({
    type: z.literal('logs'),
    workload: z.string().max(63),
    container: z.string().max(253).optional(),
    follow: z.boolean().optional(),
    tail: z.number().int().min(0).optional(),
    /** `--since 5m`: lines of the last N seconds on the edge's clock (up to ten years). */
    sinceSeconds: z.number().int().min(1).max(315_360_000).optional(),
    /** `--since 2026-01-01T00:00:00Z`: lines written at or after this time (epoch ms). */
    sinceMs: z.number().int().min(0).max(8_640_000_000_000_000).optional(),
    /** Prefix each line with its RFC 3339 time. */
    timestamps: z.boolean().optional(),
  }),
  z.object({
    type: z.literal('exec'),
    workload: z.string().max(63),
    container: z.string().max(253).optional(),
    command: z.array(z.string().max(65536)).min(1).max(1024),
    interactive: z.boolean().optional(),
    tty: z.boolean().optional(),
    /** The client's terminal size, for a tty (`stty size` in the session). */
    size: z.object({ cols: z.number().int().min(1).max(10_000), rows: z.number().int().min(1).max(10_000) }).optional(),
  }),
  z.object({ type: z.literal('action'), workload: z.string().max(63), action: z.enum(['restart', 'stop', 'start']) }),
  /** The edge agent's own Prometheus page (`GET /api/v1/edges/NAME/metrics` on the hub). */
  z.object({ type: z.literal('metrics') }),
]);
export type TunnelRequest = z.infer<typeof TunnelRequest>;

/** The edge's answer before any data: `{status, headers}` for http, `{ok}` for logs, `{exitCode,...}` for exec. */
export type TunnelHead =
  | { status: number; headers: Record<string, string | string[]> }
  | { ok: true; message?: string }
  | { exitCode: number; stdout?: string; stderr?: string };

/** Interactive exec: DATA from the edge starts with a channel byte (stdout, stderr); DATA to the edge is stdin. */
export const EXEC_STDOUT = 1;
export const EXEC_STDERR = 2;
