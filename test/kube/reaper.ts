/**
 * @module Processes a test starts must not outlive it, even when the test process is killed
 * (a vitest timeout, Ctrl-C) and its exit handlers never run: a detached bash watches the test
 * process and kills the child (or its whole process group) within two seconds of its death.
 */
import { spawn } from 'node:child_process';

export function reapWithParent(pid: number | undefined, opts: { group?: boolean } = {}): void {
  if (!pid) return;
  const target = opts.group ? `-${pid}` : String(pid);
  // bash, not sh: dash's kill takes no `--`, which a negative (group) id needs.
  const dog = spawn(
    'bash',
    [
      '-c',
      `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${pid} 2>/dev/null; do sleep 2; done; kill -0 ${process.pid} 2>/dev/null || kill -9 -- ${target} 2>/dev/null`,
    ],
    { detached: true, stdio: 'ignore' },
  );
  dog.unref();
}
