import * as A from '@automerge/automerge/slim';
import { beforeAll, describe, expect, it } from 'vitest';
import { initAutomerge } from './native.js';
import { keepWasmHeadroom, wasmHeapStats } from './wasm-heap.js';

/** Loads `n` small documents and keeps them (they hold wasm memory until freed). */
function loadMany(n: number): A.Doc<unknown>[] {
  const bytes = A.save(A.from({ items: { a: 1, b: 'two' }, note: 'x'.repeat(200) }));
  return Array.from({ length: n }, () => A.load(bytes));
}

describe('Automerge wasm heap headroom (sync/wasm-heap.ts)', () => {
  beforeAll(() => initAutomerge());

  it('reads the memory Automerge allocates from', () => {
    const before = wasmHeapStats().memoryBytes;
    expect(before).toBeGreaterThan(0);
    // Far more than any free room left: the memory Automerge uses must grow, and this is it.
    const docs = loadMany(3000);
    expect(wasmHeapStats().memoryBytes).toBeGreaterThan(before);
    for (const d of docs) A.free(d);
  });

  it('reserves free room once the memory grew, so the next allocations do not grow it', () => {
    // Use up the free room (documents freed earlier left some): load until the memory grows, so
    // the allocator's free top is nearly empty. Then let the module reserve (at least 8 MiB).
    const pinned: A.Doc<unknown>[] = [];
    const start = wasmHeapStats().memoryBytes;
    while (wasmHeapStats().memoryBytes === start) pinned.push(...loadMany(50));
    keepWasmHeadroom();
    const s = wasmHeapStats();
    expect(s.reserves).toBeGreaterThan(0);
    const after = s.memoryBytes;
    // ~1 MiB of new documents fits in the reserve: not one grow (dlmalloc grows 64 KiB at a time,
    // so without the reserve this would have grown the memory many times).
    const more = loadMany(60);
    expect(wasmHeapStats().memoryBytes).toBe(after);
    keepWasmHeadroom();
    expect(wasmHeapStats().reserves).toBe(s.reserves);
    for (const d of [...pinned, ...more]) A.free(d);
  });
});
