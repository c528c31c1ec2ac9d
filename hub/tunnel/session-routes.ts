/**
 * @module The proxy session routes (docs/tunnel.md, "Opening a workload's web UI in a browser"):
 * `POST .../proxy-session` makes a one-time link, and the first request with `?session=LINK`
 * trades it for the path-scoped cookie. Neither involves the edge, so any hub replica serves them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { OutpostError } from '../../core/errors.js';
import { isValidName, type EdgeName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import type { Principal } from '../auth/contract.js';
import { principalFromHeader } from '../auth/principal.js';
import { authorize } from '../auth/roles.js';
import type { EdgeState } from '../state/edges.js';
import { readJson } from './ops.js';
import {
  cookieValues,
  DEFAULT_SESSION_TTL_MS,
  MAX_SESSION_TTL_MS,
  PROXY_COOKIE,
  proxyPath,
  proxyTargetOf,
  sessionCookie,
  type ProxySessions,
  type ProxyTarget,
} from './proxy-session.js';

const log = createLogger('hub:tunnel');

export interface SessionRoutes {
  sessions: ProxySessions;
  verify(token: string): Principal | null;
  edges: Pick<EdgeState, 'get'>;
}

/** `POST .../proxy-session {"workload", "port", "ttlSeconds"}`: a one-time browser link (bearer only, write). */
export async function createSession(
  d: SessionRoutes,
  req: IncomingMessage,
  res: ServerResponse,
  edge: EdgeName,
  rest: string,
): Promise<void> {
  if (req.method !== 'POST' || rest !== '')
    throw new OutpostError(
      'bad_request',
      `use POST /api/v1/edges/${edge}/proxy-session {"workload": "NAME", "port": N, "ttlSeconds": S}`,
    );
  const p = principalFromHeader(d.verify, req.headers.authorization);
  const rt = d.edges.get(edge);
  if (!rt) throw new OutpostError('not_found', `edge ${edge} not found`);
  authorize(p, 'write', rt.project, { doing: `use proxy on edge ${edge}`, notFound: `edge ${edge}` });
  const b = await readJson(req);
  if (typeof b.workload !== 'string' || !isValidName(b.workload))
    throw new OutpostError('invalid', 'workload: must be a workload name');
  if (typeof b.port !== 'number' || !Number.isInteger(b.port) || b.port < 1 || b.port > 65535)
    throw new OutpostError('invalid', 'port: must be a declared containerPort of the workload (1-65535)');
  const maxS = MAX_SESSION_TTL_MS / 1000;
  if (
    b.ttlSeconds !== undefined &&
    (typeof b.ttlSeconds !== 'number' || !Number.isInteger(b.ttlSeconds) || b.ttlSeconds < 1 || b.ttlSeconds > maxS)
  )
    throw new OutpostError('invalid', `ttlSeconds: must be a whole number of seconds from 1 to ${maxS}`);
  const target: ProxyTarget = { edge, workload: b.workload, port: b.port };
  const { link, expiresAt } = d.sessions.create(
    p,
    target,
    b.ttlSeconds === undefined ? DEFAULT_SESSION_TTL_MS : (b.ttlSeconds as number) * 1000,
  );
  const path = `${proxyPath(target)}?session=${link}`;
  const proto = 'encrypted' in req.socket ? 'https' : 'http';
  log.info(
    {
      user: p.tokenId,
      role: p.role,
      edge,
      target: `proxy ${target.workload}:${target.port}`,
      expiresAt: new Date(expiresAt).toISOString(),
    },
    'proxy session created',
  );
  res.writeHead(201, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(
    JSON.stringify({
      url: `${proto}://${req.headers.host ?? 'localhost'}${path}`,
      path,
      expiresAt: new Date(expiresAt).toISOString(),
    }),
  );
}

/** The first request with `?session=LINK`: trade it for the path-scoped cookie and redirect to the same URL without it. */
export function exchangeLink(
  d: SessionRoutes,
  req: IncomingMessage,
  res: ServerResponse,
  edge: EdgeName,
  rest: string,
  url: URL,
): void {
  const target = proxyTargetOf(edge, rest);
  if (!target)
    throw new OutpostError(
      'bad_request',
      `use /api/v1/edges/${edge}/proxy/WORKLOAD/PORT/PATH (PORT a declared containerPort of WORKLOAD)`,
    );
  const link = url.searchParams.get('session') ?? '';
  url.searchParams.delete('session');
  const headers: Record<string, string> = {
    location: url.pathname + url.search,
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  };
  try {
    const { cookie, expiresAt } = d.sessions.exchange(link, target);
    headers['set-cookie'] = sessionCookie(cookie, target, expiresAt, 'encrypted' in req.socket);
    log.info({ edge, target: `proxy ${target.workload}:${target.port}` }, 'proxy session link exchanged for a cookie');
  } catch (err) {
    // A used link opened again in the browser that holds its cookie (a reload, a bookmark) just goes on.
    if (!d.sessions.verify(cookieValues(req.headers.cookie, PROXY_COOKIE), target)) throw err;
  }
  res.writeHead(303, headers).end();
}
