/** @module The version and git commit of this build. The bundler defines both; unpackaged runs read them. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

declare const __OUTPOST_VERSION__: string | undefined;
declare const __OUTPOST_COMMIT__: string | undefined;

function fromSources(): { version: string; commit: string } {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  let version = '0.0.0-dev';
  let commit = 'unknown';
  try {
    version = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    /* not fatal: a version string is informative only */
  }
  try {
    commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .toString()
      .trim();
  } catch {
    /* not a git checkout */
  }
  return { version, commit };
}

const built =
  typeof __OUTPOST_VERSION__ === 'string'
    ? { version: __OUTPOST_VERSION__, commit: __OUTPOST_COMMIT__ ?? 'unknown' }
    : undefined;
let cached: { version: string; commit: string } | undefined = built;

export function buildInfo(): { version: string; commit: string } {
  cached ??= fromSources();
  return cached;
}
