/**
 * @module The tunnel routes on the hub, once a request is admitted (gateway.ts): proxy and kube
 * (HTTP and upgrades, streamed both ways); logs, exec and actions are in ops.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { OutpostError, toOutpostError } from '../../core/errors.js';
import { HOP_BY_HOP_HEADERS, rawErrorResponse } from '../../core/http.js';
import { isValidName, type EdgeName } from '../../core/ids.js';
import type { EventLog } from '../state/events.js';
import type { TunnelStream } from '../../sync/tunnel.js';
import type { Principal } from '../auth/contract.js';
import { FORWARD_SIGNATURE, FORWARDED_BY } from './forward.js';
import type { GatewayLimits } from './limits.js';
import { withoutProxyCookie } from './proxy-session.js';

export interface RouteContext {
  principal: Principal;
  edge: EdgeName;
  project: string;
  route: string;
  /** The path after the route (`/WORKLOAD/PORT/x` for proxy, `/api/v1/pods` for kube). */
  rest: string;
  limits: GatewayLimits;
  /** Where the routes record what an operator did through the tunnel (an exec, a restart). */
  events: Pick<EventLog, 'record'>;
  /** Opens a stream to the edge; `long` picks the long deadline; `target` is what the log line names. */
  open(header: Record<string, unknown>, long: boolean, target: string): TunnelStream;
  upgrade?: { socket: Duplex; head: Buffer };
}

/** Hop-by-hop headers, and `host`: the edge dials the workload itself. */
const HOP = new Set([...HOP_BY_HOP_HEADERS, 'host']);

const KUBE_REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  413: 'RequestEntityTooLarge',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/**
 * Answers with the error if nothing was sent yet; otherwise cuts the response so the client sees a
 * failure. On the kube route the error is a Kubernetes `Status`, so kubectl prints our message.
 */
export function sendError(res: ServerResponse, err: unknown, kube = false): void {
  if (res.headersSent) {
    res.destroy(err instanceof Error ? err : undefined);
    return;
  }
  const e = toOutpostError(err);
  const out = kube
    ? {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: e.message,
        reason: KUBE_REASONS[e.status] ?? 'InternalError',
        code: e.status,
      }
    : e.toJSON();
  res.writeHead(e.status, { 'content-type': 'application/json' }).end(JSON.stringify(out));
}

function rawError(socket: Duplex, err: unknown): void {
  socket.end(rawErrorResponse(err));
}

function forwardHeaders(req: IncomingMessage, prefix: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    // The user's hub token authenticates to the hub only; it never reaches an edge or a workload.
    if (v === undefined || HOP.has(k) || k === 'authorization') continue;
    // A forwarding replica's signature (forward.ts) is for the hub that checked it.
    if (k === FORWARDED_BY || k === FORWARD_SIGNATURE) continue;
    if (k === 'cookie') {
      // Likewise the browser's proxy session cookie; the app's own cookies pass.
      const rest = withoutProxyCookie(String(v));
      if (rest) out[k] = rest;
      continue;
    }
    out[k] = v;
  }
  if (req.headers.upgrade) {
    out.connection = 'Upgrade';
    out.upgrade = req.headers.upgrade;
  }
  const xff = req.headers['x-forwarded-for'];
  out['x-forwarded-for'] = [xff, req.socket.remoteAddress].filter(Boolean).join(', ');
  out['x-forwarded-host'] = req.headers.host ?? '';
  out['x-forwarded-proto'] = 'encrypted' in req.socket ? 'https' : 'http';
  out['x-forwarded-prefix'] = prefix;
  return out;
}

function writeHead(res: ServerResponse, head: Record<string, unknown>): void {
  const headers = (head.headers ?? {}) as Record<string, string | string[]>;
  for (const k of Object.keys(headers)) if (HOP.has(k)) delete headers[k];
  res.writeHead(Number(head.status) || 502, headers);
}

/** Proxy and kube: one HTTP exchange, or an upgrade that becomes a byte pipe. */
export async function handleHttp(
  ctx: RouteContext,
  req: IncomingMessage,
  res: ServerResponse | undefined,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://x');
  let target: 'kube' | { workload: string; port: number };
  let path: string;
  let prefix = `/api/v1/edges/${ctx.edge}/${ctx.route}`;
  if (ctx.route === 'kube') {
    target = 'kube';
    path = (ctx.rest || '/') + url.search;
  } else {
    const m = /^\/([^/]+)\/(\d{1,5})(\/.*)?$/.exec(ctx.rest);
    if (!m || !isValidName(m[1]) || Number(m[2]) < 1 || Number(m[2]) > 65535)
      throw new OutpostError(
        'bad_request',
        `use /api/v1/edges/${ctx.edge}/proxy/WORKLOAD/PORT/PATH (PORT a declared containerPort of WORKLOAD)`,
      );
    target = { workload: m[1], port: Number(m[2]) };
    prefix += `/${m[1]}/${m[2]}`;
    path = (m[3] ?? '/') + url.search;
  }
  const upgrade = !!ctx.upgrade;
  const long =
    upgrade ||
    url.searchParams.get('watch') === 'true' ||
    url.searchParams.get('watch') === '1' ||
    url.searchParams.get('follow') === 'true';
  const s = ctx.open(
    {
      type: 'http',
      target,
      method: (req.method ?? 'GET').toUpperCase(),
      path,
      headers: forwardHeaders(req, prefix),
      upgrade,
    },
    long,
    `${ctx.route} ${typeof target === 'string' ? '' : `${target.workload}:${target.port} `}${req.method} ${path}`,
  );

  if (ctx.upgrade) {
    const { socket, head } = ctx.upgrade;
    socket.on('close', () => s.destroy());
    s.on('error', (err) => (s.bytesIn === 0 ? rawError(socket, err) : socket.destroy()));
    s.once('meta', (h) => {
      const status = Number(h.status) || 502;
      const headers = (h.headers ?? {}) as Record<string, string | string[]>;
      const lines = [`HTTP/1.1 ${status} ${status === 101 ? 'Switching Protocols' : 'Upgrade Refused'}`];
      for (const [k, v] of Object.entries(headers))
        for (const one of Array.isArray(v) ? v : [v]) lines.push(`${k}: ${one}`);
      if (status !== 101) lines.push('connection: close');
      socket.write(lines.join('\r\n') + '\r\n\r\n');
      if (status === 101) {
        if (head.length) s.write(head);
        socket.pipe(s);
      } else s.end();
      s.pipe(socket);
    });
    return;
  }

  const r = res!;
  req.pipe(s);
  r.on('close', () => {
    if (!r.writableFinished) s.destroy();
  });
  s.on('error', (err) => sendError(r, err, ctx.route === 'kube'));
  s.once('meta', (h) => {
    writeHead(r, h);
    s.pipe(r);
  });
}
