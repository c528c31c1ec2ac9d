/**
 * The V8 flags every long-running role sets as it starts (main/v8-flags.ts), measured in a process
 * of its own, as `outpost hub` and `outpost edge` run them: a test worker's heap holds what earlier
 * files left (the unit and hub tiers run file after file in one process), which moves V8's limits.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/** Full collections while 512 MiB pass through 16 KiB ArrayBuffers that die at once (as TLS reads do), before and after applyV8Flags. */
const SCRIPT = `
  const { constants, PerformanceObserver } = await import('node:perf_hooks');
  const { applyV8Flags } = await import(${JSON.stringify(path.resolve('main/v8-flags.ts'))});
  async function majorCollectionsOverChurn() {
    let major = 0;
    const obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
    });
    obs.observe({ entryTypes: ['gc'] });
    let keep;
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
  const before = await majorCollectionsOverChurn();
  applyV8Flags();
  const after = await majorCollectionsOverChurn();
  console.log(JSON.stringify({ before, after }));
`;

describe('the V8 flags every role runs with', () => {
  it('short-lived buffers outside the heap no longer force a full collection per 64 MiB', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const { before, after } = JSON.parse(r.stdout.trim().split('\n').pop()!) as { before: number; after: number };
    expect(before).toBeGreaterThanOrEqual(4);
    expect(after).toBeLessThanOrEqual(Math.floor(before / 2));
  });
});
