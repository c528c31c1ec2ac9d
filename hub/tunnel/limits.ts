/**
 * @module The bounds of the tunnel's streams: what the gateway enforces and the routes read. Apart
 * from gateway.ts so that the routes need not import the gateway that imports them.
 */

export interface GatewayLimits {
  /** Deadline of a request/response stream (proxy, kube, exec, actions). */
  requestDeadlineMs: number;
  /** Deadline of a long-lived stream (log follow, watch, WebSocket, interactive exec). */
  streamDeadlineMs: number;
  /** Bytes one stream may move, both directions together. */
  maxBytesPerStream: number;
  /** Concurrent streams per edge. */
  maxStreamsPerEdge: number;
}

/** A download of a few GB or an hour-long log follow is legitimate; anything past that is a runaway. */
export const DEFAULT_LIMITS: GatewayLimits = {
  requestDeadlineMs: 10 * 60_000,
  streamDeadlineMs: 60 * 60_000,
  maxBytesPerStream: 4 * 1024 ** 3,
  maxStreamsPerEdge: 256,
};
