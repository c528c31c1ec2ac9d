/**
 * @module A setup file of the vitest projects (vitest.config.ts): at the end of each test file it
 * puts the CPU time of the file's worker process and of the children it waited for (the spawned
 * `outpost` processes, podman and kubectl calls, the servers a file starts and stops: fields 14-17
 * of /proc/self/stat), since the worker's previous file ended, into the file's task meta.
 * test/skips-reporter.ts records it per file in `.test-durations.json` and per tier at the end of
 * the run: with five workers on two cores the suite is CPU-bound, so CPU time, not wall time, says
 * which files make it long.
 *
 * Not counted: what a test leaves running past the file's last hook, and processes that are not the
 * worker's own children when they end (podman's containers run under conmon; kubelet's under its
 * own parent).
 */
import fs from 'node:fs';
import { afterAll } from 'vitest';

declare module '@vitest/runner' {
  interface TaskMeta {
    /** CPU milliseconds of the file's worker and its waited-for children (test/cpu-meter.ts). */
    cpuMs?: number;
  }
}

/** The kernel's clock ticks per second for /proc times (USER_HZ: 100 on every Linux Node runs on). */
const TICK_MS = 10;

/** utime + stime + cutime + cstime of this process, in milliseconds; undefined off Linux. */
function processTreeCpuMs(): number | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync('/proc/self/stat', 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime..cstime are fields 14-17.
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
  return Number.isFinite(ticks) ? ticks * TICK_MS : undefined;
}

/**
 * Where the last file of this worker ended, on the same clock. A worker without isolation runs file
 * after file (vitest.config.ts), and globalThis outlives them; an isolated worker runs one file and
 * starts at 0, so its file is charged its process's start too.
 */
const MARK = Symbol.for('outpost.cpuMeter.lastMs');
type Marked = typeof globalThis & { [MARK]?: number };

// Registered first, so it runs after the file's own afterAll hooks (vitest runs them as a stack).
// Vitest wants the context argument destructured; the file is the second.
afterAll(({}, file) => {
  const ms = processTreeCpuMs();
  if (ms === undefined) return;
  const g = globalThis as Marked;
  file.meta.cpuMs = ms - (g[MARK] ?? 0);
  g[MARK] = ms;
});
