/**
 * @module Acceptance checks of `Driver.execInteractive` (the contract in driver.ts), run by each
 * driver's test against a workload it already runs. The workload's first container must have
 * `sh` on its PATH and the env var `GREETING=hello`.
 *
 * @example
 * it('execInteractive', () => checkInteractiveExec(driver, 'shell'));
 */
import { expect } from 'vitest';
import { waitFor } from '../../test/helpers.js';
import type { Driver, InteractiveExec } from './driver.js';

function collect(p: InteractiveExec): { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  p.stdout.on('data', (c: Buffer | string) => (out += c.toString()));
  p.stderr.on('data', (c: Buffer | string) => (err += c.toString()));
  return { out: () => out, err: () => err };
}

export async function checkInteractiveExec(driver: Driver, workload: string): Promise<void> {
  expect(driver.execInteractive, `the ${driver.name} driver implements execInteractive`).toBeTypeOf('function');
  const exec = driver.execInteractive!.bind(driver);

  // A shell reads commands one at a time: each answer arrives before the next line is sent.
  const sh = await exec(workload, ['sh'], {});
  const shOut = collect(sh);
  sh.stdin.write('echo "$GREETING-$((6*7))"\n');
  await waitFor(() => shOut.out().includes('hello-42\n'), { what: 'the first answer on stdout', interval: 25 });
  sh.stdin.write('echo oops >&2\n');
  await waitFor(() => shOut.err().includes('oops\n'), { what: 'stderr', interval: 25 });
  sh.stdin.write('exit 7\n');
  expect(await sh.exit).toBe(7);

  // End of stdin is end of input; all output is in before exit settles.
  const count = await exec(
    workload,
    ['sh', '-c', 'n=0; while read l; do n=$((n+1)); done; echo "lines=$n"; echo done >&2'],
    {},
  );
  const countOut = collect(count);
  count.stdin.end('a\nb\nc\n');
  expect(await count.exit).toBe(0);
  expect(countOut.out()).toBe('lines=3\n');
  expect(countOut.err()).toBe('done\n');

  // Aborting ends a command that would otherwise wait for input forever.
  const ctl = new AbortController();
  const cat = await exec(workload, ['cat'], { signal: ctl.signal });
  collect(cat);
  ctl.abort();
  expect(
    await cat.exit.then(
      () => 'settled',
      () => 'settled',
    ),
  ).toBe('settled');

  await expect(exec('no-such-workload', ['sh'], {})).rejects.toThrow();
}
