/**
 * @module The image cache's HTTP routes (docs/drivers.md, "The hub's image cache"), served on the
 * raw node request like the blob routes; the cache itself is cache.ts:
 *
 * - `GET /v2/` (the API check), `GET|HEAD /v2/PROJECT/REPO/manifests/TAG|DIGEST`,
 *   `GET|HEAD /v2/PROJECT/REPO/blobs/DIGEST`, `GET /v2/PROJECT/REPO/tags/list`.
 *   Authenticated per project with an API token: `Authorization: Bearer TOKEN`, or basic auth with
 *   the token as the password (what podman's and skopeo's `--creds any:TOKEN` send). A viewer may
 *   pull; a token of another project sees no such name.
 * - `PUT /api/v1/projects/P/images` `{repository, tag, manifest}` (write): tags a manifest whose
 *   blobs were pushed (`outpost image push` uploads them as blobs first); every blob the manifest
 *   names must be in the project. `GET /api/v1/projects/P/images` lists the tags.
 */
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { isDigest, type BlobDigest } from '../../core/blobs.js';
import { OutpostError } from '../../core/errors.js';
import { isValidName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import type { HubAuth } from '../auth/contract.js';
import { principalOf, type ApiPrincipal } from '../auth/principal.js';
import { authorize } from '../auth/roles.js';
import type { HubBlobs } from '../blobs/index.js';
import { REPOSITORY, type ImageCache } from './cache.js';

const log = createLogger('hub:images');

const V2 = /^\/v2\/(?:(.+)\/(manifests|blobs|tags)\/([^/]+))?\/?$/;
const API = /^\/api\/v1\/projects\/([^/]+)\/images\/?$/;

export interface ImageRoutesOptions {
  cache: ImageCache;
  blobs: HubBlobs;
  auth: Pick<HubAuth, 'verifyApiToken' | 'hold'>;
}

/** OCI error codes by our error codes (distribution spec, "Error Codes"). */
function ociError(res: ServerResponse, err: unknown, code?: string): void {
  const e = err instanceof OutpostError ? err : new OutpostError('internal', 'internal error', { cause: err as Error });
  if (!(err instanceof OutpostError)) log.error({ err }, 'image request failed');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const c =
    code ??
    (
      {
        unauthorized: 'UNAUTHORIZED',
        forbidden: 'DENIED',
        not_found: 'NAME_UNKNOWN',
        bad_request: 'UNSUPPORTED',
      } as Record<string, string>
    )[e.code] ??
    'UNKNOWN';
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (e.status === 401) headers['www-authenticate'] = 'Basic realm="outpost"';
  res.writeHead(e.status, headers).end(JSON.stringify({ errors: [{ code: c, message: e.message }] }));
}

/** The API token of a request: bearer, or basic auth's password (the user name is not used). */
function tokenOf(header: string | undefined): string | null {
  if (!header) return null;
  const bearer = /^Bearer\s+(\S+)$/i.exec(header);
  if (bearer) return bearer[1];
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header);
  if (!basic) return null;
  const text = Buffer.from(basic[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon >= 0 && colon < text.length - 1 ? text.slice(colon + 1) : null;
}

const MISSING = 'log in with an API token: podman login HUB -u outpost -p TOKEN (or --creds outpost:TOKEN)';

/** Serves an image route; false when `req` is not one. */
export function handleImageRequest(o: ImageRoutesOptions, req: IncomingMessage, res: ServerResponse): boolean {
  const url = new URL(req.url ?? '/', 'http://x');
  const api = API.exec(url.pathname);
  const v2 = api ? null : V2.exec(url.pathname);
  if (!api && !v2) return false;
  const run = async (): Promise<void> => {
    const p = principalOf((t) => o.auth.verifyApiToken(t), tokenOf(req.headers.authorization), MISSING);
    // A pull of a large layer ends with its token (revoked or expired), as streams do.
    res.once(
      'close',
      o.auth.hold(p, () => res.destroy()),
    );
    if (api) return serveApi(o, req, res, p, decodeURIComponent(api[1]));
    return serveV2(o, req, res, p, v2!);
  };
  run().catch((err: unknown) => ociError(res, err));
  return true;
}

async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > limit) throw new OutpostError('too_large', `the body passes ${limit} bytes`);
    chunks.push(c);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new OutpostError('bad_request', 'the body is not JSON');
  }
}

async function serveApi(
  o: ImageRoutesOptions,
  req: IncomingMessage,
  res: ServerResponse,
  p: ApiPrincipal,
  project: string,
): Promise<void> {
  if (!isValidName(project)) throw new OutpostError('bad_request', `invalid project "${project.slice(0, 80)}"`);
  if (req.method === 'GET') {
    authorize(p, 'read', project, { doing: 'read images' });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: o.cache.list(project) }));
    return;
  }
  if (req.method !== 'PUT')
    throw new OutpostError('bad_request', `use GET or PUT on /api/v1/projects/${project}/images`);
  authorize(p, 'write', project, { doing: 'push images' });
  const body = (await readJson(req, 64 * 1024)) as { repository?: unknown; tag?: unknown; manifest?: unknown };
  if (typeof body?.repository !== 'string' || typeof body.tag !== 'string' || typeof body.manifest !== 'string')
    throw new OutpostError('bad_request', 'send {"repository": "team/app", "tag": "v1", "manifest": "sha256:..."}');
  if (!isDigest(body.manifest))
    throw new OutpostError('bad_request', `manifest "${body.manifest.slice(0, 80)}": use sha256: and 64 hex digits`);
  const t = await o.cache.tag(project, body.repository, body.tag, body.manifest);
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(t));
}

async function serveV2(
  o: ImageRoutesOptions,
  req: IncomingMessage,
  res: ServerResponse,
  p: ApiPrincipal,
  m: RegExpExecArray,
): Promise<void> {
  const method = req.method ?? 'GET';
  const base = { 'docker-distribution-api-version': 'registry/2.0' };
  if (method !== 'GET' && method !== 'HEAD')
    return ociError(
      res,
      new OutpostError('bad_request', 'this registry is read-only: push with outpost image push'),
      'UNSUPPORTED',
    );
  if (m[1] === undefined) {
    res.writeHead(200, { ...base, 'content-type': 'application/json' }).end('{}');
    return;
  }
  const name = decodeURIComponent(m[1]);
  const slash = name.indexOf('/');
  const project = slash > 0 ? name.slice(0, slash) : '';
  const repository = slash > 0 ? name.slice(slash + 1) : '';
  if (!isValidName(project) || !REPOSITORY.test(repository))
    return ociError(
      res,
      new OutpostError(
        'not_found',
        `"${name.slice(0, 80)}" is not PROJECT/REPOSITORY: name images HUB/PROJECT/REPO:TAG`,
      ),
      'NAME_INVALID',
    );
  authorize(p, 'read', project, { doing: 'pull images' });
  const what = m[2];
  const ref = decodeURIComponent(m[3]);
  if (what === 'tags') {
    if (ref !== 'list') return ociError(res, new OutpostError('not_found', 'use tags/list'), 'NAME_UNKNOWN');
    const tags = o.cache
      .list(project)
      .filter((t) => t.repository === repository)
      .map((t) => t.tag);
    if (tags.length === 0)
      return ociError(res, new OutpostError('not_found', `no repository ${repository} in project ${project}`));
    res.writeHead(200, { ...base, 'content-type': 'application/json' }).end(JSON.stringify({ name, tags }));
    return;
  }
  let digest: BlobDigest;
  let mediaType: string;
  if (what === 'manifests') {
    const r = await o.cache.lookup(project, repository, ref);
    if (!r)
      return ociError(
        res,
        new OutpostError('not_found', `manifest ${ref} of ${repository} not found in project ${project}`),
        'MANIFEST_UNKNOWN',
      );
    ({ digest, mediaType } = r);
  } else {
    if (!isDigest(ref) || !o.cache.repositoryHasBlob(project, repository, ref))
      return ociError(
        res,
        new OutpostError('not_found', `blob ${ref.slice(0, 80)} not found in ${repository}`),
        'BLOB_UNKNOWN',
      );
    digest = ref;
    mediaType = 'application/octet-stream';
  }
  const info = o.blobs.get(project, digest);
  if (!info)
    return ociError(res, new OutpostError('not_found', `blob ${digest} is gone from the store`), 'BLOB_UNKNOWN');
  res.writeHead(200, {
    ...base,
    'content-type': mediaType,
    'content-length': String(info.size),
    'docker-content-digest': digest,
    etag: `"${digest}"`,
  });
  if (method === 'HEAD') {
    res.end();
    return;
  }
  await pipeline(fs.createReadStream(o.blobs.files.path(digest), { highWaterMark: 256 * 1024 }), res);
}
