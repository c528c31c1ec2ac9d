/**
 * @module What a consumer sends before a serving edge is connected to the workload
 * (docs/interconnect.md): the hub forwards it at once on the stream it opened to the edge it tries,
 * which holds it until its connect to the workload is made, instead of holding it until the edge
 * says it is connected. That takes one round trip between the hub and the serving edge off every
 * connection's first answer (a request's bytes travel with the open). The bytes are kept until an
 * edge is connected, so an edge that fails before it is gets none of them, and the next edge is
 * sent all of them: failover at open still loses nothing. What is kept is bounded: past
 * `EARLY_LIMIT` the consumer's stream is paused (its credit stops, so its edge stops sending)
 * until an edge is connected.
 */
import type { Duplex, Readable } from 'node:stream';

/** The most a connection keeps (and forwards) before a serving edge is connected: within one stream window. */
export const EARLY_LIMIT = 64 * 1024;

export class EarlyBytes {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private ended = false;
  /** The serving side being tried now, which gets each byte as it comes. */
  private target: Duplex | undefined;
  private released = false;

  constructor(private readonly consumer: Readable) {
    consumer.on('data', this.onData);
    consumer.once('end', this.onEnd);
  }

  private readonly onData = (b: Buffer): void => {
    this.chunks.push(b);
    this.bytes += b.length;
    this.target?.write(b);
    if (this.bytes >= EARLY_LIMIT) this.consumer.pause();
  };

  private readonly onEnd = (): void => {
    this.ended = true;
    this.target?.end();
  };

  /** The serving side tried now (undefined while none is): it gets what came so far, and what comes next. */
  sendTo(server: Duplex | undefined): void {
    this.target = server;
    if (server) this.replay(server);
  }

  /**
   * `server` is connected: it has (or now gets) every byte that came so far, and from here on the
   * splice pipes the consumer's stream into it (hub/interconnect/splice.ts).
   */
  release(server: Duplex): void {
    if (this.released) return;
    this.released = true;
    this.consumer.off('data', this.onData);
    this.consumer.off('end', this.onEnd);
    this.consumer.pause();
    if (this.target !== server) this.replay(server);
    this.target = undefined;
    this.chunks.length = 0;
    this.bytes = 0;
  }

  /** Bytes kept now (the relay's memory bound counts them through the streams' buffers too). */
  keptBytes(): number {
    return this.bytes;
  }

  private replay(server: Duplex): void {
    for (const c of this.chunks) server.write(c);
    if (this.ended) server.end();
  }
}
