/**
 * `execInteractive` of the podman driver (`podman exec -i [-t]`) on a real pod: the shared
 * acceptance checks, and a real terminal with `tty`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkInteractiveExec } from '../../../test/fixtures/exec-interactive.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver } from '../driver.js';
import { pod, podmanTestEnv, SKIP_PODMAN, TEST_IMAGE, unit, type PodmanTestEnv } from './harness.js';
import { createPodmanDriver } from './index.js';

describe.skipIf(SKIP_PODMAN)('podman driver execInteractive', () => {
  let env: PodmanTestEnv;
  let driver: Driver;
  let name: string;

  beforeAll(async () => {
    env = await podmanTestEnv();
    driver = createPodmanDriver({ dataDir: env.dir });
    await driver.start();
    name = `shell-${env.suffix}`;
    await driver.apply(
      unit(name, 1, [
        pod(name, {
          containers: [
            { name: 'main', image: TEST_IMAGE, command: ['sleep', '600'], env: [{ name: 'GREETING', value: 'hello' }] },
          ],
        }),
      ]),
    );
    await waitFor(async () => (await driver.list()).find((w) => w.name === name)?.phase === 'Ready', {
      what: `${name} Ready`,
    });
  }, 60_000);

  afterAll(async () => {
    await driver?.close();
    await env?.cleanup();
  }, 60_000);

  it('passes the interactive exec acceptance checks', async () => {
    await checkInteractiveExec(driver, name);
  });

  it('gives the command a terminal with tty', async () => {
    const p = await driver.execInteractive!(name, ['sh', '-c', 'test -t 0 && echo tty || echo no-tty'], { tty: true });
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    p.stdin.end();
    expect(await p.exit).toBe(0);
    // A terminal turns \n into \r\n on output.
    expect(out).toBe('tty\r\n');
  });
});
