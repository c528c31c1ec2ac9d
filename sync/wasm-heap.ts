/**
 * @module Keeps free room at the top of Automerge's wasm heap, so the heap grows in a few large
 * steps instead of thousands of small ones.
 *
 * Why: Automerge's allocator (dlmalloc in wasm) grows the wasm memory 64 KiB at a time when its
 * free top runs out, and every `memory.grow` hands V8 a new ArrayBuffer the size of the WHOLE
 * memory, which V8 counts as fresh external memory and answers with garbage-collection work. With
 * few documents loaded that is cheap; with 20,000 loaded (a hub of 10,000 edges, ~210 MB of wasm)
 * a steady stream of small changes grew the memory every few operations and each operation paid
 * for it: `getLastLocalChange` 21 us -> 558 us, `commit` 67 us -> 241 us (micro-benchmark in
 * docs/benchmarks.md, "Fourth round"). That is also why FACTS.md saw loading "slow down sharply
 * once wasm memory passes ~60 MB".
 *
 * How: after an Automerge operation, `keepWasmHeadroom()` compares the memory's size with the
 * last it saw (one property read). When the memory grew, it allocates one block of a quarter of
 * the memory (at least 8 MiB) and frees it at once: the allocator takes it from a single grow and
 * keeps it as free top (wasm memory is never given back, so nothing trims it), and the next
 * thousands of allocations are served from it. Untouched wasm pages are not resident: the
 * reserve costs address space, not RSS.
 *
 * The wasm-bindgen glue's `initSync()` returns the already-initialized instance's exports
 * (`memory`, `__wbindgen_malloc`, `__wbindgen_free`); it is imported by path from the same file
 * Automerge's own entry point uses (one module instance; sync/wasm-heap.test.ts checks that and
 * that a reserve really stops the small grows). Automerge is pinned exactly in package.json.
 */
// @ts-expect-error -- the glue's d.ts sits elsewhere; typed through WasmExports below.
import { initSync } from '../node_modules/@automerge/automerge/dist/mjs/wasm_bindgen_output/web/automerge_wasm.js';
import * as A from '@automerge/automerge/slim';

interface WasmExports {
  /** The wasm memory (a WebAssembly.Memory; only its buffer is read). */
  memory: { readonly buffer: ArrayBuffer };
  __wbindgen_malloc(size: number, align: number): number;
  __wbindgen_free(ptr: number, size: number, align: number): void;
}

const MIN_RESERVE = 8 * 1024 * 1024;
const MAX_RESERVE = 256 * 1024 * 1024;

let wasm: WasmExports | undefined;
let seenBytes = 0;
const counters = { grows: 0, reserves: 0, reservedBytes: 0 };

function exportsOf(): WasmExports | undefined {
  if (wasm) return wasm;
  if (!A.isWasmInitialized()) return undefined;
  // Initialized already: initSync returns the live instance's exports without instantiating.
  const ex = (initSync as () => Partial<WasmExports>)();
  if (
    !(ex.memory?.buffer instanceof ArrayBuffer) ||
    typeof ex.__wbindgen_malloc !== 'function' ||
    typeof ex.__wbindgen_free !== 'function'
  ) {
    throw new Error(
      'Automerge wasm exports changed (memory/__wbindgen_malloc/__wbindgen_free): check sync/wasm-heap.ts against the pinned Automerge version',
    );
  }
  wasm = ex as WasmExports;
  return wasm;
}

/**
 * Call after Automerge work. Cheap when the wasm memory did not grow since the last call; when it
 * did, reserves free room for what comes next (see the module comment).
 */
export function keepWasmHeadroom(): void {
  const ex = exportsOf();
  if (!ex) return;
  const bytes = ex.memory.buffer.byteLength;
  if (bytes === seenBytes) return;
  if (seenBytes !== 0) counters.grows++;
  const reserve = Math.min(MAX_RESERVE, Math.max(MIN_RESERVE, Math.floor(bytes / 4)));
  const ptr = ex.__wbindgen_malloc(reserve, 8);
  ex.__wbindgen_free(ptr, reserve, 8);
  counters.reserves++;
  counters.reservedBytes += reserve;
  seenBytes = ex.memory.buffer.byteLength;
}

/** The wasm memory's size and how often this module saw it grow and reserved room (metrics, tests). */
export function wasmHeapStats(): { memoryBytes: number; grows: number; reserves: number; reservedBytes: number } {
  const ex = exportsOf();
  return { memoryBytes: ex ? ex.memory.buffer.byteLength : 0, ...counters };
}
