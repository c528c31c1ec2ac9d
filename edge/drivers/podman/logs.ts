/**
 * @module `podman logs` as an async iterable of lines. Podman writes what the container wrote to
 * stdout on its stdout and the container's stderr on its stderr; both are merged in arrival order.
 * Breaking out of the loop or aborting the signal kills the podman process.
 */
import { createInterface } from 'node:readline';
import type { Podman } from './cli.js';
import { podmanError } from './cli.js';
import { DriverError } from '../driver.js';

export async function* podmanLogLines(
  podman: Podman,
  containerId: string,
  opts: { tail?: number; follow?: boolean; signal?: AbortSignal; sinceMs?: number; timestamps?: boolean },
): AsyncGenerator<string> {
  const args = ['logs'];
  if (opts.sinceMs !== undefined) args.push('--since', new Date(opts.sinceMs).toISOString());
  if (opts.timestamps) args.push('--timestamps');
  if (opts.tail !== undefined) args.push('--tail', String(Math.max(0, Math.floor(opts.tail))));
  if (opts.follow) args.push('--follow');
  args.push(containerId);
  if (opts.signal?.aborted) return;

  const child = podman.spawn(args);
  child.stdin?.end();
  const queue: string[] = [];
  let wake: (() => void) | undefined;
  let open = 2;
  let stderrTail = '';
  let failure: Error | undefined;
  const notify = (): void => {
    wake?.();
    wake = undefined;
  };
  for (const [stream, isErr] of [
    [child.stdout!, false],
    [child.stderr!, true],
  ] as const) {
    const rl = createInterface({ input: stream, crlfDelay: Infinity });
    rl.on('line', (line) => {
      if (isErr && line.startsWith('Error:')) stderrTail = line;
      else queue.push(line);
      notify();
    });
    rl.on('close', () => {
      open--;
      notify();
    });
  }
  let exitCode: number | null = null;
  const exited = new Promise<void>((resolve) =>
    child.on('close', (code) => {
      exitCode = code;
      resolve();
    }),
  );
  child.on('error', (e) => {
    failure = new DriverError(`running ${podman.bin} logs`, { cause: e });
    notify();
  });
  const onAbort = (): void => {
    child.kill('SIGTERM');
    notify();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  try {
    for (;;) {
      while (queue.length > 0) {
        if (opts.signal?.aborted) return;
        yield queue.shift()!;
      }
      if (failure) throw failure;
      if (open === 0 || opts.signal?.aborted) break;
      await new Promise<void>((r) => (wake = r));
    }
    await exited;
    if (exitCode !== 0 && !opts.signal?.aborted && stderrTail)
      throw new DriverError(`podman logs ${containerId}: ${podmanError(stderrTail)}`);
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    if (child.exitCode === null) child.kill('SIGTERM');
  }
}
