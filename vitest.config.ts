import { configDefaults, defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/sequencer.js';
import unitConfig from './vitest.unit.config.js';
import { V8_FLAGS } from './main/v8-flags.js';

/** The files of the fast tier (vitest.unit.config.ts keeps the one list). */
const UNIT = unitConfig.test!.include!;

/** Each file's CPU time, for the durations file and the tiers' line at the end of a run. */
const CPU_METER = 'test/cpu-meter.ts';

/** Integration tests spawn real processes and sockets; the machines are shared and noisy. */
const LIMITS = { testTimeout: 60_000, hookTimeout: 60_000 };

export default defineConfig({
  test: {
    // Lists skipped tests at the end; in CI a skipped test fails the run (test/skips-reporter.ts).
    reporters: ['default', './test/skips-reporter.ts'],
    // The longest files first (durations of the last local run, else test/durations-seed.json), so
    // the run does not end on one long file while the other workers idle.
    sequence: { sequencer: LongestFirstSequencer },
    fileParallelism: true,
    // Four on two cores: the system tier mostly waits on the processes and servers it starts
    // (measured 2026-12-07: its process tree used 0.35-0.7 of a core with 2 and 3 workers), so more
    // files in flight shorten the run (a clean-clone .ci/run 589 s with four against 729 s with
    // three). Four keep both cores busy, so a test waits on what it observes with a deadline made
    // for a loaded machine: the one that flaked at four (the process driver's log rotation, a
    // line per fork of `sleep`) now writes four lines per fork.
    maxWorkers: 4,
    // Two projects sharing the workers: the unit tier and the rest. Both isolated: the unit tier
    // without isolation (one module graph per worker, 27.7 s against 8.8 s of worker time measured
    // 2026-12-07) failed in a clean-clone run, hub/orders/engine.test.ts and spec-writer.test.ts
    // finding Automerge's WebAssembly set up by another file of the same worker ("WebAssembly.Module():
    // Argument 0 must be a buffer source" in sync/wasm-heap.ts), an order the files' own runs never
    // had. Neither project extends this config, so both take maxWorkers from it (and from
    // `--maxWorkers`): projects with different ones would run one after the other.
    projects: [
      { test: { name: 'unit', include: UNIT, pool: 'forks', setupFiles: [CPU_METER], ...LIMITS } },
      {
        test: {
          name: 'rest',
          include: [
            'bench/**/*.test.ts',
            'core/**/*.test.ts',
            'sync/**/*.test.ts',
            'hub/**/*.test.ts',
            'cli/**/*.test.ts',
            'main/**/*.test.ts',
            'edge/**/*.test.ts',
            'build/**/*.test.ts',
            'test/**/*.test.ts',
            'ui/**/*.test.ts',
          ],
          exclude: [...configDefaults.exclude, ...UNIT],
          // Builds (once per machine, cached) the real kube-apiserver the kubernetes driver tests
          // start and the Helm chart renderer (build/helm), and (when its sources changed) the
          // bundle of main.ts the tests spawn as `outpost`.
          globalSetup: [
            'test/kube/global-setup.ts',
            'test/helm-setup.ts',
            'test/outpost-bundle.ts',
            'test/leak-check.ts',
          ],
          pool: 'forks',
          setupFiles: [CPU_METER],
          // The in-process hubs and agents run with the V8 flags `outpost hub` and `outpost edge`
          // set (main/v8-flags.ts), so they collect as the product does (the suite's wall time did
          // not change with it: 555 s against 540-554 s, 2026-12-07).
          execArgv: [...V8_FLAGS],
          ...LIMITS,
        },
      },
    ],
  },
});
