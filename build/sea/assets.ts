/**
 * @module The files a single executable carries besides its code (SEA assets), by key.
 *
 * The keys are a contract with the runtime: sync/native.ts reads `better_sqlite3.node`,
 * `automerge.wasm` and their hashes in `native.json`; the hub serves the web UI from `ui/<path>` using `ui/manifest.json`, and the
 * API document from `openapi.json`. See docs/packaging.md.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** Asset key -> absolute path of the file to embed. */
export type AssetMap = Record<string, string>;

/** Files embedded when they exist at build time; produced by other build steps. */
export const OPTIONAL_ASSETS: readonly { key: string; file: string }[] = [
  { key: 'openapi.json', file: 'dist/openapi.json' },
];

export const UI_PREFIX = 'ui/';
export const UI_MANIFEST_KEY = 'ui/manifest.json';

export interface UiManifestEntry {
  /** Path relative to ui/dist with `/` separators; the asset key is `ui/<path>`. */
  path: string;
  size: number;
  sha256: string;
  contentType: string;
}

export interface UiManifest {
  files: UiManifestEntry[];
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

export function contentTypeOf(file: string): string {
  return CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

/** The two native pieces every replica needs, resolved from node_modules of the project root. */
export function requiredAssets(root: string): AssetMap {
  const req = createRequire(path.join(root, 'package.json'));
  let sqliteDir: string;
  let wasm: string;
  try {
    sqliteDir = path.dirname(req.resolve('better-sqlite3/package.json'));
    wasm = req.resolve('@automerge/automerge/automerge.wasm');
  } catch (cause) {
    throw new Error('resolving better-sqlite3 and @automerge/automerge from node_modules (run `npm install` first)', {
      cause,
    });
  }
  // better-sqlite3 13 ships N-API prebuilds in its package (ABI-stable across Node versions); a
  // build from source (`npm rebuild better-sqlite3 --build-from-source`) lands in build/Release.
  const compiled = path.join(sqliteDir, 'build', 'Release', 'better_sqlite3.node');
  const addon = fs.existsSync(compiled)
    ? compiled
    : path.join(sqliteDir, 'prebuilds', `${process.platform}-${process.arch}.node`);
  if (!fs.existsSync(addon)) {
    throw new Error(
      `${addon} is missing: this better-sqlite3 has no addon for ${process.platform}-${process.arch} (run \`npm rebuild better-sqlite3 --build-from-source\`)`,
    );
  }
  return { 'better_sqlite3.node': addon, 'automerge.wasm': wasm };
}

function listFiles(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const ent of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${ent.name}` : ent.name;
    if (ent.isDirectory()) out.push(...listFiles(dir, r));
    else if (ent.isFile()) out.push(r);
  }
  return out;
}

/**
 * Every file of a built web UI as `ui/<path>` assets, plus a manifest listing them. The manifest
 * is written into `workDir` because SEA assets must be files.
 */
export function uiAssets(uiDist: string, workDir: string): { assets: AssetMap; manifest: UiManifest } {
  const files = listFiles(uiDist).sort();
  if (files.includes('manifest.json')) {
    throw new Error(
      `${path.join(uiDist, 'manifest.json')} collides with the asset key ${UI_MANIFEST_KEY} the build generates: rename it in the UI build (e.g. app.webmanifest)`,
    );
  }
  const assets: AssetMap = {};
  const manifest: UiManifest = { files: [] };
  for (const rel of files) {
    const abs = path.join(uiDist, rel);
    const bytes = fs.readFileSync(abs);
    assets[UI_PREFIX + rel] = abs;
    manifest.files.push({
      path: rel,
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      contentType: contentTypeOf(rel),
    });
  }
  const manifestFile = path.join(workDir, 'ui-manifest.json');
  fs.writeFileSync(manifestFile, JSON.stringify(manifest, null, 2) + '\n');
  assets[UI_MANIFEST_KEY] = manifestFile;
  return { assets, manifest };
}

export interface CollectOptions {
  /** Project root: node_modules and the optional asset paths are resolved from here. */
  root: string;
  /** Where generated asset files (the UI manifest) are written. */
  workDir: string;
  /** A built web UI; defaults to `<root>/ui/dist`, embedded only when it exists. */
  uiDist?: string;
}

/** Build-time hashes and sizes of the native assets, so the runtime finds their extracted copies without reading them. */
export const NATIVE_MANIFEST_KEY = 'native.json';

export function collectAssets(opts: CollectOptions): AssetMap {
  const assets: AssetMap = { ...requiredAssets(opts.root) };
  const native: Record<string, { sha256: string; size: number }> = {};
  for (const [key, file] of Object.entries(assets)) {
    const bytes = fs.readFileSync(file);
    // The same name sync/native.ts gives the extracted copy: 16 hex digits of the SHA-256.
    native[key] = { sha256: createHash('sha256').update(bytes).digest('hex').slice(0, 16), size: bytes.length };
  }
  const nativeFile = path.join(opts.workDir, 'native.json');
  fs.writeFileSync(nativeFile, JSON.stringify(native) + '\n');
  assets[NATIVE_MANIFEST_KEY] = nativeFile;
  const uiDist = opts.uiDist ?? path.join(opts.root, 'ui', 'dist');
  if (fs.existsSync(uiDist)) Object.assign(assets, uiAssets(uiDist, opts.workDir).assets);
  for (const { key, file } of OPTIONAL_ASSETS) {
    const abs = path.join(opts.root, file);
    if (fs.existsSync(abs)) assets[key] = abs;
  }
  return assets;
}
