/**
 * @module The hub's one HTTP(S) server and where each request goes: blob routes and the image
 * cache's OCI pull API stream on their own, tunnel routes and upgrades go to the tunnel gateway,
 * the rest to the REST API (hono); the sync endpoint attaches its upgrades itself (SyncServer
 * `attach`). The bounds the server shares with every route (headers, idle connections, the cap
 * per address) are hub/http-limits.ts; the deadline of a request body is here. Then listening on
 * `--listen`, and the URL the hub is reached at.
 */
import http from 'node:http';
import https from 'node:https';
import { handleBlobRequest, isBlobRoute } from './blobs/routes.js';
import type { HubBlobs } from './blobs/index.js';
import type { HubAuth } from './auth/contract.js';
import {
  HEADERS_TIMEOUT_MS,
  limitConnections,
  MAX_CONNECTIONS_PER_ADDRESS,
  serverTimeouts,
  type ConnectionLimiter,
} from './http-limits.js';
import type { ImageCache } from './images/cache.js';
import { handleImageRequest } from './images/routes.js';
import type { HubTls } from './tls.js';
import type { TunnelGateway } from './tunnel/gateway.js';

/**
 * What node's server-wide `requestTimeout` did for every route: a request body must arrive within
 * this time. The server's own timeout is off because it would cut a long blob upload; blob routes
 * have an idle timeout instead (hub/blobs/routes.ts).
 */
export const REQUEST_BODY_TIMEOUT_MS = 300_000;

/** What the hub's server routes requests to. */
export interface HubServerOptions {
  /** Undefined: plain HTTP (`--insecure-http`). */
  tls: HubTls | undefined;
  /** Default MAX_CONNECTIONS_PER_ADDRESS. */
  maxConnectionsPerAddress: number | undefined;
  /** A connection that sent no request this long after it connected is closed (default HEADERS_TIMEOUT_MS). */
  firstRequestTimeoutMs: number | undefined;
  blobs: HubBlobs;
  /** A blob request with no byte moving this long is cut (default BLOB_IDLE_TIMEOUT_MS). */
  blobIdleTimeoutMs: number | undefined;
  auth: HubAuth;
  images: ImageCache;
  tunnel: TunnelGateway;
  /** The REST API's node listener (hono's `getRequestListener`). */
  api: (req: http.IncomingMessage, res: http.ServerResponse) => unknown;
}

/** The server, not listening yet, and the cap on connections per address it is under. */
export function createHubServer(o: HubServerOptions): { server: http.Server; connLimit: ConnectionLimiter } {
  const { tls, blobs, auth, images, tunnel } = o;
  const listener: http.RequestListener = (req, res) => {
    if (isBlobRoute(req)) {
      handleBlobRequest({ blobs, auth, idleTimeoutMs: o.blobIdleTimeoutMs }, req, res);
      return;
    }
    // The image cache's OCI pull API (/v2/...) and its tag route stream blobs like the blob routes.
    if (handleImageRequest({ cache: images, blobs, auth }, req, res)) return;
    if (!req.complete) {
      const t = setTimeout(() => req.destroy(), REQUEST_BODY_TIMEOUT_MS);
      t.unref();
      req.once('end', () => clearTimeout(t)).once('close', () => clearTimeout(t));
    }
    void (tunnel.handleRequest(req, res) || o.api(req, res));
  };
  const server = tls
    ? https.createServer({ cert: tls.certPem, key: tls.keyPem, ...serverTimeouts() }, listener)
    : http.createServer(serverTimeouts(), listener);
  const connLimit = limitConnections(
    server,
    o.maxConnectionsPerAddress ?? MAX_CONNECTIONS_PER_ADDRESS,
    o.firstRequestTimeoutMs ?? HEADERS_TIMEOUT_MS,
  );
  // A blob upload asking `Expect: 100-continue` is told no (quota, rights, already here) before its body.
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (!isBlobRoute(req)) res.writeContinue();
    listener(req, res);
  });
  server.on('upgrade', (req, socket, head) => tunnel.handleUpgrade(req, socket, head));
  return { server, connLimit };
}

/**
 * Listens on `host`:`port` (parsed from `listen`, the flag as given, which the errors quote). The
 * URL names 127.0.0.1 for a server on every interface, or localhost over TLS (the certificate
 * names it).
 */
export async function listenHub(
  server: http.Server,
  o: { listen: string; host: string; port: number; tls: boolean },
): Promise<{ port: number; urlHost: string; url: string }> {
  const { host, tls } = o;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `cannot listen on ${o.listen}: the address is in use (another hub running? pick another port with --listen)`
            : `cannot listen on ${o.listen}: ${err.message}`,
          { cause: err },
        ),
      ),
    );
    server.listen(o.port, host, () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  const urlHost =
    host === '0.0.0.0' || host === '::' ? (tls ? 'localhost' : '127.0.0.1') : host.includes(':') ? `[${host}]` : host;
  return { port, urlHost, url: `${tls ? 'https' : 'http'}://${urlHost}:${port}` };
}
