/**
 * @module Serves the built web UI at `/`: from the executable's SEA assets (`ui/<path>` listed in
 * `ui/manifest.json`, see build/sea/assets.ts) when packaged, else from `ui/dist` on disk
 * (`npm run build:ui`; OUTPOST_UI_DIR overrides the directory). Any other path that is not an API
 * path gets index.html, so the UI's own routes (/edges/NAME) survive a reload.
 *
 * Caching: Vite puts a content hash in every file name under assets/, so those are immutable for a
 * year; index.html is revalidated on every load (ETag), so a new hub version shows its new UI.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono, type Context } from 'hono';
import { createLogger } from '../../core/logger.js';
import { isPackaged, packagedAsset } from '../../sync/native.js';

const log = createLogger('hub:ui');

export const UI_MANIFEST_KEY = 'ui/manifest.json';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webmanifest': 'application/manifest+json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/** The UI talks to this hub only; nothing may be loaded from elsewhere (there is no internet on site). */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const IMMUTABLE = 'public, max-age=31536000, immutable';

export interface UiFile {
  body: Buffer;
  contentType: string;
  etag: string;
}

/** Where the UI's files come from. `get` takes a path relative to the UI root with `/` separators. */
export interface UiSource {
  describe: string;
  get(rel: string): UiFile | undefined;
}

export function contentTypeOf(file: string): string {
  return CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

const etagOf = (body: Buffer): string => `"${createHash('sha256').update(body).digest('hex').slice(0, 20)}"`;

export function diskSource(dir: string): UiSource {
  const root = path.resolve(dir);
  // Small files, hashed once per (size, mtime): a rebuild during development is picked up at once.
  const cache = new Map<string, { key: string; file: UiFile }>();
  return {
    describe: root,
    get(rel) {
      const abs = path.resolve(root, rel);
      if (abs !== root && !abs.startsWith(root + path.sep)) return undefined;
      let st: fs.Stats;
      try {
        st = fs.statSync(abs);
      } catch {
        return undefined;
      }
      if (!st.isFile()) return undefined;
      const key = `${st.size}:${st.mtimeMs}`;
      const hit = cache.get(rel);
      if (hit?.key === key) return hit.file;
      const body = fs.readFileSync(abs);
      const file = { body, contentType: contentTypeOf(abs), etag: etagOf(body) };
      cache.set(rel, { key, file });
      return file;
    },
  };
}

interface ManifestEntry {
  path: string;
  sha256: string;
  contentType: string;
}

export function packagedSource(): UiSource | undefined {
  const raw = packagedAsset(UI_MANIFEST_KEY);
  if (!raw) return undefined;
  let entries: ManifestEntry[];
  try {
    entries = (JSON.parse(raw.toString('utf8')) as { files: ManifestEntry[] }).files;
  } catch (err) {
    log.error(
      { err },
      `${UI_MANIFEST_KEY} inside the executable is not valid JSON: the web UI is disabled (rebuild the executable)`,
    );
    return undefined;
  }
  const byPath = new Map(entries.map((e) => [e.path, e]));
  const loaded = new Map<string, UiFile>();
  return {
    describe: 'the executable',
    get(rel) {
      const hit = loaded.get(rel);
      if (hit) return hit;
      const e = byPath.get(rel);
      const body = e && packagedAsset(`ui/${e.path}`);
      if (!e || !body) return undefined;
      const file = { body, contentType: e.contentType, etag: `"${e.sha256.slice(0, 20)}"` };
      loaded.set(rel, file);
      return file;
    },
  };
}

/** ui/dist beside the sources (tsx) or beside dist/outpost.cjs (the bundle run with node). */
export function defaultUiDir(): string | undefined {
  if (process.env.OUTPOST_UI_DIR) return process.env.OUTPOST_UI_DIR;
  const here = path.dirname(fileURLToPath(import.meta.url));
  return [path.resolve(here, '../../ui/dist'), path.resolve(here, '../ui/dist')].find((d) =>
    fs.existsSync(path.join(d, 'index.html')),
  );
}

export function defaultUiSource(): UiSource | undefined {
  if (isPackaged()) return packagedSource();
  const dir = defaultUiDir();
  return dir ? diskSource(dir) : undefined;
}

const NOT_BUILT = `<!doctype html><html lang="en"><meta charset="utf-8"><title>Outpost</title>
<body style="font-family:sans-serif;max-width:40rem;margin:3rem auto;line-height:1.5">
<h1>Outpost hub</h1><p>The web UI is not built. Run <code>npm run build:ui</code> (or use the packaged
executable, which carries it) and reload. The REST API is at <code>/api/v1</code>.</p></body></html>`;

/** Paths the UI never answers: the API and the hub's own endpoints keep their JSON 404s. */
const RESERVED = /^\/(api|healthz|readyz|metrics)(\/|$)/;

function send(c: Context, file: UiFile, cache: string): Response {
  const headers: Record<string, string> = {
    'content-type': file.contentType,
    'cache-control': cache,
    etag: file.etag,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
  if (file.contentType.startsWith('text/html')) {
    headers['content-security-policy'] = CSP;
    headers['x-frame-options'] = 'DENY';
  }
  const inm = c.req.header('if-none-match');
  if (inm && inm.split(',').some((t) => t.trim() === file.etag)) return c.body(null, 304, headers);
  return c.body(new Uint8Array(file.body), 200, headers);
}

/**
 * GET/HEAD for everything under `/` that no API route took. `source` defaults to the packaged UI
 * or ui/dist, looked up on each request while none is found, so `npm run build:ui` needs no restart.
 */
export function uiRoutes(opts: { source?: UiSource } = {}): Hono {
  const app = new Hono();
  let source = opts.source;
  let warned = false;
  app.get('*', async (c, next) => {
    const p = c.req.path;
    if (RESERVED.test(p)) return next();
    source ??= defaultUiSource();
    if (!source) {
      if (!warned) log.warn('the web UI is not built (no ui/dist/index.html): run npm run build:ui');
      warned = true;
      return c.html(NOT_BUILT, 503, { 'cache-control': 'no-cache' });
    }
    let rel: string;
    try {
      rel = decodeURIComponent(p).replace(/^\/+/, '');
    } catch {
      return c.text('bad path encoding', 400);
    }
    if (rel.split('/').includes('..')) return c.text('bad path', 400);
    const file = rel && rel !== 'index.html' ? source.get(rel) : undefined;
    if (file) return send(c, file, rel.startsWith('assets/') ? IMMUTABLE : 'no-cache');
    // A missing asset must be a 404, not index.html served as JavaScript.
    if (rel.startsWith('assets/') || /\.[a-z0-9]{1,8}$/i.test(rel))
      return c.text(`${p} not found`, 404, { 'cache-control': 'no-cache' });
    const index = source.get('index.html');
    if (!index)
      return c.text(`index.html is missing from the UI in ${source.describe}: rebuild it (npm run build:ui)`, 500);
    return send(c, index, 'no-cache');
  });
  return app;
}
