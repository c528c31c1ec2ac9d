/**
 * @module The order vitest starts the test files in (vitest.config.ts `sequence.sequencer`): the
 * longest first, so the last files to finish are short ones and no worker idles at the end while
 * one long file runs alone; the files of the projects without isolation come last, each project's
 * together (see `sort`). Vitest does this by itself only from its results cache, which a clean
 * clone (CI) does not have; it then starts larger files first, and file size says little here
 * (edge/drivers/podman/podman.test.ts is 65 lines and runs a minute: it calls a shared suite).
 * So the durations come from the local cache when it has them (the last run on this machine),
 * else from test/durations-seed.json, committed: seconds per file of a full run.
 *
 * Refresh the seed after a full run (`npm test` leaves .test-durations.json): `tsx test/sequencer.ts`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { DURATIONS_FILE } from './skips-reporter.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SEED_FILE = path.join(ROOT, 'test', 'durations-seed.json');

function readSeed(): Record<string, number> {
  try {
    return JSON.parse(fs.readFileSync(SEED_FILE, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seed = readSeed();
    const root = this.ctx.config.root;
    const known = (f: TestSpecification): { ms: number | undefined; failed: boolean } => {
      const rel = path.relative(root, f.moduleId);
      const cached = this.ctx.cache.getFileTestResults(`${f.project.name}:${rel}`);
      const s = seed[rel];
      return { ms: cached?.duration ?? (s === undefined ? undefined : s * 1000), failed: cached?.failed ?? false };
    };
    const info = new Map(files.map((f) => [f, known(f)]));
    // The files of a project without isolation (vitest.config.ts) run one after another, and after
    // those of the isolated ones: vitest keeps such a worker for the next file only when the next
    // file in the queue is of the same project, so interleaved they would each start a worker.
    const group = (f: TestSpecification): number =>
      f.project.config.isolate === false ? 1 + this.ctx.projects.indexOf(f.project) : 0;
    return [...files].sort((a, b) => {
      const x = info.get(a)!;
      const y = info.get(b)!;
      // What failed last time first, then files never timed (new ones: they may be long).
      if (x.failed !== y.failed) return x.failed ? -1 : 1;
      const [g, h] = [group(a), group(b)];
      if (g !== h) return g < h ? -1 : 1;
      if ((x.ms === undefined) !== (y.ms === undefined)) return x.ms === undefined ? -1 : 1;
      return (y.ms ?? 0) - (x.ms ?? 0);
    });
  }
}

/** `tsx test/sequencer.ts`: writes the seed from .test-durations.json (seconds, one decimal). */
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const runs = JSON.parse(fs.readFileSync(path.join(ROOT, DURATIONS_FILE), 'utf8')) as Record<string, { ms: number }>;
  const seed = Object.fromEntries(
    Object.entries(runs)
      .sort(([, a], [, b]) => b.ms - a.ms)
      .map(([f, r]) => [f, Math.round(r.ms / 100) / 10]),
  );
  fs.writeFileSync(SEED_FILE, `${JSON.stringify(seed, null, 1)}\n`);
  console.log(`${SEED_FILE}: ${Object.keys(seed).length} files`);
}
