/**
 * @module A child process as an interactive exec session (`Driver.execInteractive`), shared by
 * the drivers whose exec is a local process: the process driver (the command itself) and podman
 * (`podman exec -i`).
 */
import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { DriverError, type InteractiveExec } from './driver.js';

/**
 * Waits until `child` runs, then hands out its pipes. `kill` ends the command when `signal`
 * aborts (the caller knows whether a process group or a client process is the right target).
 * `exit` settles on 'close', which Node emits only after stdout and stderr ended, so whoever
 * awaits it has seen all output.
 */
export async function childSession(
  child: ChildProcess,
  what: string,
  kill: () => void,
  signal?: AbortSignal,
): Promise<InteractiveExec> {
  const exit = new Promise<number>((resolve) => {
    child.once('close', (code, sig) => resolve(code ?? 128 + (sig ? osConstants.signals[sig] : 0)));
  });
  // A command that exits without reading all of its input makes our next write fail with EPIPE;
  // that is the command's choice, not an error of the session.
  child.stdin!.on('error', () => undefined);
  try {
    await Promise.race([once(child, 'spawn'), once(child, 'error').then(([err]) => Promise.reject(err as Error))]);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new DriverError(
      e.code === 'ENOENT' ? `${what}: command not found` : `${what} could not start: ${e.message}`,
      { cause: err },
    );
  }
  // Later errors (a failed kill) must not become unhandled 'error' events; 'close' still settles exit.
  child.on('error', () => undefined);
  if (signal) {
    const onAbort = (): void => kill();
    if (signal.aborted) onAbort();
    else {
      signal.addEventListener('abort', onAbort, { once: true });
      void exit.then(() => signal.removeEventListener('abort', onAbort));
    }
  }
  return { stdin: child.stdin!, stdout: child.stdout!, stderr: child.stderr!, exit };
}
