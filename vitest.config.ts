import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/sequencer.js';
import unitConfig from './vitest.unit.config.js';
import { V8_FLAGS } from './main/v8-flags.js';
import { filesByTier } from './test/tiers.js';

/** The files of the fast tier and how it runs (vitest.unit.config.ts keeps the one list). */
const { include: UNIT, pool: UNIT_POOL, isolate: UNIT_ISOLATE } = unitConfig.test!;

/** Each file's CPU time, for the durations file and the tiers' line at the end of a run. */
const CPU_METER = 'test/cpu-meter.ts';

/** Integration tests spawn real processes and sockets; the machines are shared and noisy. */
const LIMITS = { testTimeout: 60_000, hookTimeout: 60_000 };

/** The test files of each tier, found by what they use (test/tiers.ts). */
const TIERS = filesByTier();

/** The hub and system tiers: the fixtures' in-process hubs and agents run as the product does. */
const REST = {
  pool: 'forks' as const,
  setupFiles: [CPU_METER, 'test/restore-env.ts'],
  // The in-process hubs and agents run with the V8 flags `outpost hub` and `outpost edge` set
  // (main/v8-flags.ts), so they collect as the product does (the suite's wall time did not change
  // with it: 555 s against 540-554 s, 2026-12-07).
  execArgv: [...V8_FLAGS],
  isolate: false,
  ...LIMITS,
};

export default defineConfig({
  test: {
    // Lists skipped tests at the end; in CI a skipped test fails the run (test/skips-reporter.ts).
    reporters: ['default', './test/skips-reporter.ts'],
    // The longest files first (durations of the last local run, else test/durations-seed.json), so
    // the run does not end on one long file while the other workers idle.
    sequence: { sequencer: LongestFirstSequencer },
    fileParallelism: true,
    // Five on two cores: the system tier mostly waits on the processes and servers it starts
    // (measured 2026-12-07: its process tree used 0.35-0.7 of a core with 2 and 3 workers), so more
    // files in flight shorten the run (a clean-clone .ci/run 589 s with four against 729 s with
    // three). Measured again the same evening, the same hour, whole suite: four 523 s and 790 CPU-s,
    // five 493 s and 793 CPU-s, six 560 s and ~900 CPU-s (past five the files in flight cost more
    // CPU than the waits they fill). Five keep both cores busy, so a test waits on what it
    // observes with a deadline made for a loaded machine: the one that flaked at four (the process
    // driver's log rotation, a line per fork of `sleep`) now writes four lines per fork.
    maxWorkers: 5,
    // Built before any file runs (once per machine, cached): the real kube-apiserver the kubernetes
    // driver tests start, the Helm chart renderer (build/helm), and (when its sources changed) the
    // bundle of main.ts the tests spawn as `outpost`; test/leak-check.ts points every test's temp
    // directory into one of this run and fails the run on a process left behind. At the root, so
    // they run once whichever tiers run.
    globalSetup: ['test/kube/global-setup.ts', 'test/helm-setup.ts', 'test/outpost-bundle.ts', 'test/leak-check.ts'],
    // One project per tier (test/tiers.ts), sharing the workers. No project extends this config,
    // so all take maxWorkers from it (and from `--maxWorkers`). Projects with different ones need a
    // `sequence.groupOrder` each (vitest refuses them otherwise) and run one group after the other:
    // tried with the hub and unit tiers at eight after the system tier at five, 494 s against 493,
    // the hub tier's CPU 103 s against 87 (2026-12-07); not kept.
    //
    // No tier runs isolated: a worker process runs file after file, and what the earlier files
    // imported stays loaded and evaluated, the repository's own modules as well as node_modules
    // (a module imported by two files of one worker is evaluated once: checked 2026-12-07 with a
    // counter on globalThis). Each test file itself is evaluated afresh. A file must then leave the
    // process as it found it: no timers, servers or processes left behind, process.env put back
    // (test/restore-env.ts does it for every file), a fixture's module state reset by its own stop
    // (test/fixtures/backend.ts), Automerge loaded through `@automerge/automerge/slim` and
    // sync/native.ts initAutomerge, never the full entry point, whose own WebAssembly glue
    // sync/wasm-heap.ts cannot find. test/sequencer.ts keeps each project's files together, or
    // vitest starts a worker per file anyway.
    //
    // Measured: the hub tier alone 70 s and 72 CPU-s against 89 s and 121 CPU-s isolated
    // (2026-12-07). The system tier alone, 122 files, the same 668 tests passing: 447 s and 870
    // CPU-s of the machine against 517 s and 1,018 isolated (2026-12-07): a fresh worker paid
    // ~1.3 CPU-s to start and import a hub and an agent before its first test. (An earlier single
    // whole-suite run, 478 s against 463, had said otherwise.)
    projects: [
      { test: { name: 'system', include: TIERS.system, ...REST } },
      { test: { name: 'hub', include: TIERS.hub, ...REST } },
      {
        test: {
          name: 'unit',
          include: UNIT,
          pool: UNIT_POOL,
          isolate: UNIT_ISOLATE,
          setupFiles: [CPU_METER],
          ...LIMITS,
        },
      },
    ],
  },
});
