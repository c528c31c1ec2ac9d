/**
 * @module Sync states kept in Automerge's wasm memory for the life of a session.
 *
 * Automerge's public sync API takes and returns sync states as JS objects: every
 * `generateSyncMessage` and `receiveSyncMessage` converts the state into wasm and back (heads
 * hex-decoded and re-encoded, bloom filters copied, arrays built through the JS bridge). In a
 * 1,000-edge fan-out that conversion was ~20 % of the hub's CPU and of the simulated edges'
 * (profiles in docs/benchmarks.md). A session makes thousands of these calls, so it keeps the
 * wasm object and calls the document's backend directly. The JS view of a document is moved
 * forward only when a received message really added changes (`loadIncremental` of nothing applies
 * the patches the backend has accumulated since the view was built); an acknowledgement, most
 * messages, computes no patch at all.
 *
 * `ApiHandler` is not among Automerge's package exports, so it is imported by path. The
 * Automerge version is pinned exactly in package.json, and sync/wasm-sync.test.ts fails if an
 * upgrade changes anything this relies on (the handler being the one `initializeWasm` set up, the
 * view moving forward, sync states round-tripping).
 */
import * as A from '@automerge/automerge/slim';
import type { API, SyncState as WasmSyncState } from '../node_modules/@automerge/automerge/dist/wasm_types.js';
// @ts-expect-error -- the package's d.ts files sit in dist/, its code in dist/mjs/ (typed through API below).
import { ApiHandler as untypedHandler } from '../node_modules/@automerge/automerge/dist/mjs/low_level.js';

const api = untypedHandler as API;
const EMPTY = new Uint8Array(0);

/** A sync state in wasm memory: mutated in place by `generate` and `receive`, freed by the GC. */
export type SyncHandle = WasmSyncState;

export function newSyncState(): SyncHandle {
  return api.initSyncState();
}

/** Decodes a persisted sync state (`encodeSyncState` bytes, the same format as Automerge's public API). */
export function decodeSyncState(bytes: Uint8Array): SyncHandle {
  return api.decodeSyncState(bytes);
}

export function encodeSyncState(state: SyncHandle): Uint8Array {
  return api.encodeSyncState(state);
}

/** A sync state built as a JS object (Automerge's public shape) moved into wasm. */
export function importSyncState(js: A.SyncState): SyncHandle {
  return api.importSyncState(js);
}

/** The heads the peer last told us it has (undefined before its first message on this connection). */
export function theirHeads(state: SyncHandle): A.Heads | undefined {
  return (api.exportSyncState(state).theirHeads as A.Heads | null) ?? undefined;
}

/** The next message for the peer, or null when it has everything it asked for. Updates `state`. */
export function generate(doc: A.Doc<unknown>, state: SyncHandle): Uint8Array | null {
  return A.getBackend(doc).generateSyncMessage(state);
}

/**
 * Applies a peer's message to `doc` and `state` (both in place in wasm). Returns the document's
 * current view: `doc` itself when the message added no change, otherwise a new view (and `doc` is
 * then outdated, as after any Automerge change).
 */
export function receive<T>(doc: A.Doc<T>, state: SyncHandle, message: Uint8Array): A.Doc<T> {
  const backend = A.getBackend(doc);
  const before = backend.getHeads();
  backend.receiveSyncMessage(state, message);
  return sameHeads(before, backend.getHeads()) ? doc : catchUp(doc);
}

/**
 * Documents loaded by `loadLazy` whose JS view was never built (an empty placeholder object):
 * `catchUp` builds their view whole instead of patching it up from nothing.
 */
const placeholders = new WeakSet<object>();

/**
 * Loads a saved document without building its JS view (the view is an empty placeholder until
 * `catchUp`). For documents that are loaded to be written through their backend or to sync
 * (heads, messages, saves): building the view is a quarter of a load and ~5 KiB of JS heap per
 * document that nobody may read (a hub's spec documents). Only the store may hold the returned
 * object: reading it shows `{}`, and it must not be given to `A.change`.
 */
export function loadLazy<T>(bytes: Uint8Array): A.Doc<T> {
  const doc = A.init<T>();
  A.getBackend(doc).loadIncremental(bytes);
  placeholders.add(doc as object);
  return doc;
}

/**
 * Brings a document's JS view up to date with its backend (changed by `receive` or by direct
 * backend writes): `loadIncremental` of nothing applies the patches accumulated since the view was
 * built; a `loadLazy` placeholder gets its view built whole (`materialize`, as `A.load` does: a
 * tenth of the cost of patching it up from nothing). The returned view replaces `doc`, which is
 * then outdated.
 */
export function catchUp<T>(doc: A.Doc<T>): A.Doc<T> {
  if (placeholders.has(doc as object)) {
    placeholders.delete(doc as object);
    const handle = A.getBackend(doc as A.Doc<unknown>);
    // The metadata A.load gives materialize: the view's state (handle, current heads).
    return handle.materialize('/', undefined, {
      handle,
      heads: undefined,
      freeze: false,
      patchCallback: undefined,
    }) as A.Doc<T>;
  }
  return A.loadIncremental(doc, EMPTY);
}

/**
 * Equal sets of heads (order differs between replicas). Plain loops, no `Array.every`: this runs
 * for every message (docs/benchmarks.md, a V8 deoptimizer crash with `every` hot here).
 */
export function sameHeads(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  if (a.length === 1) return a[0] === b[0];
  const s = new Set(a);
  for (const h of b) if (!s.has(h)) return false;
  return true;
}
