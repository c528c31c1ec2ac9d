/**
 * @module Loads the two native pieces of a replica: the better-sqlite3 addon and the Automerge wasm.
 *
 * Unpackaged (tsx, vitest, node on the bundle) they come from node_modules. Inside the single
 * executable they are SEA assets: the addon is written once to a cache directory named by its
 * hash and loaded with `process.dlopen` (a `.node` file cannot be loaded from memory); the wasm is
 * extracted the same way and read from there. Their hashes are known at build time (`native.json`),
 * so once extracted neither asset is read from the executable again. See docs/packaging.md.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import * as A from '@automerge/automerge/slim';

interface SeaModule {
  isSea(): boolean;
  getAsset(key: string): ArrayBuffer;
}

let sea: SeaModule | null | undefined;
function seaModule(): SeaModule | null {
  if (sea === undefined) {
    try {
      // node:sea exists from Node 20.12; outside a SEA isSea() is false.
      const req = createRequire(typeof __filename === 'string' ? __filename : import.meta.url);
      const m = req('node:sea') as SeaModule;
      sea = m.isSea() ? m : null;
    } catch {
      sea = null;
    }
  }
  return sea;
}

export function isPackaged(): boolean {
  return seaModule() !== null;
}

/** Bytes of a file shipped in the executable, or null when running unpackaged. */
export function packagedAsset(key: string): Buffer | null {
  const s = seaModule();
  if (!s) return null;
  try {
    return Buffer.from(s.getAsset(key));
  } catch {
    return null;
  }
}

/** Build-time facts about the native assets (`native.json`, written by build/sea/assets.ts). */
interface NativeEntry {
  sha256: string;
  size: number;
}
let nativeManifest: Record<string, NativeEntry> | null | undefined;
function nativeEntry(name: string): NativeEntry | undefined {
  if (nativeManifest === undefined) {
    const b = packagedAsset('native.json');
    try {
      nativeManifest = b ? (JSON.parse(b.toString('utf8')) as Record<string, NativeEntry>) : null;
    } catch {
      nativeManifest = null;
    }
  }
  return nativeManifest?.[name];
}

function cacheDir(): string {
  const base =
    process.env.OUTPOST_CACHE_DIR ??
    (process.env.XDG_CACHE_HOME
      ? path.join(process.env.XDG_CACHE_HOME, 'outpost')
      : path.join(os.homedir(), '.cache', 'outpost'));
  return base;
}

function cacheCandidates(): string[] {
  return [cacheDir(), path.join(os.tmpdir(), `outpost-cache-${process.getuid?.() ?? 0}`)];
}

/** The asset's content hash as named in the cache: the first 16 hex digits of its SHA-256. */
function assetHash(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}

/**
 * Path of a packaged asset extracted to the cache, or null when running unpackaged. With the
 * build-time hash (`native.json`) an already extracted copy is used without reading the asset:
 * reading it maps its pages of the executable into memory for the life of the process (~6 MB
 * for the SQLite addon and the Automerge wasm, measured on the edge agent).
 */
function extractedAsset(name: string): string | null {
  const entry = nativeEntry(name);
  if (entry) {
    for (const base of cacheCandidates()) {
      const file = path.join(base, entry.sha256, name);
      try {
        if (fs.statSync(file).size === entry.size) return file;
      } catch {
        /* not extracted there yet */
      }
    }
  }
  const bytes = packagedAsset(name);
  return bytes ? extractAsset(name, bytes) : null;
}

/** Writes an asset once to `<cache>/<sha256>/<name>` (atomically) and returns the path. */
function extractAsset(name: string, bytes: Buffer): string {
  const hash = assetHash(bytes);
  const candidates = cacheCandidates();
  let lastErr: unknown;
  for (const base of candidates) {
    const dir = path.join(base, hash);
    const file = path.join(dir, name);
    try {
      if (fs.existsSync(file) && fs.statSync(file).size === bytes.length) return file;
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, bytes, { mode: 0o500 });
      fs.renameSync(tmp, file);
      return file;
    } catch (err) {
      lastErr = err;
    }
  }
  throw new Error(`cannot extract ${name} to a cache directory (set OUTPOST_CACHE_DIR to a writable directory)`, {
    cause: lastErr,
  });
}

let nativeBinding: unknown;
function sqliteBinding(): unknown {
  if (nativeBinding !== undefined) return nativeBinding;
  const file = extractedAsset('better_sqlite3.node');
  if (!file) {
    nativeBinding = null;
    return null;
  }
  const mod = { exports: {} as unknown };
  try {
    process.dlopen(mod, file);
  } catch (cause) {
    throw new Error(
      `cannot load the SQLite addon ${file}: the directory may be on a noexec mount (set OUTPOST_CACHE_DIR to a directory where programs may run), or glibc is older than 2.34`,
      { cause },
    );
  }
  nativeBinding = mod.exports;
  return nativeBinding;
}

export type SqliteDatabase = Database.Database;

export function openSqlite(file: string, opts: { readonly?: boolean } = {}): SqliteDatabase {
  const binding = sqliteBinding();
  const options: Database.Options = { readonly: opts.readonly ?? false };
  if (binding) (options as { nativeBinding?: unknown }).nativeBinding = binding;
  return new Database(file, options);
}

let automergeReady: Promise<void> | undefined;

/** Must be awaited once before any Automerge call. Idempotent. */
export function initAutomerge(): Promise<void> {
  if (A.isWasmInitialized()) return Promise.resolve();
  automergeReady ??= (async () => {
    // Packaged: read from the extracted copy (see extractedAsset), not from the executable.
    let file = extractedAsset('automerge.wasm');
    if (!file) {
      const req = createRequire(typeof __filename === 'string' ? __filename : import.meta.url);
      file = req.resolve('@automerge/automerge/automerge.wasm');
    }
    await A.initializeWasm(fs.readFileSync(file));
  })();
  return automergeReady;
}
