/**
 * A vitest reporter (vitest.config.ts): lists the tests that were skipped at the end of a run, and
 * in CI (`CI=true`, as `.ci/run` sets) fails the run when there is any. A test skipped in CI tested
 * nothing while the run went green: what it needs must be installed (build/setup.sh) or it must
 * fail with the reason. A run filtered with `-t` counts the tests it filtered out as skipped;
 * they are listed, and fail nothing outside CI, which never filters.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SkipsReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
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
