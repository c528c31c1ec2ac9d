/**
 * vitest globalSetup: the `outpost` the tests spawn (test/procs.ts) is main.ts bundled once per run
 * by the product's own bundler (build/sea/bundle.ts, as `node dist/outpost.cjs` runs), not
 * `node --import tsx main.ts`. The same code crosses the same process boundary, but starts in a
 * fraction of the time: tsx compiles and resolves ~400 modules through its loader hooks at every
 * start, 2-3 s on a quiet machine and 6-10 s on a loaded one, and the suite spawns hundreds.
 *
 * Built into `.test-bundle/` (gitignored) only when it is older than its inputs or HEAD moved
 * (build/sea/freshness.ts), in a new folder renamed into place, and handed to the workers as
 * OUTPOST_TEST_BUNDLE. `OUTPOST_TEST_SPAWN=tsx` spawns from the sources instead (a stack trace with
 * .ts lines); a run without this setup (another config) spawns from the sources as well.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { bundle } from '../build/sea/bundle.js';
import { newestInput } from '../build/sea/freshness.js';
import { ROOT } from './helpers.js';

export const BUNDLE_DIR = path.join(ROOT, '.test-bundle');
const STAMP = 'built-from.json';

/** The version and commit the sources report when run with tsx (core/version.ts fromSources). */
function sourceInfo(): { version: string; commit: string } {
  const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .toString()
      .trim();
  } catch {
    /* not a git checkout */
  }
  return { version, commit };
}

function fresh(info: { version: string; commit: string }): boolean {
  try {
    const stamp = JSON.parse(fs.readFileSync(path.join(BUNDLE_DIR, STAMP), 'utf8')) as typeof info;
    const built = fs.statSync(path.join(BUNDLE_DIR, 'outpost.cjs')).mtimeMs;
    return stamp.version === info.version && stamp.commit === info.commit && built >= newestInput(ROOT);
  } catch {
    return false;
  }
}

/** Builds `.test-bundle/outpost.cjs` (and its side bundles) unless it is fresh; returns its path. */
export async function ensureTestBundle(): Promise<string> {
  const info = sourceInfo();
  const file = path.join(BUNDLE_DIR, 'outpost.cjs');
  if (fresh(info)) return file;
  // Built beside the final folder, then swapped in: another run in this checkout never sees half a bundle.
  const next = `${BUNDLE_DIR}.new-${process.pid}`;
  const old = `${BUNDLE_DIR}.old-${process.pid}`;
  fs.rmSync(next, { recursive: true, force: true });
  const result = await bundle(path.join(ROOT, 'main.ts'), path.join(next, 'outpost.cjs'), info);
  if (result.warnings.length) console.warn(`test bundle: esbuild warnings:\n${result.warnings.join('\n')}`);
  fs.writeFileSync(path.join(next, STAMP), JSON.stringify(info));
  if (fs.existsSync(BUNDLE_DIR)) fs.renameSync(BUNDLE_DIR, old);
  fs.renameSync(next, BUNDLE_DIR);
  fs.rmSync(old, { recursive: true, force: true });
  return file;
}

export default async function setup(): Promise<void> {
  if (process.env.OUTPOST_TEST_SPAWN === 'tsx') return;
  process.env.OUTPOST_TEST_BUNDLE = await ensureTestBundle();
  // Node's on-disk code cache (keyed by the file's contents and Node's version) for the hundreds of
  // `outpost` processes a run spawns: each then compiles less of the 3 MB bundle at start (a hub's
  // start measured 390-420 against 430-450 ms of CPU, a CLI call 0.10 against 0.14 s).
  process.env.NODE_COMPILE_CACHE ??= path.join(BUNDLE_DIR, 'compile-cache');
}
