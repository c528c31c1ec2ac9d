/**
 * The agent's memory reclaim (edge/memory-reclaim.ts) in a process of its own, as `outpost edge` runs
 * it: garbage promoted to V8's old generation, the burst over, and the heap given back by one
 * collection, without anyone calling gc().
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RECLAIM_GROWTH_BYTES, RECLAIM_QUIET_BYTES, shouldReclaim } from './memory-reclaim.js';

const MB = 1024 * 1024;

describe('memory reclaim', () => {
  it('collects once the heap grew past the threshold and stopped growing, not during a burst', () => {
    expect(shouldReclaim(10 * MB, 10 * MB + RECLAIM_GROWTH_BYTES, 10 * MB + RECLAIM_GROWTH_BYTES)).toBe(true);
    // Still growing: wait for the burst to end.
    expect(shouldReclaim(10 * MB, 11 * MB, 10 * MB + RECLAIM_GROWTH_BYTES + RECLAIM_QUIET_BYTES)).toBe(false);
    // Grown too little since the last collection.
    expect(shouldReclaim(10 * MB, 11 * MB, 11 * MB)).toBe(false);
    // The first check after the start: everything since the start counts.
    expect(shouldReclaim(0, 8 * MB, 8 * MB)).toBe(true);
  });

  it('gives back the garbage of a burst in a process of its own', () => {
    const script = `
      const v8 = await import('node:v8');
      const { startMemoryReclaim } = await import(${JSON.stringify(path.resolve('edge/memory-reclaim.ts'))});
      const used = () => v8.getHeapStatistics().used_heap_size;
      const reclaim = startMemoryReclaim();
      // A burst: 30 MB of objects kept long enough to reach the old generation, then dropped.
      let keep = [];
      for (let i = 0; i < 30; i++) { keep.push(Array.from({ length: 16_000 }, (_, j) => ({ i, j, s: 'x' + j }))); await new Promise((r) => setImmediate(r)); }
      const peak = used();
      keep = null;
      const deadline = Date.now() + 20_000;
      while (reclaim.collections() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      reclaim.stop();
      console.log(JSON.stringify({ collections: reclaim.collections(), peak, after: used() }));
    `;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, OUTPOST_LOG_LEVEL: 'warn' },
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { collections: number; peak: number; after: number };
    expect(out.collections).toBeGreaterThanOrEqual(1);
    expect(out.peak - out.after).toBeGreaterThan(20 * MB);
  });
});
