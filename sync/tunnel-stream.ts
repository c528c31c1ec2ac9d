/**
 * @module One tunnel stream (sync/tunnel.ts): a Node Duplex whose writes go to the peer and whose
 * reads come from it, with its half of flow control. Writes are cut into DATA pieces and queued
 * for the mux, which sends them only within the credit the peer granted (`sendWindow`); credit
 * goes back to the peer (WINDOW) as our consumer reads. Its buffers are bounded: `write()` returns
 * false past the writable high-water mark, and the read side holds at most one window. Also the
 * stream's limits (deadline, byte budget) and its end: both sides ended, or a reset either way.
 */
import { Duplex } from 'node:stream';
import { TunnelError, type TunnelErrorCode } from './tunnel-error.js';
import { MAX_BULK_DATA_BYTES, MAX_DATA_BYTES, TUNNEL_RESET, TUNNEL_WINDOW, frame, json, u32 } from './tunnel-frames.js';

/** Credit per direction of a stream: large enough to fill a WAN pipe per stream, small enough that 256 streams stay under 64 MiB. */
export const INITIAL_WINDOW = 256 * 1024;

/**
 * How far the receive window of a stream that carries a workload's TCP bytes may grow (a consumer's
 * `interconnect` stream and the hub's `tcp` stream to the serving edge, docs/interconnect.md).
 * One stream moves at most one window per round trip of its credit; a relayed connection makes
 * that trip on two hops through three event loops, so 256 KiB held a bulk stream to ~15 MiB/s
 * (docs/benchmarks.md). Such a stream's receiver grows its window while its consumer keeps up,
 * as TCP's receive-window autotuning does; what it holds stays bounded by this per direction.
 */
export const MAX_BULK_WINDOW = 4 * 1024 * 1024;

/**
 * Whether a stream with this header carries plain bytes, no message in its DATA frames (a
 * workload's TCP bytes, a blob transfer's): its writes may go out joined in large frames.
 */
export function isBulk(header: Record<string, unknown>): boolean {
  return (
    header.type === 'interconnect' || header.type === 'tcp' || header.type === 'blob-get' || header.type === 'blob-put'
  );
}

/**
 * The largest receive window of a stream with this header at `receiver`'s end: one rule for both
 * ends of the tunnel. Workload TCP bytes grow it at both ends; a blob download (`blob-get`) at the
 * edge, which receives it, so a download is not held to 256 KiB per credit round trip. The hub's
 * receive windows of uploads stay at INITIAL_WINDOW: a hub takes uploads from many edges at once,
 * and what it may hold for them stays 256 KiB each.
 */
export function maxWindowFor(header: Record<string, unknown>, receiver: 'hub' | 'edge' = 'hub'): number {
  if (header.type === 'interconnect' || header.type === 'tcp') return MAX_BULK_WINDOW;
  if (header.type === 'blob-get' && receiver === 'edge') return MAX_BULK_WINDOW;
  return INITIAL_WINDOW;
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

/** What a stream asks of the mux that carries it (`TunnelMux`, sync/tunnel.ts). */
export interface StreamMux {
  /** Sends a control frame (WINDOW, RESET) at once, ahead of queued data. */
  sendNow(payload: Buffer): void;
  /** Asks the mux to send from the streams' queues soon. */
  schedule(): void;
  /** Drops a stream that is over from the mux's table. */
  forget(s: TunnelStream): void;
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
  /** Credit given back to the peer so far for bytes our consumer took. */
  granted = 0;
  /**
   * Bytes the peer may have sent that we did not grant back for consumed bytes: INITIAL_WINDOW,
   * plus what it grew by (extra credit granted while our consumer kept up), up to `maxWindow`.
   */
  recvWindow = INITIAL_WINDOW;
  private readonly maxWindow: number;
  /**
   * A stream of plain bytes (`isBulk`): its queued writes may go out together in one DATA frame
   * of up to MAX_BULK_DATA_BYTES. Other streams keep one write (or piece of one) per frame:
   * exec's frames each begin with their channel byte.
   */
  readonly bulk: boolean;
  /** The largest DATA body this stream sends. */
  readonly maxPiece: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly id: number,
    private readonly mux: StreamMux,
    readonly header: Record<string, unknown>,
    private readonly limits: StreamLimits = {},
    /** Which end of the tunnel this stream is at (its receive window's rule, `maxWindowFor`). */
    side: 'hub' | 'edge' = 'hub',
  ) {
    const maxWindow = maxWindowFor(header, side);
    const bulk = isBulk(header);
    // A bulk stream takes writes until a whole large frame is queued, so the mux can send one.
    super({
      readableHighWaterMark: INITIAL_WINDOW,
      writableHighWaterMark: bulk ? MAX_BULK_DATA_BYTES : 64 * 1024,
      allowHalfOpen: true,
    });
    this.maxWindow = maxWindow;
    this.bulk = bulk;
    this.maxPiece = bulk ? MAX_BULK_DATA_BYTES : MAX_DATA_BYTES;
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
    this.enqueue([chunk], cb);
  }

  /** The writes buffered while the last was being sent, at once: a bulk stream sends them as one frame. */
  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    this.enqueue(
      chunks.map((c) => c.chunk),
      cb,
    );
  }

  /** Queues `chunks` for the mux, in pieces of at most `maxPiece`; `cb` once the last is sent. */
  private enqueue(chunks: Buffer[], cb: (err?: Error | null) => void): void {
    if (this.reset) return cb(new TunnelError('aborted', 'the stream was reset'));
    let n = 0;
    for (const c of chunks) n += c.length;
    this.count(n, 'out');
    if (this.destroyed) return cb();
    if (n === 0) return cb();
    const pieces: Buffer[] = [];
    for (const c of chunks)
      for (let off = 0; off < c.length; off += this.maxPiece) pieces.push(c.subarray(off, off + this.maxPiece));
    pieces.forEach((buf, i) => this.queue.push({ kind: 'data', buf, ...(i === pieces.length - 1 ? { cb } : {}) }));
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
   *
   * The window grows (a stream whose `maxWindowFor` allows it) while the consumer keeps up: it
   * took all the peer sent, so our buffer is not what limits the stream. It grows by what was
   * consumed (doubling at most per window), as TCP's slow start does, and never shrinks: a
   * consumer that stalls later holds what the window reached, at most `maxWindow`.
   */
  override read(size?: number): any {
    const chunk: unknown = super.read(size);
    const consumed = this.bytesIn - this.readableLength - this.granted;
    if (consumed >= this.recvWindow / 4 || (consumed > 0 && this.readableLength === 0)) {
      let extra = 0;
      if (this.readableLength === 0 && this.recvWindow < this.maxWindow)
        extra = Math.min(consumed, this.maxWindow - this.recvWindow);
      this.granted += consumed;
      this.recvWindow += extra;
      this.mux.sendNow(frame(TUNNEL_WINDOW, this.id, u32(consumed + extra)));
    }
    return chunk;
  }

  /** @internal whether `n` more bytes of DATA from the peer stay within the credit we gave it. */
  accept(n: number): boolean {
    return this.bytesIn - this.granted + n <= this.recvWindow;
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
