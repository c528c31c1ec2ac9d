/**
 * @module Is dist/outpost older than what it is built from? Tests that spawn the executable use this
 * to build it once, only when needed (a build takes seconds and two cores are shared).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { OPTIONAL_ASSETS } from './assets.js';

/** Folders and files whose change makes a new executable (tests excluded: they are not bundled). */
const INPUT_DIRS = ['main', 'core', 'sync', 'hub', 'edge', 'cli', 'build', path.join('ui', 'dist')];
const INPUT_FILES = ['main.ts', 'package.json', 'package-lock.json', ...OPTIONAL_ASSETS.map((a) => a.file)];

function newestIn(dir: string): number {
  let newest = 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const ent of entries) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) {
      if (ent.name !== 'node_modules' && !ent.name.startsWith('.')) newest = Math.max(newest, newestIn(p));
    } else if (ent.isFile() && !/\.test\.ts$/.test(ent.name)) {
      newest = Math.max(newest, fs.statSync(p).mtimeMs);
    }
  }
  return newest;
}

/** Newest modification time (ms) among the inputs of the executable, including the node binary. */
export function newestInput(root: string): number {
  let newest = fs.statSync(process.execPath).mtimeMs;
  for (const d of INPUT_DIRS) newest = Math.max(newest, newestIn(path.join(root, d)));
  for (const f of INPUT_FILES) {
    try {
      newest = Math.max(newest, fs.statSync(path.join(root, f)).mtimeMs);
    } catch {
      /* optional input absent */
    }
  }
  return newest;
}

export function isStale(root: string, outputs: string[]): boolean {
  const inputs = newestInput(root);
  return outputs.some((o) => {
    try {
      return fs.statSync(o).mtimeMs < inputs;
    } catch {
      return true;
    }
  });
}

/**
 * Runs `npm run build`'s script when dist/outpost or dist/outpost.cjs is missing or older than its
 * inputs. Returns whether it built. Concurrent callers are safe: outputs are replaced atomically.
 */
export function ensureBuilt(root: string, outputs: string[]): boolean {
  if (!isStale(root, outputs)) return false;
  const tsx = path.join(root, 'node_modules', '.bin', 'tsx');
  const r = spawnSync(tsx, [path.join(root, 'build', 'build.ts')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 10 * 60_000,
  });
  if (r.status !== 0) {
    throw new Error(`npm run build failed (exit ${r.status ?? r.signal ?? r.error?.message}):\n${r.stdout}${r.stderr}`);
  }
  return true;
}
