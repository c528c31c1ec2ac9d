/**
 * @module The hub under test: the real `outpost hub` command in its own process, plain HTTP on
 * loopback, its log in the run directory. By default the product itself, dist/outpost (built by
 * the harness when older than its sources); `--hub-from-source` runs main.ts through tsx instead
 * (quicker to iterate on, but it measures tsx's loader and an unbundled module graph too).
 * Restarting keeps the data directory and the port, as an operator's restart would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuMs, rssBytes, sleep } from './sys.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface HubProcessOptions {
  dataDir: string;
  logFile: string;
  /** Write a V8 CPU profile of the hub into this directory when it exits (`--cpu-prof`). */
  cpuProfDir?: string;
  logLevel?: string;
  /** `--database URL`: the hub's tables in this PostgreSQL database (a hub replica), not SQLite in --data. */
  database?: string;
  /** `--identity-key FILE`: the replicas' one identity (and admin token), as operators run them. */
  identityKeyFile?: string;
  /** The executable to run (dist/outpost); undefined: main.ts through tsx. */
  binary?: string;
  /** Serve HTTPS with the hub's own CA (DATA/tls/ca.pem), as a hub runs by default; else --insecure-http. */
  tls?: boolean;
}

/** How long a hub may take to print its URL; tsx compiles the sources on a cold cache. */
const START_TIMEOUT_MS = 60_000;

/** The hub's cap per source address in the bench: above any fleet it runs (the files limit bounds it anyway). */
const BENCH_CONNECTIONS_PER_ADDRESS = 100_000;

export class HubProcess {
  child: ChildProcess | undefined;
  url = '';
  port = 0;
  adminToken = '';
  startedAt = 0;
  readyAt = 0;

  private readonly opts: HubProcessOptions;
  constructor(opts: HubProcessOptions) {
    this.opts = { ...opts };
  }

  /** The CA a client must trust to reach a TLS hub (undefined for plain HTTP). */
  caPem(): string | undefined {
    return this.opts.tls ? fs.readFileSync(path.join(this.opts.dataDir, 'tls', 'ca.pem'), 'utf8') : undefined;
  }

  get logFile(): string {
    return this.opts.logFile;
  }

  /** Whether the process runs (started and not exited). */
  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Sets the PostgreSQL database of a replica (known once the harness's server runs) and the replicas' identity key, before start. */
  setDatabase(url: string, identityKeyFile: string): void {
    this.opts.database = url;
    this.opts.identityKeyFile = identityKeyFile;
  }

  get pid(): number {
    if (!this.child?.pid) throw new Error('the hub process is not running');
    return this.child.pid;
  }

  rss(): number | undefined {
    return this.child?.pid ? rssBytes(this.child.pid) : undefined;
  }

  cpuMs(): number | undefined {
    return this.child?.pid ? cpuMs(this.child.pid) : undefined;
  }

  /** Starts `outpost hub` and resolves once it listens (on the previous port after a restart). */
  async start(): Promise<void> {
    const log = fs.openSync(this.opts.logFile, 'a');
    const args = [
      'hub',
      ...(this.opts.tls ? [] : ['--insecure-http']),
      '--data',
      this.opts.dataDir,
      '--listen',
      `127.0.0.1:${this.port}`,
      ...(this.opts.database ? ['--database', this.opts.database] : []),
      ...(this.opts.identityKeyFile ? ['--identity-key', this.opts.identityKeyFile] : []),
      // Every simulated edge dials from 127.0.0.1, as no real fleet does: at the default cap (1,024
      // connections of one address not yet upgraded) a storm of thousands was partly refused, and
      // a refused edge of a replica moves to another (docs/benchmarks.md, issue #22, eighth session).
      '--max-connections-per-address',
      String(BENCH_CONNECTIONS_PER_ADDRESS),
    ];
    const { file, argv, nodeOptions } = hubCommand(this.opts, args);
    this.startedAt = Date.now();
    const child = spawn(file, argv, {
      cwd: ROOT,
      // BENCH_HUB_NODE_OPTIONS: V8 flags for the hub alone (e.g. heap sizing), as NODE_OPTIONS
      // would be set in the hub's systemd unit; the simulator keeps its own.
      env: {
        ...hubEnv(),
        OUTPOST_LOG_LEVEL: this.opts.logLevel ?? 'info',
        ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
      },
      stdio: ['ignore', log, 'pipe'],
    });
    fs.closeSync(log);
    this.child = child;
    // A harness that dies (Ctrl-C, crash) must not leave a hub behind.
    const reap = () => child.kill('SIGKILL');
    process.once('exit', reap);
    child.once('exit', () => process.off('exit', reap));
    let stderr = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `the hub did not start within ${START_TIMEOUT_MS / 1000} s; its log: ${this.opts.logFile}; stderr: ${stderr.slice(-1000)}`,
            ),
          ),
        START_TIMEOUT_MS,
      );
      child.stderr!.on('data', (c: Buffer) => {
        stderr += c.toString();
        fs.appendFileSync(this.opts.logFile, c);
        const m = /outpost hub listening on (\S+)/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.once('exit', (code, sig) => {
        clearTimeout(timer);
        reject(
          new Error(
            `the hub exited (${code ?? sig}) before listening; its log: ${this.opts.logFile}; stderr: ${stderr.slice(-1000)}`,
          ),
        );
      });
    });
    this.readyAt = Date.now();
    this.url = url;
    this.port = Number(new URL(url).port);
    this.adminToken = fs.readFileSync(path.join(this.opts.dataDir, 'admin.token'), 'utf8').trim();
  }

  /** SIGTERM (graceful: sessions persist their sync states), SIGKILL after a grace period. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    const done = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
    if (!done) {
      child.kill('SIGKILL');
      await exited;
    }
  }
}

/**
 * The command line of a hub: the executable with `args`, or node + tsx + main.ts. Node flags do not
 * reach a single executable on its command line, so for the binary the CPU profile and
 * BENCH_HUB_NODE_OPTIONS go through NODE_OPTIONS; BENCH_HUB_V8_FLAGS (flags Node refuses in
 * NODE_OPTIONS) can only be given to a hub run from the sources.
 */
export function hubCommand(
  opts: Pick<HubProcessOptions, 'binary' | 'cpuProfDir'>,
  args: string[],
): { file: string; argv: string[]; nodeOptions: string | undefined } {
  const prof = opts.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', opts.cpuProfDir] : [];
  const v8 = process.env.BENCH_HUB_V8_FLAGS?.split(/\s+/).filter(Boolean) ?? [];
  const extra = process.env.BENCH_HUB_NODE_OPTIONS;
  if (opts.binary) {
    if (v8.length)
      throw new Error(
        'BENCH_HUB_V8_FLAGS reaches only a hub run from the sources (a single executable takes Node flags through NODE_OPTIONS alone): add --hub-from-source, or give the flags in BENCH_HUB_NODE_OPTIONS if Node accepts them there',
      );
    const nodeOptions = [...prof, ...(extra ? [extra] : [])].join(' ');
    return { file: opts.binary, argv: args, nodeOptions: nodeOptions || undefined };
  }
  return {
    file: process.execPath,
    argv: ['--import', 'tsx', ...prof, ...v8, path.join(ROOT, 'main.ts'), ...args],
    nodeOptions: extra,
  };
}

/** The harness's environment without what tsx and vitest set for themselves (a hub is started as a user would). */
function hubEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('VITEST') && k !== 'NODE_OPTIONS' && k !== 'TSX') env[k] = v;
  return env;
}
