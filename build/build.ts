/**
 * @module `npm run build`: main.ts -> dist/outpost.cjs (the bundle, runnable with `node`) and
 * dist/outpost (the Linux x64 single executable), and dist/outpost-helm beside it (the hub's Helm
 * chart renderer, build/helm) when Go is there. The pipeline lives in build/sea/; how and why
 * is in docs/packaging.md.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildInfo } from './sea/bundle.js';
import { buildExecutable } from './sea/executable.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DIST_EXECUTABLE = path.join(ROOT, 'dist', 'outpost');
export const DIST_BUNDLE = path.join(ROOT, 'dist', 'outpost.cjs');
/** The Helm chart renderer shipped beside the executable (the hub finds it there; docs/catalog.md, "Helm charts"). */
export const DIST_HELM = path.join(ROOT, 'dist', 'outpost-helm');

/**
 * Builds outpost-helm (build/helm/build.sh: Go, cached outside the repository) and copies it beside
 * dist/outpost; without a Go toolchain the executable is still built, and the note says what is missing.
 */
function buildHelmRenderer(): string {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    return 'dist/outpost-helm not built: no Go toolchain (the hub then refuses Helm charts; bash build/helm/build.sh builds it)';
  }
  const out = execFileSync('bash', [path.join(ROOT, 'build/helm/build.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  fs.copyFileSync(out.trim().split('\n').pop()!, DIST_HELM);
  fs.chmodSync(DIST_HELM, 0o755);
  return `${path.relative(ROOT, DIST_HELM)}  ${mib(fs.statSync(DIST_HELM).size)}  (Helm chart renderer, build/helm)`;
}

function git(args: string[]): string | undefined {
  try {
    return execFileSync('git', args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return undefined;
  }
}

/** Version from package.json; commit as 12 hex digits, `-dirty` when tracked files differ from it. */
export function buildInfo(): BuildInfo {
  const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const head = git(['rev-parse', '--short=12', 'HEAD']);
  if (!head) return { version, commit: 'unknown' };
  const dirty = git(['status', '--porcelain', '--untracked-files=no']);
  return { version, commit: dirty ? `${head}-dirty` : head };
}

const mib = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MiB`;
const kib = (n: number): string => `${(n / 1024).toFixed(0)} KiB`;

const USAGE = 'usage: tsx build/build.ts [--reproducible]   (--reproducible: no V8 code cache, byte-identical output)';

async function main(reproducible: boolean): Promise<void> {
  const t0 = performance.now();
  const info = buildInfo();
  const report = await buildExecutable({
    root: ROOT,
    entry: path.join(ROOT, 'main.ts'),
    outFile: DIST_EXECUTABLE,
    bundleFile: DIST_BUNDLE,
    info,
    reproducible,
    log: (line) => process.stdout.write(`  ${line}\n`),
  });
  const out = process.stdout;
  out.write(`outpost ${info.version} (commit ${info.commit})\n`);
  for (const w of report.bundle.warnings) out.write(`esbuild warning:\n${w}\n`);
  out.write(
    `  ${path.relative(ROOT, report.bundle.outFile)}  ${kib(report.bundle.bytes)}  (largest: ${report.bundle.inputsByPackage
      .slice(0, 5)
      .map(([p, b]) => `${p} ${kib(b)}`)
      .join(', ')})\n`,
  );
  for (const b of report.bundle.sideBundles)
    out.write(
      `  ${path.relative(ROOT, b.file)}  ${kib(b.bytes)}  (side bundle: ${b.specifiers.length} import paths)\n`,
    );
  const assetBytes = report.assets.reduce((s, a) => s + a.bytes, 0);
  const ui = report.assets.filter((a) => a.key.startsWith('ui/')).length;
  out.write(
    `  assets  ${report.assets.length} (${mib(assetBytes)}): ${report.assets
      .filter((a) => !a.key.startsWith('ui/') && !a.key.startsWith('side/'))
      .map((a) => a.key)
      .join(', ')}${ui ? ` + ${ui} ui/ files` : ''}\n`,
  );
  out.write(
    `  ${path.relative(ROOT, report.executable)}  ${mib(report.bytes)}  (${report.stripped ? 'stripped' : 'unstripped'} node ${report.nodeVersion}${reproducible ? ', no code cache' : ''})\n`,
  );
  out.write(`  ${buildHelmRenderer()}\n`);
  out.write(
    `  steps  ${Object.entries(report.timings)
      .map(([k, v]) => `${k} ${v} ms`)
      .join(', ')}\n`,
  );
  out.write(`built in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
}

// Imported by build.test.ts for the paths; only build when run as the script.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== '--reproducible');
  if (unknown.length > 0) {
    process.stderr.write(`unknown argument ${unknown.join(' ')}\n${USAGE}\n`);
    process.exit(2);
  }
  main(args.includes('--reproducible')).catch((err: unknown) => {
    process.stderr.write(`build failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    if (err instanceof Error && err.cause)
      process.stderr.write(`cause: ${err.cause instanceof Error ? err.cause.message : String(err.cause)}\n`);
    process.exitCode = 1;
  });
}
