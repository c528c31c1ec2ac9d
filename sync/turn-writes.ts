/**
 * @module The tunnel frames a connection sends in one turn of the event loop leave in one write.
 * Each frame is a WebSocket message, and `ws` writes each message to the socket as it is sent: a
 * short interconnect connection relayed by the hub sent 4-6 of them each way, one system call and
 * one loopback or network packet apiece, and those writes were the hub's largest cost after
 * nothing at all (486 of the ~1,300 ms it was busy for 1,000 short connections; docs/benchmarks.md,
 * "Interconnect, sixth round"). Held while the turn's synchronous work runs (the socket corked
 * until `process.nextTick`), they leave together in one writev, before the event loop goes on: no
 * frame waits for another event.
 *
 * @example
 * noteSocket(ws, socket); // where the connection is made: the upgrade's socket
 * holdTurn(ws);           // before each ws.send of a tunnel frame
 * ws.send(frame);
 */
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';

/** The socket under each WebSocket (ws does not expose it). */
const sockets = new WeakMap<WebSocket, Duplex>();
/** Sockets corked for the current turn. */
const held = new WeakSet<Duplex>();

/** The socket `ws` runs on: the server's upgrade socket, or the client's upgrade response's. */
export function noteSocket(ws: WebSocket, socket: Duplex): void {
  sockets.set(ws, socket);
}

/** Holds what is written to `ws` until the synchronous work of this turn is done, then writes it at once. */
export function holdTurn(ws: WebSocket): void {
  const s = sockets.get(ws);
  if (!s || held.has(s) || s.destroyed) return;
  held.add(s);
  s.cork();
  process.nextTick(() => {
    held.delete(s);
    s.uncork();
  });
}
