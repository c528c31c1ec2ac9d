/**
 * @module The blob routes of the REST API (docs/api.md), served on the raw node request like the
 * tunnel routes: an upload streams to disk with backpressure (never the whole body in memory,
 * and exempt from the API's small JSON body limit, bounded instead by the project's quota), and a
 * download streams from disk, resumable with `Range: bytes=N-`.
 *
 * - `POST   /api/v1/projects/P/blobs` body = the bytes; `content-type` is the media type;
 *   optional `x-outpost-digest: sha256:...` is checked. 201 with the blob (200 if it was there).
 * - `GET    /api/v1/projects/P/blobs` the list; `GET|HEAD .../blobs/sha256:HEX` the bytes;
 *   `DELETE .../blobs/sha256:HEX` (409 while an object refers to it).
 */
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { DEFAULT_MEDIA_TYPE, isDigest, isMediaType, type BlobDigest } from '../../core/blobs.js';
import { OutpostError } from '../../core/errors.js';
import { isValidName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import type { HubAuth } from '../auth/contract.js';
import { byOf, principalFromHeader } from '../auth/principal.js';
import { authorize } from '../auth/roles.js';
import { lingerOnClose } from '../http-limits.js';
import { sendError } from '../tunnel/routes.js';
import type { HubBlobs } from './index.js';

const log = createLogger('hub:blobs');

const BLOB_PATH = /^\/api\/v1\/projects\/([^/]+)\/blobs(?:\/([^/]+))?\/?$/;

/**
 * An upload may take long on a slow link; instead of the server's whole-request timeout (which
 * would cut a large upload), a blob request fails when no byte moved for this long
 * (`outpost hub --blob-idle-timeout`).
 */
export const BLOB_IDLE_TIMEOUT_MS = 2 * 60_000;

export interface BlobRoutesOptions {
  blobs: HubBlobs;
  auth: Pick<HubAuth, 'verifyApiToken' | 'hold'>;
  /** Default BLOB_IDLE_TIMEOUT_MS. */
  idleTimeoutMs?: number;
}

export function isBlobRoute(req: IncomingMessage): boolean {
  return BLOB_PATH.test(new URL(req.url ?? '/', 'http://x').pathname);
}

/** Serves a blob route; false when `req` is not one. */
export function handleBlobRequest(o: BlobRoutesOptions, req: IncomingMessage, res: ServerResponse): boolean {
  const url = new URL(req.url ?? '/', 'http://x');
  const m = BLOB_PATH.exec(url.pathname);
  if (!m) return false;
  const socket = req.socket;
  cutWhenIdle(req, res, o.idleTimeoutMs ?? BLOB_IDLE_TIMEOUT_MS);
  serve(o, req, res, decodeURIComponent(m[1]), m[2] === undefined ? undefined : decodeURIComponent(m[2])).catch(
    (err: unknown) => {
      if (!(err instanceof OutpostError)) log.error({ err, path: req.url }, 'blob request failed');
      sendError(res, err);
      discardBody(req, socket);
    },
  );
  return true;
}

/**
 * Cuts the connection when no byte moved for `ms` while this request is served. The socket is
 * held here: once the response is done node detaches it (`req.socket` is null then), and a
 * keep-alive socket lives on under the server's own timeout, which fires this same event: the
 * listener goes with the request. Reading `req.socket` there killed the hub (issue #41), 5 s after
 * a refused upload.
 */
function cutWhenIdle(req: IncomingMessage, res: ServerResponse, ms: number): void {
  const socket = req.socket;
  const idle = () => socket.destroy(new Error(`no bytes for ${ms / 1000}s`));
  socket.setTimeout(ms, idle);
  res.once('close', () => socket.off('timeout', idle));
}

/**
 * A refused upload's body is read and dropped, so the client (still sending) reads our answer
 * instead of a broken pipe; past a bound the connection is cut instead. When the connection
 * closes after the answer (the client asked so, or the body was abandoned), it closes lingering.
 */
function discardBody(req: IncomingMessage, socket: Socket): void {
  if (req.complete) return;
  lingerOnClose(socket);
  if (req.destroyed) return;
  let n = 0;
  req.on('data', (c: Buffer) => {
    n += c.length;
    if (n > DISCARD_LIMIT_BYTES) req.destroy();
  });
  req.resume();
}

const DISCARD_LIMIT_BYTES = 64 * 1024 * 1024;

function digestOf(s: string): BlobDigest {
  if (!isDigest(s))
    throw new OutpostError('bad_request', `"${s.slice(0, 80)}" is not a blob digest: use sha256: and 64 hex digits`);
  return s;
}

async function serve(
  o: BlobRoutesOptions,
  req: IncomingMessage,
  res: ServerResponse,
  project: string,
  digestText: string | undefined,
): Promise<void> {
  const p = principalFromHeader((t) => o.auth.verifyApiToken(t), req.headers.authorization);
  // An upload or download of gigabytes ends with its token (revoked or expired), as streams do.
  res.once(
    'close',
    o.auth.hold(p, () => res.destroy()),
  );
  if (!isValidName(project)) throw new OutpostError('bad_request', `invalid project "${project}"`);
  const method = req.method ?? 'GET';
  if (digestText === undefined) {
    if (method === 'GET') {
      authorize(p, 'read', project, { doing: 'read blobs' });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: o.blobs.list(project) }));
      return;
    }
    if (method !== 'POST')
      throw new OutpostError('bad_request', `use POST /api/v1/projects/${project}/blobs with the bytes as the body`);
    authorize(p, 'write', project, { doing: 'change blobs' });
    const mediaType = (req.headers['content-type'] ?? DEFAULT_MEDIA_TYPE).trim();
    if (!isMediaType(mediaType)) throw new OutpostError('invalid', `content-type "${mediaType}" is not a media type`);
    const expectedHeader = req.headers['x-outpost-digest'];
    const expected = typeof expectedHeader === 'string' ? digestOf(expectedHeader) : undefined;
    const len = req.headers['content-length'];
    const before = expected ? o.blobs.get(project, expected) : undefined;
    if (before) {
      // Deduplicated: the bytes are already here.
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(before));
      discardBody(req, req.socket);
      return;
    }
    if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue();
    const info = await o.blobs.upload(req, {
      project,
      uploadedBy: byOf(p),
      mediaType,
      ...(expected ? { expected } : {}),
      ...(len !== undefined && /^\d+$/.test(len) ? { size: Number(len) } : {}),
    });
    res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(info));
    return;
  }
  const digest = digestOf(digestText);
  if (method === 'DELETE') {
    authorize(p, 'write', project, { doing: 'change blobs' });
    await o.blobs.remove(project, digest);
    res.writeHead(204).end();
    return;
  }
  if (method !== 'GET' && method !== 'HEAD')
    throw new OutpostError('bad_request', `use GET, HEAD or DELETE on /api/v1/projects/${project}/blobs/DIGEST`);
  authorize(p, 'read', project, { doing: 'read blobs' });
  const info = o.blobs.get(project, digest);
  if (!info) throw new OutpostError('not_found', `blob ${digest} not found in project ${project}`);
  const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const start = range ? Number(range[1]) : 0;
  if (start > info.size) {
    res.writeHead(416, { 'content-range': `bytes */${info.size}` }).end();
    return;
  }
  const headers: Record<string, string> = {
    'content-type': info.mediaType,
    'content-length': String(info.size - start),
    'accept-ranges': 'bytes',
    'x-outpost-digest': info.digest,
    ...(range ? { 'content-range': `bytes ${start}-${info.size - 1}/${info.size}` } : {}),
  };
  res.writeHead(range ? 206 : 200, headers);
  if (method === 'HEAD' || start === info.size) {
    res.end();
    return;
  }
  await pipeline(fs.createReadStream(o.blobs.files.path(digest), { start, highWaterMark: 256 * 1024 }), res);
}
