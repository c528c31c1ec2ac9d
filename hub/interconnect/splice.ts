/**
 * @module Two tunnel streams spliced into one connection on the hub (docs/interconnect.md): each is
 * piped into the other, so backpressure is the streams' own credit: a stream whose peer grants no
 * credit stops taking writes, the pipe stops reading the other stream, and that one stops granting
 * credit to its edge. What the hub holds per connection is bounded by the streams' buffers (one
 * read window and one write buffer per direction, `bufferedBytes`). An END crosses as an END
 * (half-close, either way); a RESET either way resets the other with the same code and reason; a
 * connection that moves no byte for `idleMs` is reset at both ends with a reason that says so.
 */
import { TunnelError, type TunnelStream } from '../../sync/tunnel.js';

export interface Spliced {
  /** The consumer's stream and the serving edge's. */
  consumer: TunnelStream;
  server: TunnelStream;
}

/** Bytes the hub holds for these streams now: read buffers not yet written on, writes not yet sent. */
export function bufferedBytes(streams: Iterable<TunnelStream>): number {
  let n = 0;
  for (const s of streams) n += s.readableLength + s.writableLength;
  return n;
}

/**
 * Splices `consumer` and `server`; `done` is called once, when both are closed, with the reason
 * when the connection did not end cleanly (both sides ENDed).
 */
export function splice(c: Spliced, idleMs: number, done: (error?: string) => void): void {
  const { consumer: a, server: b } = c;
  let error: string | undefined;
  const fail = (to: TunnelStream) => (err: Error) => {
    error ??= err.message;
    if (to.destroyed) return;
    to.destroy(err instanceof TunnelError ? err : new TunnelError('aborted', err.message));
  };
  a.on('error', fail(b));
  b.on('error', fail(a));
  a.pipe(b);
  b.pipe(a);

  // Idle: no byte moved either way since the last look. Looked at 4 times per period, so a
  // connection is reset between idleMs and 1.25 idleMs after its last byte.
  const moved = () => a.bytesIn + a.bytesOut + b.bytesIn + b.bytesOut;
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
      b.destroy(e);
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
