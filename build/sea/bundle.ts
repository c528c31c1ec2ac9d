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

const BUILTINS = new Set(builtinModules);
const isBuiltin = (p: string): boolean => BUILTINS.has(p.replace(/^node:/, '')) || p.startsWith('node:');

function packageOf(input: string): string {
  const i = input.lastIndexOf('node_modules/');
  if (i < 0) return '(project)';
  const parts = input.slice(i + 'node_modules/'.length).split('/');
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

export async function bundle(entry: string, outFile: string, info: BuildInfo): Promise<BundleResult> {
  let result: esbuild.BuildResult<{ metafile: true }>;
  try {
    result = await esbuild.build({
      entryPoints: [entry],
      outfile: outFile,
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
      plugins: [bindingShim, optionalModuleStubs, automergeWithoutFetch],
    });
  } catch (cause) {
    // esbuild's message lists every error with file:line; top-level await is the usual one (CJS has none).
    throw new Error(
      `bundling ${entry} with esbuild failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
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
  };
}

/** Absolute path of the source map esbuild writes beside a bundle. */
export function sourceMapOf(outFile: string): string {
  return path.resolve(`${outFile}.map`);
}
