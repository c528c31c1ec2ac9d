/**
 * @module The edge agent's process settings: V8 and glibc malloc tuned for a small, long-lived
 * process. `outpost edge` re-executes itself once (process.execve: same pid, same stdio, nothing
 * for systemd or a test to notice) with them in its environment, because both are read only at
 * process start: V8's semi-space and worker pool are sized before any JavaScript runs, and glibc
 * reads its MALLOC_* tunables once. They cannot go into the executable's SEA `execArgv` either: that
 * applies to every role, and the hub wants the defaults (large young generation, four GC workers).
 *
 * After the re-exec the variables are taken out of process.env again, so the workloads the process
 * driver starts inherit the operator's environment, not ours. OUTPOST_EDGE_TUNING=off runs the
 * agent with Node's defaults. Measured in docs/benchmarks.md (footprint).
 */

import { isSea } from 'node:sea';

/** The opt-out: OUTPOST_EDGE_TUNING=off. */
export const TUNING_ENV = 'OUTPOST_EDGE_TUNING';
/** Set in the re-executed process: the keys this module added (comma list), so it can remove them. */
export const TUNED_ENV = 'OUTPOST_EDGE_TUNED';
/** The operator's NODE_OPTIONS, kept across the re-exec (ours are prepended to it). */
const PRIOR_NODE_OPTIONS_ENV = 'OUTPOST_EDGE_PRIOR_NODE_OPTIONS';

/**
 * V8 options, as NODE_OPTIONS (the one way to give them to a single executable at start):
 * - one platform worker thread instead of four: with four, the start burst (20 workloads' Automerge
 *   changes, wasm tier-up, TurboFan) left tens of MB of freed memory in their malloc arenas;
 * - a 1 MB semi-space (default 16 MB on 64-bit): the young generation of a process that allocates
 *   little is mostly empty pages that still count as RSS once touched.
 */
export const EDGE_V8_OPTIONS: readonly string[] = ['--v8-pool-size=1', '--max-semi-space-size=1'];

/**
 * V8 options only the command line takes (NODE_OPTIONS refuses them). Under node the re-exec puts
 * them before the script; the single executable carries them in its SEA `execArgv` for every role
 * (build/sea/executable.ts), since it takes no Node flags on its command line:
 * - a 32 MB initial old generation. A relayed stream (interconnect) allocates a socket read, a TLS
 *   record and a joined WebSocket message per chunk, dead at once; counted in the heap's global
 *   limit (main/v8-flags.ts), they started a full collection every ~100 ms in an agent whose heap
 *   holds ~20 MB, ~10 during a 512 MiB stream. With the floor one stream through the hub went from
 *   46-50% to 54-62% of an SSH hop (docs/benchmarks.md, "Interconnect, fourth round"). It is a limit,
 *   not a reservation: an idle agent's footprint did not move, and the hub, whose heap is larger,
 *   measured no difference either way.
 */
export const EDGE_V8_ARGS: readonly string[] = ['--initial-old-space-size=32'];

/**
 * glibc malloc: one arena (threads share it instead of keeping their own with freed memory in it),
 * and freed memory above 128 KB returned to the kernel (trim threshold) instead of kept on the heap
 * top; allocations of 128 KB and more get their own mapping, unmapped when freed.
 */
export const EDGE_MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '1',
  MALLOC_TRIM_THRESHOLD_: '131072',
  MALLOC_MMAP_THRESHOLD_: '131072',
};

export interface Launch {
  file: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * How to start this process again with the settings, or undefined when it already runs with them
 * or they are switched off. Pure: the caller passes the process's facts.
 */
export function tunedLaunch(p: {
  env: NodeJS.ProcessEnv;
  execPath: string;
  argv: readonly string[];
  execArgv: readonly string[];
  /** Running as the single executable: its arguments after argv[1] are the program's, and it takes no Node flags. */
  sea: boolean;
}): Launch | undefined {
  if (p.env[TUNED_ENV] !== undefined) return undefined;
  if ((p.env[TUNING_ENV] ?? '').toLowerCase() === 'off') return undefined;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.env)) if (v !== undefined) env[k] = v;
  const added: string[] = [];
  for (const [k, v] of Object.entries(EDGE_MALLOC_ENV)) {
    // The operator's own value wins.
    if (env[k] !== undefined) continue;
    env[k] = v;
    added.push(k);
  }
  const prior = p.env.NODE_OPTIONS;
  if (prior !== undefined) env[PRIOR_NODE_OPTIONS_ENV] = prior;
  // Ours first: a flag the operator repeats in NODE_OPTIONS comes later and wins.
  env.NODE_OPTIONS = [...EDGE_V8_OPTIONS, ...(prior ? [prior] : [])].join(' ');
  env[TUNED_ENV] = added.join(',');
  // A single executable: argv is [exe, exe, ...program args]. Node: [node, ...execArgv, script, ...args].
  const args = p.sea
    ? [p.execPath, ...p.argv.slice(2)]
    : [p.execPath, ...EDGE_V8_ARGS, ...p.execArgv, ...p.argv.slice(1)];
  return { file: p.execPath, args, env };
}

/**
 * In the re-executed process: removes what tunedLaunch added from process.env (they have done
 * their work at start), so child processes get the operator's environment. Returns whether this
 * process runs tuned.
 */
export function restoreEnvironment(env: NodeJS.ProcessEnv = process.env): boolean {
  const added = env[TUNED_ENV];
  if (added === undefined) return false;
  for (const k of added.split(',')) if (k) delete env[k];
  const prior = env[PRIOR_NODE_OPTIONS_ENV];
  if (prior !== undefined) env.NODE_OPTIONS = prior;
  else delete env.NODE_OPTIONS;
  delete env[PRIOR_NODE_OPTIONS_ENV];
  delete env[TUNED_ENV];
  return true;
}

/**
 * Call first thing in `outpost edge` (the agent): re-executes the process with the settings
 * unless it already has them or OUTPOST_EDGE_TUNING=off; does not return in that case. Otherwise
 * it cleans the environment and returns a word for the log: 'tuned', 'off' or why it could not.
 */
export function applyEdgeProcessSettings(warn: (msg: string) => void): string {
  if (restoreEnvironment()) return 'tuned';
  const launch = tunedLaunch({
    env: process.env,
    execPath: process.execPath,
    argv: process.argv,
    execArgv: process.execArgv,
    sea: isSea(),
  });
  if (!launch) return 'off';
  if (typeof process.execve !== 'function') {
    warn(`this Node has no process.execve: running with Node's defaults (${TUNING_ENV}=off skips the attempt)`);
    return 'untuned';
  }
  try {
    process.execve(launch.file, launch.args, launch.env);
  } catch (err) {
    // Not fatal: the agent runs with Node's defaults, only heavier.
    warn(
      `could not re-execute with the edge's memory settings (${(err as Error).message}); running with Node's defaults (${TUNING_ENV}=off skips the attempt)`,
    );
  }
  return 'untuned';
}
