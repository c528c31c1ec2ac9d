/**
 * @module Two tunnel streams spliced into one connection on the hub (docs/interconnect.md): each is
 * piped into the other, so backpressure is the streams' own credit: a stream whose peer grants no
 * credit stops taking writes, the pipe stops reading the other stream, and that one stops granting
 * credit to its edge. What the hub holds per connection is bounded by the streams' buffers (one
 * read window and one write buffer per direction, `bufferedBytes`). An END crosses as an END
 * (half-close, either way); a RESET either way resets the other with the same code and reason; a
 * connection that moves no byte for `idleMs` is reset at both ends with a reason that says so.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TunnelError, TunnelStream } from '../../sync/tunnel.js';

export interface Spliced {
  /** The consumer's stream. */
  consumer: TunnelStream;
  /**
   * The serving side: the serving edge's stream, or the socket to the hub replica that holds that
   * edge (hub/tunnel/forward.ts `dial`), with the bytes it moved either way.
   */
  server: Duplex;
  serverMoved(): number;
}

/** Bytes the hub holds for these streams now: read buffers not yet written on, writes not yet sent. */
export function bufferedBytes(streams: Iterable<Duplex>): number {
  let n = 0;
  for (const s of streams) n += s.readableLength + s.writableLength;
  return n;
}

/**
 * Fails a serving side with `err`: a tunnel stream is reset with its code and reason; a socket to
 * a replica is reset (RST, not FIN: the other replica must not take it for a clean end).
 */
export function kill(d: Duplex, err: Error): void {
  if (d instanceof TunnelStream) d.destroy(err instanceof TunnelError ? err : new TunnelError('aborted', err.message));
  else (d as Socket).resetAndDestroy();
}

/** The bytes a serving side moved (a tunnel stream's or a socket's counters). */
export function movedBy(d: Duplex): number {
  return d instanceof TunnelStream ? d.bytesIn + d.bytesOut : (d as Socket).bytesRead + (d as Socket).bytesWritten;
}

/**
 * Splices the consumer's stream and the serving side; `done` is called once, when both are
 * closed, with the reason when the connection did not end cleanly (both sides ENDed).
 */
export function splice(c: Spliced, idleMs: number, done: (error?: string) => void): void {
  const { consumer: a, server: b } = c;
  let error: string | undefined;
  const failA = (err: Error) => {
    error ??= err.message;
    if (!b.destroyed) kill(b, err);
  };
  const failB = (err: Error) => {
    error ??= err.message;
    // After the consumer's stream has sent what it queued: a reset discards it, and the serving
    // side's failure can come in the same read as its `connected` (a workload that resets at the
    // first bytes, which travel with the open: hub/interconnect/early.ts), so the consumer would
    // not hear that the connection was made before it failed.
    queueMicrotask(() => {
      if (!a.destroyed) a.destroy(err instanceof TunnelError ? err : new TunnelError('aborted', err.message));
    });
  };
  a.on('error', failA);
  b.on('error', failB);
  // A serving side that closes without both ENDs (a socket to a replica cut short) is a failure too.
  b.once('close', () => {
    if (!a.destroyed && !(b.readableEnded && b.writableFinished))
      failB(new TunnelError('aborted', 'the serving side closed before the connection ended'));
  });
  a.pipe(b);
  b.pipe(a);

  // Idle: no byte moved either way since the last look. Looked at 4 times per period, so a
  // connection is reset between idleMs and 1.25 idleMs after its last byte.
  const moved = () => a.bytesIn + a.bytesOut + c.serverMoved();
  let last = moved();
  let quietSince = Date.now();
  const timer = setInterval(
    () => {
      const now = moved();
      if (now !== last) {
        last = now;
        quietSince = Date.now();
        return;
      }
      if (Date.now() - quietSince < idleMs) return;
      const e = new TunnelError(
        'deadline',
        `the connection was idle for ${Math.round(idleMs / 1000)}s (the ServiceExport's spec.idleTimeoutSeconds): closed by the hub`,
      );
      error ??= e.message;
      a.destroy(e);
      kill(b, e);
    },
    Math.max(50, Math.floor(idleMs / 4)),
  );
  timer.unref();

  let closed = 0;
  const onClose = () => {
    if (++closed < 2) return;
    clearInterval(timer);
    done(error);
  };
  a.once('close', onClose);
  b.once('close', onClose);
}
