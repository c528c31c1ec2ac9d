/**
 * @module Loads the two native pieces of a replica: the better-sqlite3 addon and the Automerge wasm.
 *
 * Unpackaged (tsx, vitest, node on the bundle) they come from node_modules. Inside the single
 * executable they are SEA assets: the addon is written once to a cache directory named by its
 * hash and loaded with `process.dlopen` (a `.node` file cannot be loaded from memory), the wasm is
 * passed to `initializeWasm` as bytes. See docs/packaging.md.
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

function cacheDir(): string {
  const base = process.env.OUTPOST_CACHE_DIR ?? (process.env.XDG_CACHE_HOME ? path.join(process.env.XDG_CACHE_HOME, 'outpost') : path.join(os.homedir(), '.cache', 'outpost'));
  return base;
}

/** Writes an asset once to `<cache>/<sha256>/<name>` (atomically) and returns the path. */
function extractAsset(name: string, bytes: Buffer): string {
  const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const candidates = [cacheDir(), path.join(os.tmpdir(), `outpost-cache-${process.getuid?.() ?? 0}`)];
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
  throw new Error(`cannot extract ${name} to a cache directory (set OUTPOST_CACHE_DIR to a writable directory)`, { cause: lastErr });
}

let nativeBinding: unknown;
function sqliteBinding(): unknown {
  if (nativeBinding !== undefined) return nativeBinding;
  const bytes = packagedAsset('better_sqlite3.node');
  if (!bytes) {
    nativeBinding = null;
    return null;
  }
  const file = extractAsset('better_sqlite3.node', bytes);
  const mod = { exports: {} as unknown };
  try {
    process.dlopen(mod, file);
  } catch (cause) {
    throw new Error(`cannot load the SQLite addon ${file}: the directory may be on a noexec mount (set OUTPOST_CACHE_DIR to a directory where programs may run), or glibc is older than 2.34`, { cause });
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
    let bytes = packagedAsset('automerge.wasm');
    if (!bytes) {
      const req = createRequire(typeof __filename === 'string' ? __filename : import.meta.url);
      bytes = fs.readFileSync(req.resolve('@automerge/automerge/automerge.wasm'));
    }
    await A.initializeWasm(bytes);
  })();
  return automergeReady;
}
