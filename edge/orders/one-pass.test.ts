import { describe, expect, it } from 'vitest';
import { OnePassAtATime, PassStopped } from './one-pass.js';

describe('OnePassAtATime', () => {
  it('runs one pass at a time, and one more for the checks that came during it', async () => {
    let passes = 0;
    let release!: () => void;
    const loop = new OnePassAtATime(
      async () => {
        passes++;
        if (passes === 1) await new Promise<void>((r) => (release = r));
      },
      (err) => {
        throw err;
      },
    );
    loop.check();
    loop.check();
    loop.check();
    expect(passes).toBe(1);
    release();
    await until(() => passes === 2);
    await new Promise((r) => setImmediate(r));
    expect(passes).toBe(2);
    await loop.stop();
  });

  it('stop() leaves a pass waiting on what never settles (a fetch of a blob), reporting no failure', async () => {
    const failures: unknown[] = [];
    let after = false;
    const loop = new OnePassAtATime(
      async () => {
        await loop.untilStopped(new Promise<void>(() => undefined));
        after = true;
      },
      (err) => failures.push(err),
    );
    loop.check();
    await new Promise((r) => setImmediate(r));
    // Without untilStopped, stop() awaits the running pass forever.
    await expect(Promise.race([loop.stop().then(() => 'stopped'), timeout(5_000)])).resolves.toBe('stopped');
    expect(after).toBe(false);
    expect(failures).toEqual([]);
    await expect(loop.untilStopped(Promise.resolve(1))).rejects.toBeInstanceOf(PassStopped);
  });

  it('passes on what the awaited promise gives while running', async () => {
    let got: unknown;
    const loop = new OnePassAtATime(
      async () => {
        got = await loop.untilStopped(Promise.resolve(42));
        await loop.untilStopped(Promise.reject(new Error('no room'))).catch((e: Error) => (got = [got, e.message]));
      },
      () => undefined,
    );
    loop.check();
    await until(() => Array.isArray(got));
    expect(got).toEqual([42, 'no room']);
    await loop.stop();
  });
});

async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !ok(); i++) await new Promise((r) => setImmediate(r));
  expect(ok()).toBe(true);
}

const timeout = (ms: number) => new Promise<string>((r) => setTimeout(() => r('timed out'), ms).unref());
