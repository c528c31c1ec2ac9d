/**
 * A vitest reporter (vitest.config.ts): prints the time of each tier of the suite (test/tiers.ts:
 * unit, hub, system: files, tests and the time their files took, summed over the workers), leaves
 * each file's duration and its slowest tests in `.test-durations.json`, then
 * lists the tests that were skipped at the end of a run, and
 * in CI (`CI=true`, as `.ci/run` sets) fails the run when there is any. A test skipped in CI tested
 * nothing while the run went green: what it needs must be installed (build/setup.sh) or it must
 * fail with the reason. A run filtered with `-t` counts the tests it filtered out as skipped;
 * they are listed, and fail nothing outside CI, which never filters.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { TIERS, tierOf, type Tier } from './tiers.js';

/**
 * Where each run leaves its files' durations (gitignored), merged over runs so a one-file run keeps
 * the rest; OUTPOST_TEST_DURATIONS names another file (two runs side by side, an A/B).
 */
export const DURATIONS_FILE = '.test-durations.json';

/**
 * Writes `{ file: { ms, cpuMs, tier, tests, slowest, at } }` (cpuMs: test/cpu-meter.ts) for every file of this run into `.test-durations.json`
 * (entries of files this run did not run are kept): the slowest files are the ones to look at
 * when the suite gets slow, without another full run on a shared machine.
 */
function writeDurations(modules: ReadonlyArray<TestModule>): void {
  const file = path.resolve(process.env.OUTPOST_TEST_DURATIONS ?? DURATIONS_FILE);
  let old: Record<string, unknown> = {};
  try {
    old = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    // No earlier run (or an unreadable file): start afresh.
  }
  const at = new Date().toISOString();
  for (const m of modules) {
    const rel = path.relative(process.cwd(), m.moduleId);
    const tests = [...m.children.allTests()];
    const slowest = Object.fromEntries(
      tests
        .map((t) => [t.fullName, Math.round(t.diagnostic()?.duration ?? 0)] as const)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5),
    );
    const cpuMs = m.meta().cpuMs;
    old[rel] = {
      ms: Math.round(m.diagnostic().duration),
      cpuMs,
      tier: tierOf(m.moduleId),
      tests: tests.length,
      slowest,
      at,
    };
  }
  const sorted = Object.fromEntries(
    Object.entries(old).sort(([, a], [, b]) => ((b as { ms: number }).ms ?? 0) - ((a as { ms: number }).ms ?? 0)),
  );
  fs.writeFileSync(file, `${JSON.stringify(sorted, null, 1)}\n`);
}

/** `unit 58 files, 412 tests, 9.1 s (CPU 14.2 s) · hub ... · system ...`: each tier's share of the run. */
function tierTimes(modules: ReadonlyArray<TestModule>): string {
  const by = new Map<Tier, { files: number; tests: number; ms: number; cpuMs: number }>(
    TIERS.map((t) => [t, { files: 0, tests: 0, ms: 0, cpuMs: 0 }]),
  );
  for (const m of modules) {
    const t = by.get(tierOf(m.moduleId))!;
    t.files++;
    t.tests += [...m.children.allTests()].length;
    t.ms += m.diagnostic().duration;
    t.cpuMs += m.meta().cpuMs ?? 0;
  }
  return TIERS.map((t) => {
    const x = by.get(t)!;
    return `${t} ${x.files} files, ${x.tests} tests, ${(x.ms / 1000).toFixed(1)} s (CPU ${(x.cpuMs / 1000).toFixed(1)} s)`;
  }).join(' · ');
}

export default class SkipsReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    if (modules.length) {
      console.log(
        `\ntiers (time of their files summed over the workers; CPU of their workers and the children they waited for): ${tierTimes(modules)}`,
      );
      writeDurations(modules);
    }
    const skipped: string[] = [];
    for (const m of modules)
      for (const t of m.children.allTests())
        if (t.result().state === 'skipped' && t.options.mode !== 'todo')
          skipped.push(`${m.moduleId.replace(`${process.cwd()}/`, '')} > ${t.fullName}`);
    if (skipped.length === 0) return;
    const strict = process.env.CI === 'true';
    console.log(
      `\n${skipped.length} test(s) skipped${strict ? ' (CI fails on a skipped test: install what it needs, or make it fail with the reason)' : ''}:\n${skipped.map((s) => `  - ${s}`).join('\n')}\n`,
    );
    if (strict) process.exitCode = 1;
  }
}
