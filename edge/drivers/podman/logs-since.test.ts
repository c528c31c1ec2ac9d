/**
 * `logs --since` and `--timestamps` on real podman: the driver passes them to `podman logs`, whose
 * times the container runtime recorded as each line came.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/helpers.js';
import type { Driver, LogOptions } from '../driver.js';
import { eachPodmanDriver, pod, SKIP_PODMAN, TEST_IMAGE, unit, type PodmanTestEnv } from './harness.js';

const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})) (.*)$/;

describe.skipIf(SKIP_PODMAN)('podman driver logs --since / --timestamps', () => {
  let env: PodmanTestEnv;
  let driver: Driver;

  eachPodmanDriver((e, d) => {
    env = e;
    driver = d;
  });

  const read = async (opts: Omit<LogOptions, 'signal'>): Promise<string[]> => {
    const out: string[] = [];
    for await (const l of driver.logs('talk', opts)) out.push(l);
    return out;
  };

  it('prefixes RFC 3339 times and leaves out lines before the bound', async () => {
    await driver.apply(
      unit('talk', 1, [
        pod(`talk-${env.suffix}`, {
          containers: [
            {
              name: 'main',
              image: TEST_IMAGE,
              command: ['sh', '-c', 'echo early; while [ ! -f /tmp/go ]; do sleep 0.05; done; echo late; sleep 600'],
            },
          ],
        }),
      ]),
    );
    const first = await waitFor(
      async () => {
        const l = await read({ timestamps: true }).catch(() => []);
        return l.length > 0 ? l : undefined;
      },
      { what: 'the early line, stamped' },
    );
    const m = RFC3339.exec(first[0]);
    expect(m?.[2]).toBe('early');
    const earlyMs = Date.parse(m![1]);
    expect(Number.isFinite(earlyMs)).toBe(true);

    await waitFor(async () => Date.now() > earlyMs + 5, { what: 'the clock to pass the early line' });
    expect((await driver.exec('talk', ['touch', '/tmp/go'], {})).exitCode).toBe(0);
    await waitFor(async () => (await read({})).includes('late'), { what: 'the late line' });

    expect(await read({})).toEqual(['early', 'late']);
    expect(await read({ sinceMs: earlyMs + 1 })).toEqual(['late']);
    const stamped = (await read({ timestamps: true })).map((l) => RFC3339.exec(l));
    expect(stamped.map((x) => x?.[2])).toEqual(['early', 'late']);
    expect(Date.parse(stamped[1]![1])).toBeGreaterThan(earlyMs);
  });
});
