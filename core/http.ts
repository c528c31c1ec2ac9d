/**
 * @module HTTP pieces that the hub's API, its tunnel and blob routes and the sync server's upgrade
 * share: reading the bearer token, and answering on a raw socket (an upgrade that is refused
 * never gets a ServerResponse).
 */
import { toOutpostError } from './errors.js';

/**
 * Headers that describe one hop, never passed on by a proxy (RFC 9110 7.6.1): the hub's tunnel
 * routes and its forwarding to another replica, and the edge's proxy to a workload. An upgrade sets
 * `upgrade` and `connection` again; a proxy that dials a new host also drops `host`.
 */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * The token of an `Authorization: Bearer TOKEN` header; null when the header is absent or another
 * scheme. The one parser of the header on the hub (API, SSE stream, tunnel, blobs, sync upgrade).
 *
 * @example
 * bearerToken('Bearer abc'); // 'abc'
 * bearerToken('Basic abc'); // null
 */
export function bearerToken(header: string | null | undefined): string | null {
  if (!header) return null;
  return /^Bearer\s+(\S+)$/i.exec(header)?.[1] ?? null;
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  507: 'Insufficient Storage',
};

/**
 * The HTTP/1.1 answer to `err` as text for a raw socket: the status and JSON body of
 * toOutpostError, `WWW-Authenticate: Bearer` on a 401, `Connection: close`.
 */
export function rawErrorResponse(err: unknown, headers: Record<string, string | number> = {}): string {
  const e = toOutpostError(err);
  const body = JSON.stringify(e.toJSON());
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return (
    `HTTP/1.1 ${e.status} ${REASONS[e.status] ?? 'Error'}\r\n` +
    'Content-Type: application/json\r\n' +
    `Content-Length: ${new TextEncoder().encode(body).length}\r\n` +
    (e.status === 401 ? 'WWW-Authenticate: Bearer\r\n' : '') +
    extra +
    'Connection: close\r\n\r\n' +
    body
  );
}
