/**
 * @module esbuild settings that turn an ESM TypeScript entry into one CommonJS file a Node SEA can run
 * (Node 20 SEA has no ESM main and its `require` only loads built-in modules, so everything but
 * the native addon and the wasm must be inside the bundle).
 */
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import * as esbuild from 'esbuild';

export interface BuildInfo {
  version: string;
  commit: string;
}

export interface BundleResult {
  outFile: string;
  bytes: number;
  /** Bundle bytes per npm package (or `(project)`), largest first, to see what makes the bundle big. */
  inputsByPackage: [string, number][];
  warnings: string[];
  /** The side bundles written beside the bundle (see SIDE_BUNDLES), only those the entry imports. */
  sideBundles: SideBundle[];
}

export interface SideBundle {
  name: string;
  /** Absolute path of `side/<name>.cjs` beside the bundle. */
  file: string;
  /** The SEA asset key the executable carries it under. */
  assetKey: string;
  bytes: number;
  /** The import paths the bundle takes from it. */
  specifiers: string[];
}

// A CJS bundle has no import.meta; esbuild would leave `import.meta.url` empty and silently break
// every `fileURLToPath(import.meta.url)` (core/version.ts, createRequire fallbacks). This keeps the
// sources plain ESM: the banner computes the URL of the bundle file itself.
const IMPORT_META_URL = '__outpost_import_meta_url';
const BANNER = `var ${IMPORT_META_URL} = require("node:url").pathToFileURL(__filename).href;`;

/**
 * better-sqlite3 (13+) finds its addon in `lib/binding.js`, relative to its own `__dirname`: from
 * dist/outpost.cjs that is dist/, where the addon is not. The shim resolves the addon from
 * node_modules next to the bundle instead (a compiled build/Release one first, else the package's
 * N-API prebuild), so `node dist/outpost.cjs` works in a checkout. Inside the executable
 * sync/native.ts always passes `nativeBinding`, which the shim hands back untouched.
 */
const bindingShim: esbuild.Plugin = {
  name: 'outpost-better-sqlite3-binding',
  setup(build) {
    build.onResolve({ filter: /^\.\/binding$/ }, (args) => {
      if (!/[\\/]better-sqlite3[\\/]lib[\\/]/.test(args.importer)) return undefined;
      return { path: 'better-sqlite3-binding', namespace: 'outpost-shim' };
    });
    build.onLoad({ filter: /.*/, namespace: 'outpost-shim' }, () => ({
      loader: 'js',
      contents: `
const { createRequire } = require('node:module');
const fs = require('node:fs');
const path = require('node:path');
let loaded;
exports.getBinding = function getBinding(nativeBinding) {
  if (nativeBinding && typeof nativeBinding === 'object') return nativeBinding;
  if (loaded) return loaded;
  const req = createRequire(__filename);
  let dir;
  try {
    dir = path.dirname(req.resolve('better-sqlite3/package.json'));
  } catch (cause) {
    throw new Error('cannot find better-sqlite3 from ' + __filename + ': run the bundle from a checkout with node_modules, or run the packaged executable', { cause });
  }
  const compiled = path.join(dir, 'build', 'Release', 'better_sqlite3.node');
  const prebuilt = path.join(dir, 'prebuilds', process.platform + '-' + process.arch + '.node');
  return (loaded = req(fs.existsSync(compiled) ? compiled : prebuilt));
};`,
    }));
  },
};

/**
 * Optional packages that dependencies `require` inside try/catch and that are not installed.
 * Left alone, esbuild keeps such a require as is, and inside the executable Node's SEA `require`
 * then prints a warning on stderr before throwing. A stub throws the same MODULE_NOT_FOUND
 * error a missing package would, silently.
 */
export const OPTIONAL_MODULES: readonly string[] = [
  'bufferutil', // ws; also switched off by the WS_NO_BUFFER_UTIL define
  'utf-8-validate', // ws; also switched off by WS_NO_UTF_8_VALIDATE
  'encoding', // node-fetch (via @kubernetes/client-node): only for non-UTF-8 response charsets
  'supports-color', // debug (via agent-base/socks): colors for DEBUG output
  'pg-native', // pg: only for its libpq binding (pg.native), which the hub does not use
];

const optionalModuleStubs: esbuild.Plugin = {
  name: 'outpost-optional-modules',
  setup(build) {
    const names = OPTIONAL_MODULES.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
    build.onResolve({ filter: new RegExp(`^(${names})$`) }, (args) => ({
      path: args.path,
      namespace: 'outpost-optional',
    }));
    build.onLoad({ filter: /.*/, namespace: 'outpost-optional' }, (args) => ({
      loader: 'js',
      contents: `const e = new Error(${JSON.stringify(`Cannot find module '${args.path}' (not packaged: optional)`)}); e.code = 'MODULE_NOT_FOUND'; throw e;`,
    }));
  },
};

/**
 * Automerge's wasm-bindgen loader asks `typeof Response === 'function' && x instanceof Response`
 * (and the same of `Request`) before instantiating the wasm. We always pass the bytes, but reading
 * those globals in Node loads the WHATWG fetch implementation (Node's bundled undici) for nothing:
 * ~4 MB of the edge agent's heap (docs/benchmarks.md, footprint). The checks become `false`; the
 * build fails if they are not found, so an Automerge upgrade that changes them is noticed.
 */
export const AUTOMERGE_FETCH_CHECKS = [
  /typeof Response === ['"]function['"]/g,
  /typeof Request === ['"]function['"]/g,
] as const;

const automergeWithoutFetch: esbuild.Plugin = {
  name: 'outpost-automerge-without-fetch',
  setup(build) {
    build.onLoad(
      { filter: /[\\/]@automerge[\\/]automerge[\\/].*[\\/](web|workerd)[\\/]automerge_wasm\.js$/ },
      async (args) => {
        let contents = await fs.promises.readFile(args.path, 'utf8');
        for (const re of AUTOMERGE_FETCH_CHECKS) {
          const before = contents;
          contents = contents.replace(re, 'false');
          if (contents === before)
            throw new Error(
              `${args.path}: ${re.source} not found; review automergeWithoutFetch in build/sea/bundle.ts`,
            );
        }
        return { contents, loader: 'js' };
      },
    );
  },
};

/**
 * Packages bundled apart, each group into `side/<name>.cjs` beside the bundle (an SEA asset inside
 * the executable), and loaded only when code that imports them first runs. V8 reads every byte of
 * the bundle's source at start, and the executable's pages holding it stay resident, so code the
 * edge agent never runs still cost it memory: these packages were 2.7 of the bundle's 4.9 MB
 * (docs/benchmarks.md, footprint). The Kubernetes client and schemas are used by the kubernetes
 * driver and by validation on the hub and in the CLI; the X.509 library by the hub's CA. A side
 * bundle holds its own copies of the small packages it shares with the bundle (their instances are
 * never mixed: only the group's own exports cross over).
 */
export const SIDE_BUNDLES: Readonly<Record<string, readonly string[]>> = {
  kubernetes: ['kubernetes-models', '@kubernetes/client-node'],
  x509: ['@peculiar/x509'],
  // The hub's optional S3 sink (hub/data/s3-sink.ts): ~1 MB that no edge runs.
  s3: ['@aws-sdk/client-s3', '@aws-sdk/lib-storage'],
};

export const sideAssetKey = (name: string): string => `side/${name}.cjs`;

/**
 * Worker threads' entry files (relative to the entry's folder), each bundled apart into
 * `side/<name>.cjs` when the entry uses the module that starts it: a worker runs a file or source
 * text of its own, never modules of the bundle. Whoever starts one finds it beside the bundle or as
 * the executable's asset (hub/state/pg/worker-channel.ts: the `pg` client of the hub's PostgreSQL).
 */
export const WORKER_BUNDLES: Readonly<Record<string, { entry: string; startedBy: string }>> = {
  'pg-worker': { entry: 'hub/state/pg/worker.ts', startedBy: 'hub/state/pg/worker-channel.ts' },
};

const SIDE_LOADER = 'outpost-side-loader';

/**
 * The loader inside the bundle: the asset's source inside the executable, compiled once as a
 * CommonJS module, else the file beside the bundle (`node dist/outpost.cjs`) required as one, so
 * Node's on-disk code cache covers it when NODE_COMPILE_CACHE is set (the tests' hubs: ~70 ms of
 * each hub's start was compiling the three side bundles). Its `require` is the bundle's own: a
 * side bundle, checked like the bundle, needs Node's built-in modules only.
 */
const SIDE_LOADER_SOURCE = `
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const loaded = new Map();
function sideSource(name) {
  const key = 'side/' + name + '.cjs';
  let sea = null;
  try {
    const s = require('node:sea');
    if (s.isSea()) sea = s;
  } catch {}
  if (sea) return { code: sea.getAsset(key, 'utf8'), file: path.join(path.dirname(process.execPath), key) };
  const file = path.join(__dirname, key);
  try {
    fs.accessSync(file);
    return { file };
  } catch (cause) {
    throw new Error('cannot load ' + file + ' (' + cause.message + '): it is built beside the bundle by npm run build; keep the side/ folder next to ' + path.basename(__filename), { cause });
  }
}
exports.sideModule = function sideModule(name, specifier) {
  let exp = loaded.get(name);
  if (!exp) {
    const { code, file } = sideSource(name);
    if (code === undefined) {
      // A file: Node's loader, whose on-disk code cache (NODE_COMPILE_CACHE) then covers it too.
      exp = require(file).modules;
    } else {
      const fn = vm.compileFunction(code, ['exports', 'require', 'module', '__filename', '__dirname'], { filename: file });
      const mod = { exports: {} };
      fn.call(mod.exports, mod.exports, require, mod, file, path.dirname(file));
      exp = mod.exports.modules;
    }
    loaded.set(name, exp);
  }
  if (!(specifier in exp)) throw new Error('side bundle ' + name + ' has no ' + specifier + ': rebuild with npm run build');
  return exp[specifier];
};`;

/**
 * What a module imports from `spec`: the names of `import { a, b as c }` (type-only names left
 * out), or '*' for a namespace import, a default import or anything this does not recognize. A
 * side bundle re-exports just those names, so esbuild still drops the rest of the package.
 */
export function importedNames(source: string, spec: string): Set<string> | '*' {
  const quoted = spec.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const names = new Set<string>();
  const re = new RegExp(`(import|export)\\s+(type\\s+)?([^;]*?)\\s+from\\s+['"]${quoted}['"]`, 'g');
  let found = false;
  for (const m of source.matchAll(re)) {
    found = true;
    if (m[2]) continue; // `import type { ... }`: gone after TypeScript
    const clause = m[3]!.trim();
    const braces = /^\{([^}]*)\}$/.exec(clause);
    if (!braces) return '*';
    for (const part of braces[1]!.split(',')) {
      const p = part.trim();
      if (!p || p.startsWith('type ')) continue;
      names.add(p.split(/\s+as\s+/)[0]!.trim());
    }
  }
  return found ? names : '*';
}

function sideGroupOf(spec: string): string | undefined {
  for (const [name, pkgs] of Object.entries(SIDE_BUNDLES))
    if (pkgs.some((p) => spec === p || spec.startsWith(`${p}/`))) return name;
  return undefined;
}

/** Turns every import of a SIDE_BUNDLES package into a lookup in its side bundle, recording what was imported. */
export interface SideImports {
  /** Import path -> names imported from it, or '*' for the whole module. */
  specifiers: Map<string, Set<string> | '*'>;
  resolveDir: string;
}

function sideBundlesPlugin(used: Map<string, SideImports>): esbuild.Plugin {
  return {
    name: 'outpost-side-bundles',
    setup(build) {
      build.onResolve({ filter: new RegExp(`^${SIDE_LOADER}$`) }, (args) => ({
        path: args.path,
        namespace: 'outpost-side',
      }));
      build.onResolve({ filter: /^[@a-z]/ }, (args) => {
        const group = sideGroupOf(args.path);
        if (!group || args.namespace === 'outpost-side') return undefined;
        const entry = used.get(group) ?? { specifiers: new Map(), resolveDir: args.resolveDir };
        let names: Set<string> | '*' = '*';
        try {
          if (args.kind === 'import-statement')
            names = importedNames(fs.readFileSync(args.importer, 'utf8'), args.path);
        } catch {
          /* not a file: take the whole module */
        }
        const had = entry.specifiers.get(args.path) ?? new Set<string>();
        entry.specifiers.set(args.path, had === '*' || names === '*' ? '*' : new Set([...had, ...names]));
        used.set(group, entry);
        return { path: `${group}:${args.path}`, namespace: 'outpost-side' };
      });
      build.onLoad({ filter: /.*/, namespace: 'outpost-side' }, (args) => {
        if (args.path === SIDE_LOADER) return { loader: 'js', contents: SIDE_LOADER_SOURCE };
        const i = args.path.indexOf(':');
        const [group, spec] = [args.path.slice(0, i), args.path.slice(i + 1)];
        return {
          loader: 'js',
          contents: `module.exports = require(${JSON.stringify(SIDE_LOADER)}).sideModule(${JSON.stringify(group)}, ${JSON.stringify(spec)});`,
        };
      });
    },
  };
}

const BUILTINS = new Set(builtinModules);
const isBuiltin = (p: string): boolean => BUILTINS.has(p.replace(/^node:/, '')) || p.startsWith('node:');

function packageOf(input: string): string {
  const i = input.lastIndexOf('node_modules/');
  if (i < 0) return '(project)';
  const parts = input.slice(i + 'node_modules/'.length).split('/');
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

function buildOptions(info: BuildInfo): esbuild.BuildOptions {
  return {
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    // Class and function names stay readable in errors and logs (`err.name`, constructor names).
    keepNames: true,
    // V8 keeps the whole script source on the heap for the life of the process, and a source
    // holding one non-ASCII character (comments of dependencies have a few) is stored two bytes
    // a character: minifying drops the comments and the whitespace. `charset: 'ascii'` (esbuild's
    // default, said here on purpose) escapes non-ASCII in strings, so the source stays one-byte.
    minifyWhitespace: true,
    minifySyntax: true,
    charset: 'ascii',
    sourcemap: 'linked',
    sourcesContent: false,
    legalComments: 'none',
    metafile: true,
    logLevel: 'silent',
    banner: { js: BANNER },
    define: {
      __OUTPOST_VERSION__: JSON.stringify(info.version),
      __OUTPOST_COMMIT__: JSON.stringify(info.commit),
      'import.meta.url': IMPORT_META_URL,
      // ws would otherwise try to require the optional native modules bufferutil and utf-8-validate.
      'process.env.WS_NO_BUFFER_UTIL': '"1"',
      'process.env.WS_NO_UTF_8_VALIDATE': '"1"',
    },
    // Node's own `punycode` module is deprecated and warns on stderr when required (DEP0040, a
    // runtime warning since Node 21); the Kubernetes client's node-fetch -> whatwg-url -> tr46
    // require it. The userland package is the same code without the warning.
    alias: { punycode: 'punycode/' },
  };
}

async function build(what: string, options: esbuild.BuildOptions): Promise<esbuild.BuildResult<{ metafile: true }>> {
  try {
    return (await esbuild.build(options)) as esbuild.BuildResult<{ metafile: true }>;
  } catch (cause) {
    // esbuild's message lists every error with file:line; top-level await is the usual one (CJS has none).
    throw new Error(`bundling ${what} with esbuild failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
  }
}

/** The warnings as text; throws on what the executable could not run (see the comments). */
async function checkResult(result: esbuild.BuildResult<{ metafile: true }>): Promise<string[]> {
  const warnings = await esbuild.formatMessages(result.warnings, { kind: 'warning', color: false });
  // Any other import.meta property (dirname, resolve) would be empty at runtime: refuse to ship that.
  const fatal = result.warnings.filter((w) => w.id === 'empty-import-meta');
  if (fatal.length > 0) {
    throw new Error(
      `import.meta used in a way the CommonJS bundle cannot provide:\n${warnings.join('\n')}\nuse import.meta.url only (the build defines it), or __dirname-free code`,
    );
  }
  // Anything esbuild could not resolve stays a runtime require(), which the executable cannot
  // satisfy (its require only loads built-in modules): make that a build error, not a field bug.
  // Only calls can slip through: an unresolvable `import` statement is an esbuild error, and one
  // listed as external was dropped because TypeScript used it for types only.
  const RUNTIME_KINDS = new Set(['require-call', 'require-resolve', 'dynamic-import']);
  const unresolved: string[] = [];
  for (const [input, meta] of Object.entries(result.metafile.inputs)) {
    for (const imp of meta.imports) {
      if (imp.external && RUNTIME_KINDS.has(imp.kind) && !isBuiltin(imp.path))
        unresolved.push(`${imp.path} (required by ${input})`);
    }
  }
  if (unresolved.length > 0) {
    throw new Error(
      `the bundle would require modules at runtime that the executable cannot load:\n  ${unresolved.join('\n  ')}\n` +
        'install them, or if the code copes with their absence add them to OPTIONAL_MODULES in build/sea/bundle.ts',
    );
  }
  return warnings;
}

export async function bundle(entry: string, outFile: string, info: BuildInfo): Promise<BundleResult> {
  const used = new Map<string, SideImports>();
  const result = await build(entry, {
    ...buildOptions(info),
    entryPoints: [entry],
    outfile: outFile,
    plugins: [bindingShim, optionalModuleStubs, automergeWithoutFetch, sideBundlesPlugin(used)],
  });
  const warnings = await checkResult(result);
  const sideDir = path.join(path.dirname(outFile), 'side');
  fs.rmSync(sideDir, { recursive: true, force: true });
  const sideBundles: SideBundle[] = [];
  for (const [name, { specifiers, resolveDir }] of [...used.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const specs = [...specifiers.keys()].sort();
    const importOf = (sp: string, i: number): string => {
      const names = specifiers.get(sp)!;
      return names === '*'
        ? `import * as m${i} from ${JSON.stringify(sp)};`
        : `import { ${[...names].map((n, j) => `${n} as m${i}_${j}`).join(', ')} } from ${JSON.stringify(sp)};\nconst m${i} = { ${[...names].map((n, j) => `${n}: m${i}_${j}`).join(', ')} };`;
    };
    const file = path.join(sideDir, `${name}.cjs`);
    const side = await build(`the side bundle ${name}`, {
      ...buildOptions(info),
      stdin: {
        // ESM imports: some packages export their paths for `import` only (kubernetes-models).
        contents: `${specs.map(importOf).join('\n')}\nexport const modules = {\n${specs.map((sp, i) => `  ${JSON.stringify(sp)}: m${i},`).join('\n')}\n};\n`,
        resolveDir,
        sourcefile: `side-${name}.js`,
        loader: 'js',
      },
      outfile: file,
      plugins: [optionalModuleStubs],
    });
    warnings.push(...(await checkResult(side)));
    sideBundles.push({ name, file, assetKey: sideAssetKey(name), bytes: fs.statSync(file).size, specifiers: specs });
  }
  const root = path.dirname(path.resolve(entry));
  const inputs = new Set(Object.keys(result.metafile.inputs).map((i) => path.resolve(i)));
  for (const [name, w] of Object.entries(WORKER_BUNDLES)) {
    if (!inputs.has(path.join(root, w.startedBy))) continue;
    const file = path.join(sideDir, `${name}.cjs`);
    const worker = await build(`the worker ${w.entry}`, {
      ...buildOptions(info),
      entryPoints: [path.join(root, w.entry)],
      outfile: file,
      plugins: [optionalModuleStubs],
    });
    warnings.push(...(await checkResult(worker)));
    sideBundles.push({ name, file, assetKey: sideAssetKey(name), bytes: fs.statSync(file).size, specifiers: [] });
  }
  const byPkg = new Map<string, number>();
  for (const out of Object.values(result.metafile.outputs)) {
    for (const [input, meta] of Object.entries(out.inputs)) {
      const key = packageOf(input);
      byPkg.set(key, (byPkg.get(key) ?? 0) + meta.bytesInOutput);
    }
  }
  return {
    outFile,
    bytes: fs.statSync(outFile).size,
    inputsByPackage: [...byPkg.entries()].sort((a, b) => b[1] - a[1]),
    warnings,
    sideBundles,
  };
}

/** Absolute path of the source map esbuild writes beside a bundle. */
export function sourceMapOf(outFile: string): string {
  return path.resolve(`${outFile}.map`);
}
