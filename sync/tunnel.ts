/**
 * @module The tunnel: many byte streams from the hub into an edge, multiplexed inside frame type
 * 0x02 of the one sync WebSocket (docs/tunnel.md). Both ends run a `TunnelMux`. Both may open
 * streams: the hub's ids are 1..0x7fffffff, the edge's 0x80000000..0xffffffff (so the two never
 * collide); the edge opens streams only for blob transfers (sync/transfer.ts).
 *
 * This module is the mux: the stream table, frames routed to their streams, and the socket's
 * share. Its parts: the frame codec (sync/tunnel-frames.ts), one stream with its credit
 * (sync/tunnel-stream.ts), the error codes (sync/tunnel-error.ts) and what a stream is for
 * (sync/tunnel-request.ts); their names importers use are exported from here too.
 *
 * Why flow control lives here and not in ws: a 50 MB download must never stall mailbox sync on
 * the same socket. So (1) each direction of each stream has a credit window: a sender never has
 * more than the receiver's window of unacknowledged bytes (`INITIAL_WINDOW`; a stream of TCP
 * bytes may grow it to `MAX_BULK_WINDOW` while its consumer keeps up), and the receiver grants
 * more only as its consumer drains them (a slow consumer stops its own stream, nobody else's); (2) the mux sends
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
import { createLogger } from '../core/logger.js';
import { TunnelError, type TunnelErrorCode } from './tunnel-error.js';
import {
  TUNNEL_DATA,
  TUNNEL_END,
  TUNNEL_META,
  TUNNEL_OPEN,
  TUNNEL_RESET,
  TUNNEL_WINDOW,
  dataFrame,
  frame,
  json,
  keepBody,
  parseJson,
} from './tunnel-frames.js';
import { TunnelStream, type StreamLimits, type StreamMux } from './tunnel-stream.js';

export { TunnelError, type TunnelErrorCode } from './tunnel-error.js';
export { MAX_BULK_DATA_BYTES, MAX_DATA_BYTES } from './tunnel-frames.js';
export {
  INITIAL_WINDOW,
  isBulk,
  MAX_BULK_WINDOW,
  maxWindowFor,
  TunnelStream,
  type StreamLimits,
} from './tunnel-stream.js';
export { EXEC_STDERR, EXEC_STDOUT, TunnelRequest } from './tunnel-request.js';

const log = createLogger('sync:tunnel');

/** Tunnel bytes may fill the socket buffer up to here; above it the mux waits so sync frames go first. */
export const SOCKET_HIGH_WATER = 512 * 1024;
/**
 * How often a mux blocked on the socket buffer looks again. It looks sooner, as each of its own
 * frames leaves for the kernel (`send`'s `written`): a fixed 5 ms poll left a fast stream idle
 * for most of each wait (512 KiB of buffer drains in ~2 ms at 250 MiB/s). The poll stays for a
 * buffer filled by sync frames, which say nothing when they leave.
 */
const BLOCKED_POLL_MS = 20;

export interface TunnelTransport {
  /** Sends one 0x02 payload; false when the connection is gone. `written` once it left for the kernel. */
  send(payload: Buffer, written?: () => void): boolean;
  bufferedAmount(): number;
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

/** Both ends of the tunnel: stream table, frames routed to streams, flow control and fair scheduling. */
export class TunnelMux implements StreamMux {
  private readonly streams = new Map<number, TunnelStream>();
  private nextId: number;
  private readonly firstId: number;
  private readonly side: 'hub' | 'edge';
  private readonly lastId: number;
  private ready: TunnelStream[] = [];
  private pumping = false;
  private blockedTimer: NodeJS.Timeout | undefined;
  /** Called as each DATA frame leaves for the kernel: a blocked mux pumps once the buffer has room. */
  private readonly written = (): void => {
    if (this.blockedTimer && this.opts.bufferedAmount() < SOCKET_HIGH_WATER) this.schedule();
  };
  private closed = false;
  /** Streams opened over the mux's life (for metrics). */
  opened = 0;

  constructor(private readonly opts: TunnelMuxOptions) {
    const edge = opts.side === 'edge';
    this.side = edge ? 'edge' : 'hub';
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
    // Not connected now (an edge between connections): fail at once, never a stream that waits forever.
    if (!this.opts.send(frame(TUNNEL_OPEN, id, json(header))))
      throw new TunnelError('disconnected', 'the tunnel connection is down: not connected now');
    const s = new TunnelStream(id, this, header, limits, this.side);
    this.streams.set(id, s);
    this.opened++;
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
        const ns = new TunnelStream(id, this, header, {}, this.side);
        this.streams.set(id, ns);
        this.opened++;
        this.opts.onStream(ns);
        return;
      }
      case TUNNEL_DATA: {
        if (!s) return;
        if (s.remoteEnded) throw new TunnelError('protocol', `data after end on stream ${id}`);
        // The peer may have at most the stream's window of bytes we have not granted back; more means it ignores flow control.
        if (!s.accept(body.length)) {
          log.warn({ stream: id }, 'tunnel peer exceeded its flow-control window; resetting the stream');
          s.destroy(new TunnelError('protocol', 'flow control window exceeded'));
          return;
        }
        s.count(body.length, 'in');
        if (!s.destroyed) s.push(keepBody(body));
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
    // The DATA queued at the head goes out as one frame, up to the stream's largest piece and its
    // credit: of a bulk stream as many writes as fit, of another the head write (or part of it).
    const limit = Math.min(s.maxPiece, s.sendWindow);
    const pieces: Buffer[] = [];
    const done: ((err?: Error | null) => void)[] = [];
    let n = 0;
    for (let head = s.queue[0]; head?.kind === 'data' && n < limit; head = s.queue[0]) {
      const take = Math.min(head.buf.length, limit - n);
      pieces.push(head.buf.subarray(0, take));
      n += take;
      if (take < head.buf.length) {
        head.buf = head.buf.subarray(take);
        break;
      }
      s.queue.shift();
      if (head.cb) done.push(head.cb);
      if (!s.bulk) break;
    }
    s.sendWindow -= n;
    const sent = s.bulk
      ? (() => {
          const f = dataFrame(s.id, pieces);
          return this.opts.send(f.payload, () => {
            f.release();
            this.written();
          });
        })()
      : this.opts.send(frame(TUNNEL_DATA, s.id, pieces), this.written);
    if (!sent) {
      for (const cb of done) cb(new TunnelError('disconnected', 'the tunnel connection is gone'));
      s.destroy(new TunnelError('disconnected', 'the tunnel connection is gone'));
      return false;
    }
    for (const cb of done) cb();
    return true;
  }
}
