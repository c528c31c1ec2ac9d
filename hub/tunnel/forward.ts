/**
 * @module Tunnel requests across hub replicas (issue #22; docs/tunnel.md, "Across hub replicas"):
 * a request admitted on replica A for an edge whose connection replica B holds (its lease,
 * hub/state/leases.ts) is sent on to B's advertised URL (hub/state/replicas.ts) as it came: the
 * same method, path, query, headers (the user's Authorization or proxy cookie, Upgrade) and body,
 * streamed both ways with backpressure; upgrades (WebSocket, SPDY) become a byte pipe A <-> B.
 *
 * Between replicas: A signs the request (HMAC-SHA256 with the key all replicas read from the
 * database) over its own id, B's id, the time, the method and the path, in two headers. B checks
 * the user's credential again, as for any request, and never forwards a forwarded request again
 * (no loops: the edge moved or went offline is a 503). A header a client made up (no valid
 * signature for this replica, or an old one) is refused with 401, on any hub. No edge is dialled:
 * B reaches the edge over the connection the edge opened.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { FORWARD_CONNECT_TIMEOUT_MS, FORWARD_SIGNATURE_MAX_AGE_MS } from '../../core/durations.js';
import { OutpostError } from '../../core/errors.js';
import { HOP_BY_HOP_HEADERS, rawErrorResponse } from '../../core/http.js';
import type { HubReplica } from '../state/replicas.js';

/** The Upgrade token of an interconnect connection one replica relays to another. */
export const INTERCONNECT_UPGRADE = 'outpost-interconnect';

/** The replica that forwarded the request (its id), set only by replicas. */
export const FORWARDED_BY = 'x-outpost-forwarded-by';
/** `t=MS;to=REPLICA;sig=BASE64URL`: when, for which replica, and the HMAC over both and the request. */
export const FORWARD_SIGNATURE = 'x-outpost-forward-signature';

export interface ForwarderOptions {
  /** This replica's id (hub/state/replicas.ts newReplicaId). */
  self: string;
  /** The key all replicas share (HubReplicas.forwardKey). */
  key: Buffer;
  /** The replica that serves `edge` now, when that is another live one. */
  holder(edge: string): HubReplica | undefined;
  /** CA the replicas' certificates chain to (the hub's CA); undefined: the system's roots. */
  ca?: string;
}

/** What to say about a forward in the log, the error and the metric. */
export interface ForwardTarget {
  edge: string;
  to: HubReplica;
  /** Counts the forward once B is connected to (`ok`) or could not be (`unreachable`). */
  counted?(result: 'ok' | 'unreachable'): void;
}

function signed(key: Buffer, from: string, to: string, t: string, method: string, url: string): Buffer {
  return createHmac('sha256', key).update(`outpost-forward-v1\n${from}\n${to}\n${t}\n${method}\n${url}`).digest();
}

/** The two headers replica `from` adds to `METHOD url` it forwards to replica `to`. */
export function signForward(
  key: Buffer,
  from: string,
  to: string,
  method: string,
  url: string,
  now = Date.now(),
): Record<string, string> {
  const t = String(now);
  return {
    [FORWARDED_BY]: from,
    [FORWARD_SIGNATURE]: `t=${t};to=${to};sig=${signed(key, from, to, t, method, url).toString('base64url')}`,
  };
}

/**
 * The replica that forwarded a request to replica `self` (its signature checked), or undefined
 * for a request from a client. A request that claims a replica without a valid, recent signature
 * for `self` over its method and path is refused (401).
 */
export function verifyForward(
  key: Buffer,
  self: string,
  headers: IncomingHttpHeaders,
  method: string,
  url: string,
  now = Date.now(),
): string | undefined {
  const from = headers[FORWARDED_BY];
  const sig = headers[FORWARD_SIGNATURE];
  if (from === undefined && sig === undefined) return undefined;
  if (typeof from !== 'string' || typeof sig !== 'string') throw forged('is missing');
  const f = new Map(
    sig.split(';').map((kv) => [kv.slice(0, Math.max(0, kv.indexOf('='))), kv.slice(kv.indexOf('=') + 1)] as const),
  );
  const to = f.get('to');
  if (to !== self) throw forged('is not for this replica');
  const t = f.get('t') ?? '';
  if (!/^\d{1,15}$/.test(t) || Math.abs(now - Number(t)) > FORWARD_SIGNATURE_MAX_AGE_MS) throw forged('is too old');
  const want = signed(key, from, to, t, method, url);
  const got = Buffer.from(f.get('sig') ?? '', 'base64url');
  if (got.length !== want.length || !timingSafeEqual(got, want)) throw forged('does not match');
  return from;
}

const forged = (why: string) =>
  new OutpostError(
    'unauthorized',
    `${FORWARDED_BY} is set only by hub replicas, and this request's signature ${why} (a client cannot claim to be a replica): send the request without ${FORWARDED_BY} and ${FORWARD_SIGNATURE}`,
  );

/**
 * Refuses a client's claim to be a replica on a hub that has none (SQLite, one process): it could
 * not check the signature, and a request from a replica never comes here.
 */
export function refuseReplicaClaim(req: IncomingMessage): undefined {
  if (req.headers[FORWARDED_BY] !== undefined || req.headers[FORWARD_SIGNATURE] !== undefined)
    throw forged('cannot be checked: this hub runs without replicas');
  return undefined;
}

export class ReplicaForwarder {
  private readonly httpAgent = new http.Agent({ keepAlive: true });
  private readonly httpsAgent: https.Agent;

  constructor(private readonly opts: ForwarderOptions) {
    this.httpsAgent = new https.Agent({ keepAlive: true, ...(opts.ca ? { ca: opts.ca } : {}) });
  }

  get self(): string {
    return this.opts.self;
  }

  /** The other live replica that serves `edge`, if one does. */
  holder(edge: string): HubReplica | undefined {
    const to = this.opts.holder(edge);
    return to && to.id !== this.opts.self ? to : undefined;
  }

  /** The replica that forwarded `req` (verifyForward), or undefined for a request from a client. */
  forwardedBy(req: IncomingMessage): string | undefined {
    return verifyForward(this.opts.key, this.opts.self, req.headers, req.method ?? 'GET', req.url ?? '/');
  }

  /** The headers B gets: the client's, minus hop-by-hop, plus the signature. */
  private headers(req: IncomingMessage, to: HubReplica): http.OutgoingHttpHeaders {
    const out: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined && !HOP_BY_HOP_HEADERS.has(k) && k !== FORWARDED_BY && k !== FORWARD_SIGNATURE) out[k] = v;
    if (req.headers.upgrade) {
      out.connection = 'Upgrade';
      out.upgrade = req.headers.upgrade;
    }
    // The client's address, which B would not see otherwise (B adds A's, as each proxy does).
    const xff = req.headers['x-forwarded-for'];
    out['x-forwarded-for'] = [xff, req.socket.remoteAddress].filter(Boolean).join(', ');
    return { ...out, ...signForward(this.opts.key, this.opts.self, to.id, req.method ?? 'GET', req.url ?? '/') };
  }

  /**
   * Opens the request to the replica. The client's Host stays (what B tells a proxied app in
   * X-Forwarded-Host); TLS checks B's certificate for the host of its URL against the hub's CA.
   * `fail` runs at most once, for an error before B answered: B not connected to within
   * FORWARD_CONNECT_TIMEOUT_MS, refused, or the connection broken.
   */
  private request(req: IncomingMessage, t: ForwardTarget, fail: (err: OutpostError) => void): http.ClientRequest {
    const url = new URL(t.to.url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const tls = url.protocol === 'https:';
    const up = (tls ? https : http).request({
      protocol: url.protocol,
      hostname: host,
      port: url.port || (tls ? 443 : 80),
      method: req.method,
      path: req.url ?? '/',
      headers: this.headers(req, t.to),
      agent: tls ? this.httpsAgent : this.httpAgent,
      // An IP address is checked against the certificate's IP names; it is not sent as SNI.
      ...(tls ? { servername: net.isIP(host) ? '' : host } : {}),
    });
    let connected = false;
    let answered = false;
    let failed = false;
    const failOnce = (why: string) => {
      if (answered || failed) return;
      failed = true;
      if (!connected) t.counted?.('unreachable');
      fail(
        new OutpostError(
          'unavailable',
          connected
            ? `edge ${t.edge} is served by hub replica ${t.to.id} (${t.to.url}), and the connection to it broke before it answered: ${why}; try again`
            : `edge ${t.edge} is served by hub replica ${t.to.id} (${t.to.url}), which cannot be reached from this replica: ${why}; try again (if that replica is down, its edges reconnect to another one)`,
        ),
      );
      up.destroy();
    };
    const timer = setTimeout(
      () => failOnce(`no connection within ${FORWARD_CONNECT_TIMEOUT_MS / 1000} s`),
      FORWARD_CONNECT_TIMEOUT_MS,
    );
    const isConnected = () => {
      connected = true;
      clearTimeout(timer);
      t.counted?.('ok');
    };
    up.on('socket', (s) => {
      s.setKeepAlive(true, FORWARD_CONNECT_TIMEOUT_MS);
      if (up.reusedSocket)
        isConnected(); // a kept-alive connection to B
      else s.once(tls ? 'secureConnect' : 'connect', isConnected);
    });
    up.on('response', () => (answered = true));
    up.on('upgrade', () => (answered = true));
    up.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const code = err.code ?? err.message;
      failOnce(
        /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code)
          ? `${code}: its certificate does not check out against this hub's CA for ${host} (the replicas must share the hub CA, and the host of its --advertise-url must be in its certificate)`
          : code,
      );
    });
    up.on('close', () => clearTimeout(timer));
    return up;
  }

  /** Forwards a plain request; the response streams back with backpressure. */
  http(req: IncomingMessage, res: ServerResponse, t: ForwardTarget, fail: (err: unknown) => void): void {
    const up = this.request(req, t, fail);
    up.on('response', (r) => {
      res.writeHead(r.statusCode ?? 502, withoutHop(r.headers));
      r.pipe(res);
      // B or the link died mid-stream: the client sees a failure, not a short body.
      r.on('error', () => res.destroy());
      r.on('aborted', () => res.destroy());
    });
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  }

  /** Forwards an upgrade (WebSocket, SPDY): once B switches protocols, bytes flow both ways. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, t: ForwardTarget): void {
    const up = this.request(req, t, (err) => socket.end(rawErrorResponse(err)));
    socket.on('close', () => up.destroy());
    up.on('upgrade', (r, upSocket, upHead) => {
      socket.write(responseHead(r));
      if (upHead.length) socket.write(upHead);
      if (head.length) upSocket.write(head);
      upSocket.on('error', () => socket.destroy());
      upSocket.on('close', () => socket.destroy());
      socket.on('close', () => upSocket.destroy());
      upSocket.pipe(socket);
      socket.pipe(upSocket);
    });
    // B refused the upgrade (401, 403, 503...): its answer goes to the client as it is.
    up.on('response', (r) => {
      socket.write(responseHead(r, { ...withoutHop(r.headers), connection: 'close' }));
      r.on('error', () => socket.destroy());
      r.pipe(socket);
    });
    up.end();
  }

  /**
   * A byte pipe to replica `to` at `path`: a signed upgrade (Upgrade: outpost-interconnect) that
   * resolves with the socket once `to` switched protocols, and rejects with the reason `to` gave
   * (its error body's message) or why it could not be reached. The interconnect's relay uses it
   * for a serving edge another replica holds (hub/interconnect/relay.ts).
   */
  dial(to: HubReplica, path: string): Promise<net.Socket> {
    const url = new URL(to.url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const tls = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const up = (tls ? https : http).request({
        protocol: url.protocol,
        hostname: host,
        port: url.port || (tls ? 443 : 80),
        method: 'GET',
        path,
        headers: {
          connection: 'Upgrade',
          upgrade: INTERCONNECT_UPGRADE,
          ...signForward(this.opts.key, this.opts.self, to.id, 'GET', path),
        },
        agent: tls ? this.httpsAgent : this.httpAgent,
        ...(tls ? { servername: net.isIP(host) ? '' : host } : {}),
      });
      const timer = setTimeout(() => {
        up.destroy();
        reject(
          new Error(`hub replica ${to.id} (${to.url}) did not answer within ${FORWARD_CONNECT_TIMEOUT_MS / 1000} s`),
        );
      }, FORWARD_CONNECT_TIMEOUT_MS);
      up.on('upgrade', (_r, socket, head) => {
        clearTimeout(timer);
        const sock = socket as net.Socket;
        // A half-close crosses: B's END must not end our side too.
        sock.allowHalfOpen = true;
        if (head.length) sock.unshift(head);
        resolve(sock);
      });
      up.on('response', (r) => {
        clearTimeout(timer);
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.length < 16 && chunks.push(c));
        r.on('end', () => {
          let why = `HTTP ${r.statusCode}`;
          try {
            why =
              (JSON.parse(Buffer.concat(chunks).toString()) as { error?: { message?: string } }).error?.message ?? why;
          } catch {
            // not our JSON error: the status says enough
          }
          reject(new Error(why));
        });
        r.on('error', (err) => reject(err));
      });
      up.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(new Error(`hub replica ${to.id} (${to.url}) cannot be reached: ${err.code ?? err.message}`));
      });
      up.end();
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

function withoutHop(h: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !HOP_BY_HOP_HEADERS.has(k)) out[k] = v;
  return out;
}

/** The status line and headers of `r`, as raw bytes for a socket (an upgrade's own headers kept). */
function responseHead(r: IncomingMessage, headers: IncomingHttpHeaders = r.headers): string {
  const lines = [`HTTP/1.1 ${r.statusCode} ${r.statusMessage ?? ''}`];
  for (const [k, v] of Object.entries(headers))
    for (const one of Array.isArray(v) ? v : [v]) if (one !== undefined) lines.push(`${k}: ${one}`);
  return lines.join('\r\n') + '\r\n\r\n';
}
