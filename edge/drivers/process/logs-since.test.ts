/**
 * `logs --since` and `--timestamps` on the process driver: a real process writes its log, the real
 * supervisor keeps the time index (log-times.ts), and reading filters and stamps by it.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/helpers.js';
import type { Driver, LogOptions } from '../driver.js';
import { createProcessDriver } from './index.js';
import { killAll, shWorkload } from '../../../test/fixtures/process-workloads.js';

const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})) (.*)$/;

describe('process driver logs --since / --timestamps', () => {
  let dataDir: string;
  let d: Driver;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'outpost-logs-since-'));
    d = createProcessDriver({ dataDir, pollMs: 100, backoffBaseMs: 200 });
    await d.start();
  });

  afterEach(async () => {
    await d.close().catch(() => undefined);
    await killAll(dataDir);
    await rm(dataDir, { recursive: true, force: true });
  });

  const read = async (opts: Omit<LogOptions, 'signal'>): Promise<string[]> => {
    const out: string[] = [];
    for await (const l of d.logs('two', opts)) out.push(l);
    return out;
  };

  it('stamps each line with when it was written and leaves out lines before the bound', async () => {
    const go = join(dataDir, 'go');
    await d.apply(
      shWorkload(
        'two',
        `echo early; echo second; while [ ! -f ${go} ]; do sleep 0.05; done; echo late; exec sleep 1000`,
      ),
    );
    const times = join(dataDir, 'workloads', 'two', 'logs', 'main.log.times');
    // The supervisor indexed the first lines (the index exists and covers them).
    await waitFor(async () => (await readFile(times, 'utf8').catch(() => '')) !== '', {
      what: 'the time index of the first lines',
    });
    const before = await read({ timestamps: true });
    expect(before).toHaveLength(2);
    const early = before.map((l) => RFC3339.exec(l));
    expect(early.map((m) => m?.[2])).toEqual(['early', 'second']);
    const earlyMs = Date.parse(early[0]![1]);
    expect(earlyMs).toBeLessThanOrEqual(Date.now());

    await waitFor(async () => Date.now() > earlyMs + 5, { what: 'the clock to pass the first lines' });
    await writeFile(go, '');
    await waitFor(async () => (await read({})).includes('late'), { what: 'the late line' });

    // Plain output is what the process wrote, unchanged.
    expect(await read({})).toEqual(['early', 'second', 'late']);
    expect(await read({ sinceMs: earlyMs + 1 })).toEqual(['late']);
    expect(await read({ sinceMs: earlyMs })).toEqual(['early', 'second', 'late']);
    expect(await read({ sinceMs: Date.now() + 60_000 })).toEqual([]);
    const stamped = (await read({ timestamps: true, tail: 1 })).map((l) => RFC3339.exec(l));
    expect(stamped.map((m) => m?.[2])).toEqual(['late']);
    expect(Date.parse(stamped[0]![1])).toBeGreaterThan(earlyMs);
    expect(await read({ sinceMs: earlyMs + 1, timestamps: true, tail: 5 })).toEqual([`${stamped[0]![1]} late`]);
  });
});
