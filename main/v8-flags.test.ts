import { constants, PerformanceObserver } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { applyV8Flags } from './v8-flags.js';

/** Full collections while 512 MiB pass through 16 KiB ArrayBuffers that die at once (as TLS reads do). */
async function majorCollectionsOverChurn(): Promise<number> {
  let major = 0;
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      if ((e as unknown as { detail: { kind: number } }).detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
  });
  obs.observe({ entryTypes: ['gc'] });
  let keep: Uint8Array | undefined;
  for (let i = 0; i < 32_768; i++) {
    keep = new Uint8Array(new ArrayBuffer(16_384));
    keep[0] = i;
    // Let the collector's tasks run, as an event loop between socket reads does.
    if (i % 256 === 0) await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setTimeout(r, 50));
  obs.disconnect();
  return major;
}

describe('the V8 flags every role runs with', () => {
  it('short-lived buffers outside the heap no longer force a full collection per 64 MiB', async () => {
    // This test file runs in a process of its own (vitest isolates files): the flag stays with it.
    const before = await majorCollectionsOverChurn();
    applyV8Flags();
    const after = await majorCollectionsOverChurn();
    expect(before).toBeGreaterThanOrEqual(4);
    expect(after).toBeLessThanOrEqual(Math.floor(before / 2));
  });
});
