/**
 * `execInteractive` of the process driver on a real supervised workload: the shared acceptance
 * checks, plus what only a host process shows: ending the session ends what the command started.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkInteractiveExec } from '../../../test/fixtures/exec-interactive.js';
import type { Driver } from '../driver.js';
import { createProcessDriver } from './index.js';
import { unit } from '../../../test/fixtures/process-workloads.js';

let dir: string;
let driver: Driver;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'outpost-process-it-'));
  driver = createProcessDriver({ dataDir: dir, pollMs: 100 });
  await driver.start();
  await driver.apply(
    unit('shell', [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'shell' },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'main', command: ['sleep', '600'], env: [{ name: 'GREETING', value: 'hello' }] }],
        },
      },
    ]),
  );
});

afterAll(async () => {
  await driver?.remove('shell').catch(() => undefined);
  await driver?.close();
  await rm(dir, { recursive: true, force: true });
});

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('process driver execInteractive', () => {
  it('passes the interactive exec acceptance checks', async () => {
    await checkInteractiveExec(driver, 'shell');
  });

  it('ending the session ends the processes the command started, not just the command', async () => {
    const ctl = new AbortController();
    const p = await driver.execInteractive!('shell', ['sh', '-c', 'sleep 600 & echo $!; wait'], { signal: ctl.signal });
    const pid = await new Promise<number>((resolve) =>
      p.stdout.once('data', (c: Buffer) => resolve(Number(c.toString().trim()))),
    );
    expect(running(pid)).toBe(true);
    ctl.abort();
    expect(await p.exit).toBe(137);
    // SIGKILL to the group is delivered before kill() returns; only reaping by init may lag.
    const deadline = Date.now() + 10_000;
    while (running(pid) && !(await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')).match(/^\d+ \(.*\) Z/)) {
      if (Date.now() > deadline) throw new Error(`sleep ${pid} outlived the session`);
      await new Promise((r) => setTimeout(r, 25));
    }
  });

  it('runs without a terminal even when one is asked for (no pty without a native module)', async () => {
    const p = await driver.execInteractive!('shell', ['sh', '-c', 'test -t 0 && echo tty || echo no-tty'], {
      tty: true,
    });
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    p.stdin.end();
    expect(await p.exit).toBe(0);
    expect(out).toBe('no-tty\n');
  });
});
