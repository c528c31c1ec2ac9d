/**
 * @module Bounds on the hub's HTTP server, the part of the hub anyone on the network reaches
 * before any credential is checked: request bodies counted as they are read (chunked ones too),
 * deadlines on connections that send no request or take too long with their headers, and a cap
 * on the connections one source address may hold. The edges' upgraded sync sockets are
 * long-lived by design and exempt from the cap (SyncServer calls `exempt` once it accepted one).
 */
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { OutpostError } from '../core/errors.js';
import { formatBytes, MAX_REQUEST_BYTES } from '../core/limits.js';
import { createLogger } from '../core/logger.js';

const log = createLogger('hub:http');

/**
 * Connections one source address may hold (not counting upgraded edge sockets). 1,024 leaves room
 * for a NAT in front of many browsers and CLIs; an address holding 3,000 idle TLS sockets (+56 MB
 * on the hub, none ever closed) was what an attack found. `outpost hub --max-connections-per-address`.
 */
export const MAX_CONNECTIONS_PER_ADDRESS = 1024;

/**
 * Deadlines of a connection before it is a request: the TLS handshake, then the request's headers.
 * 10 s and 20 s are long for any real client on the slowest link and short enough that idle
 * sockets do not pile up. Node checks them every CONNECTIONS_CHECK_MS.
 */
export const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;
export const HEADERS_TIMEOUT_MS = 20_000;
/** An idle keep-alive connection between two requests is closed after this. */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;
const CONNECTIONS_CHECK_MS = 2_000;

/** Options for http(s).createServer that put deadlines on every connection. */
export function serverTimeouts(): http.ServerOptions & { handshakeTimeout: number } {
  return {
    headersTimeout: HEADERS_TIMEOUT_MS,
    // Off server-wide: it would cut a long blob upload. Bodies have their own deadlines
    // (REQUEST_BODY_TIMEOUT_MS in hub/http-server.ts, an idle timeout on blob routes).
    requestTimeout: 0,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: CONNECTIONS_CHECK_MS,
    handshakeTimeout: TLS_HANDSHAKE_TIMEOUT_MS,
  };
}

/** The hono middleware bounding every request body by the bytes actually read. */
export function apiBodyLimit(maxBytes = MAX_REQUEST_BYTES): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: (c) => {
      // The rest of the body is not worth reading: the connection closes after the answer,
      // lingering (the client, still sending, reads the 413 and not a reset).
      c.header('connection', 'close');
      const socket = (c.env as { incoming?: http.IncomingMessage } | undefined)?.incoming?.socket;
      if (socket) lingerOnClose(socket);
      throw new OutpostError(
        'too_large',
        `the request body is over the hub's ${formatBytes(maxBytes)} limit for one request: send fewer objects at a time`,
      );
    },
  });
}

/**
 * Bounds of a lingering close (lingerOnClose): how long, and how many bytes, the rest of a refused
 * body is read for. A client may have sent tens of MB more before its loop gets to our answer (a
 * busy one, on loopback); reading and dropping 1 GiB costs the hub well under a second.
 */
export const LINGER_MS = 5_000;
export const LINGER_BYTES = 1024 * 1024 * 1024;

/**
 * Lingering close, as nginx and Apache do it, for a connection answered before its request body
 * was read (a refused upload): when node's HTTP server closes the connection after the answer
 * (`socket.destroySoon`, its last act on the socket), the write side is closed first (the client
 * reads the answer, then its end) and what the client still sends is read and dropped until it
 * closes too, for at most LINGER_MS and LINGER_BYTES. Closed at once with those bytes unread, the
 * socket made the kernel answer them with a reset, and a client still writing (a loaded one, most
 * often) met the reset before it had read the answer: a broken connection instead of the 413 that
 * says why (test/hardening-blob-uploads.test.ts).
 *
 * The server's parser no longer gets the bytes (it paused the socket whenever the refused,
 * destroyed request could not take them), and reading is restarted at the handle as node's own
 * server does it for a socket whose parser consumed it (`onSocketResume` in _http_server.js): the
 * stream's own resume() does not, its read having been left in flight.
 */
export function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function (this: Socket) {
    if (this.writable) this.end();
    let dropped = 0;
    const done = () => {
      clearTimeout(timer);
      this.destroy();
    };
    const timer = setTimeout(done, LINGER_MS);
    timer.unref();
    for (const l of this.listeners('data')) this.off('data', l as (c: Buffer) => void);
    this.on('data', (c: Buffer) => {
      dropped += c.length;
      if (dropped > LINGER_BYTES) done();
    });
    this.once('end', done);
    this.once('close', () => clearTimeout(timer));
    this.resume();
    const handle = (this as unknown as { _handle?: { reading: boolean; readStart(): void } })._handle;
    if (handle && !handle.reading) {
      handle.reading = true;
      handle.readStart();
    }
  };
}

export interface ConnectionLimiter {
  /** The socket became a long-lived edge connection: it no longer counts against its address. */
  exempt(socket: Socket): void;
  /** Connections counted now for an address. */
  count(address: string): number;
}

/**
 * Closes connections that send no request within `firstRequestMs` of connecting, and caps the
 * connections per source address of `server` (counted from the TCP connection, before
 * TLS: a socket that never finishes its handshake counts too). A connection past the cap is
 * destroyed at once; refusals are logged at most once a minute per address.
 */
export function limitConnections(
  server: http.Server,
  maxPerAddress = MAX_CONNECTIONS_PER_ADDRESS,
  firstRequestMs = HEADERS_TIMEOUT_MS,
): ConnectionLimiter {
  const perAddress = new Map<string, number>();
  const counted = new WeakMap<Socket, string>();
  const warned = new Map<string, number>();
  const firstRequest = new WeakMap<Socket, NodeJS.Timeout>();
  const release = (socket: Socket) => {
    const addr = counted.get(socket);
    if (addr === undefined) return;
    counted.delete(socket);
    const n = (perAddress.get(addr) ?? 1) - 1;
    if (n <= 0) perAddress.delete(addr);
    else perAddress.set(addr, n);
  };
  server.on('connection', (socket: Socket) => {
    const addr = socket.remoteAddress ?? '';
    const n = perAddress.get(addr) ?? 0;
    if (n >= maxPerAddress) {
      const now = Date.now();
      if ((warned.get(addr) ?? 0) < now - 60_000) {
        warned.set(addr, now);
        if (warned.size > 10_000) warned.clear();
        log.warn(
          { remote: addr, max: maxPerAddress },
          'refusing connections from an address past its connection cap (--max-connections-per-address); logged once a minute',
        );
      }
      socket.destroy();
      return;
    }
    perAddress.set(addr, n + 1);
    counted.set(socket, addr);
    // Node's headersTimeout only covers a request once its first byte came: a connection that
    // never sends one (after its TLS handshake, or over plain HTTP) would be held for ever.
    const idle = setTimeout(() => socket.destroy(), firstRequestMs);
    idle.unref();
    firstRequest.set(socket, idle);
    socket.once('close', () => {
      clearTimeout(idle);
      release(socket);
    });
  });
  const started = (req: http.IncomingMessage) => {
    const raw = (req.socket as Socket & { _parent?: Socket })._parent ?? req.socket;
    clearTimeout(firstRequest.get(raw));
    firstRequest.delete(raw);
  };
  server.prependListener('request', started);
  server.prependListener('upgrade', started);
  server.prependListener('checkContinue', started);
  return {
    exempt(socket) {
      // Over TLS the request's socket wraps the TCP socket that was counted.
      const raw = (socket as Socket & { _parent?: Socket })._parent;
      release(socket);
      if (raw) release(raw);
    },
    count: (address) => perAddress.get(address) ?? 0,
  };
}
