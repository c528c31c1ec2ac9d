/**
 * @module The three tiers of the test suite, named by what a test file uses, so no list has to be
 * kept by hand:
 *
 * - **unit**: the fast tier of vitest.unit.config.ts (pure modules, in-memory state, no socket).
 * - **system**: what crosses a process boundary or needs a real server: a spawned `outpost`
 *   (test/procs.ts), the packaged binary (test/e2e/), PostgreSQL, podman, the kube-apiserver,
 *   clamd, a registry, S3, Chromium. Found in the file or in the test fixtures it imports.
 * - **hub**: the rest: in-process hubs and agents over real sockets and SQLite files, the CLI
 *   in-process.
 *
 * `npm test` runs all three and test/skips-reporter.ts prints each tier's time at the end;
 * `npm run test:unit`, `test:hub`, `test:system` run one (`tsx test/tiers.ts run TIER`).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const TIERS = ['unit', 'hub', 'system'] as const;
export type Tier = (typeof TIERS)[number];

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** What makes a file a system test, as it appears in its source or a fixture's. */
const SYSTEM_MARKERS: RegExp[] = [
  /\bstartHubProc\b|\bstartEdgeProc\b|\bnew Proc\(/,
  /\bTestPostgres\b|\bhubDatabase\(\)|\bstartReplicas\b|\brunOnPostgres\(/,
  /\bstartKubeApiServer\b/,
  /\bTestClamd\b/,
  /\bstartTestRegistry\b/,
  /\bSKIP_PODMAN\b|\bcreatePodman\(|\bstartPodmanEdge\b|\bpodman\b.*\bexecFile/,
  /\blaunch\(\)|\bchromium\b/,
  /\bstartS3\b|\bs3rver\b/,
  /dist\/outpost\b|bench\/run\.ts/,
  // A forked peer (test/fixtures/sync-peer.ts): a sync client or server in a process of its own.
  /\bnew ForkedPeer\(/,
  // A process the test starts itself (a lock holder, a real binary): it crosses a process boundary.
  /\bspawn(Sync)?\(/,
];

/** The include globs of the fast tier (vitest.unit.config.ts), read from the file so they stay one list. */
function unitGlobs(): string[] {
  const text = fs.readFileSync(path.join(ROOT, 'vitest.unit.config.ts'), 'utf8');
  const block = /include:\s*\[([\s\S]*?)\]/.exec(text)?.[1] ?? '';
  return [...block.matchAll(/'([^']+)'/g)].map((m) => m[1]);
}

/** Relative imports of a file that stay inside test/ or bench/ (the fixtures, helpers and harness it uses). */
function testImports(file: string, text: string): string[] {
  const out: string[] = [];
  const inside = ['test', 'bench'].map((d) => path.join(ROOT, d) + path.sep);
  for (const m of text.matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
    const target = path.resolve(path.dirname(file), m[1].replace(/\.js$/, '.ts'));
    if (inside.some((d) => target.startsWith(d)) && fs.existsSync(target)) out.push(target);
  }
  return out;
}

const systemFiles = new Map<string, boolean>();

/**
 * Fixtures whose server starts only when the file itself asks for it: test/fixtures/backend.ts
 * starts PostgreSQL only for a `*.postgres.test.ts` file (runOnPostgres, a marker of its own); on
 * SQLite a suite that imports it runs its hubs in-process.
 */
const ON_REQUEST = new Set([path.join(ROOT, 'test', 'fixtures', 'backend.ts')]);

/** Whether `file` or a test fixture it imports (transitively) shows a system marker. */
function usesSystem(file: string, seen = new Set<string>()): boolean {
  const known = systemFiles.get(file);
  if (known !== undefined) return known;
  if (seen.has(file) || ON_REQUEST.has(file)) return false;
  seen.add(file);
  const text = fs.readFileSync(file, 'utf8');
  const found =
    file.includes(`${path.sep}test${path.sep}e2e${path.sep}`) ||
    SYSTEM_MARKERS.some((r) => r.test(text)) ||
    testImports(file, text).some((f) => usesSystem(f, seen));
  systemFiles.set(file, found);
  return found;
}

let unit: Set<string> | undefined;

/** The tier of a test file (absolute path or relative to the repository). */
export function tierOf(file: string): Tier {
  const abs = path.resolve(ROOT, file);
  unit ??= new Set(unitGlobs().flatMap((g) => fs.globSync(g, { cwd: ROOT }).map((f) => path.resolve(ROOT, f))));
  if (unit.has(abs)) return 'unit';
  return usesSystem(abs) ? 'system' : 'hub';
}

/** Every test file vitest.config.ts runs, by tier. */
export function filesByTier(): Record<Tier, string[]> {
  const out: Record<Tier, string[]> = { unit: [], hub: [], system: [] };
  const dirs = ['bench', 'core', 'sync', 'hub', 'cli', 'main', 'edge', 'build', 'test', 'ui'];
  for (const d of dirs)
    for (const f of fs.globSync(`${d}/**/*.test.ts`, { cwd: ROOT, exclude: (p) => p.includes('node_modules') }))
      out[tierOf(f)].push(f);
  for (const t of TIERS) out[t].sort();
  return out;
}

// `tsx test/tiers.ts run TIER [vitest args]`: one tier; `tsx test/tiers.ts list`: the files of each.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [verb, tier, ...rest] = process.argv.slice(2);
  const byTier = filesByTier();
  if (verb === 'list') {
    for (const t of TIERS) console.log(`${t} (${byTier[t].length} files)\n  ${byTier[t].join('\n  ')}`);
  } else if (verb === 'run' && (TIERS as readonly string[]).includes(tier)) {
    const config = tier === 'unit' ? ['--config', 'vitest.unit.config.ts'] : [];
    const r = spawnSync('npx', ['vitest', 'run', ...config, ...rest, ...byTier[tier as Tier]], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    process.exitCode = r.status ?? 1;
  } else {
    console.error(`usage: tsx test/tiers.ts list | run ${TIERS.join('|')} [vitest options]`);
    process.exitCode = 2;
  }
}
