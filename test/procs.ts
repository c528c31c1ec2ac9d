/**
 * Real `outpost` processes for integration tests: a hub and edge agents spawned from main.ts, as the
 * run's bundle of it (test/outpost-bundle.ts) or, without one, through tsx.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { tunedLaunch } from '../edge/process-settings.js';
import { hubDatabase } from './fixtures/backend.js';
import { runCli } from './fixtures/cli.js';
import { ROOT, waitFor } from './helpers.js';

export const MAIN = path.join(ROOT, 'main.ts');

/**
 * Node's arguments that run `outpost`: the bundle of main.ts the run's globalSetup built
 * (test/outpost-bundle.ts: the same code, started in a fraction of tsx's time), else main.ts
 * through tsx.
 */
export function outpostArgs(): string[] {
  const bundle = process.env.OUTPOST_TEST_BUNDLE;
  return bundle && process.env.OUTPOST_TEST_SPAWN !== 'tsx' ? [bundle] : ['--import', 'tsx', MAIN];
}

import { freePort } from './ports.js';
export { freePort };

export class Proc {
  readonly child: ChildProcess;
  out = '';
  err = '';
  constructor(args: string[], env: Record<string, string> = {}) {
    const full = { ...process.env, OUTPOST_LOG_LEVEL: process.env.OUTPOST_TEST_LOG ? 'debug' : 'info', ...env };
    const argv = [process.execPath, ...outpostArgs(), ...args];
    // An agent starts as it would start itself again (edge/process-settings.ts): its V8 and malloc
    // settings already in place, so it does not re-execute Node, a start of ~0.2 CPU-s for each of
    // the ~250 agents a run spawns. The re-exec itself is proven in edge/process-settings.test.ts.
    const tuned = isAgent(args)
      ? tunedLaunch({ env: full, execPath: process.execPath, argv, execArgv: [], sea: false })
      : undefined;
    this.child = spawn(tuned?.file ?? process.execPath, (tuned?.args ?? argv).slice(1), {
      cwd: ROOT,
      env: tuned?.env ?? full,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (c: Buffer) => {
      this.out += c.toString();
      if (process.env.OUTPOST_TEST_LOG) process.stderr.write(c);
    });
    this.child.stderr!.on('data', (c: Buffer) => {
      this.err += c.toString();
      if (process.env.OUTPOST_TEST_LOG) process.stderr.write(c);
    });
  }
  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.alive) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill(signal);
    await exited;
  }
}

export interface HubProc {
  proc: Proc;
  url: string;
  token: string;
  ca?: string;
}

export async function startHubProc(
  dataDir: string,
  port: number,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<HubProc> {
  // A suite run again on PostgreSQL (test/fixtures/backend.ts) gets its hub there.
  const database = extra.includes('--database') ? undefined : await hubDatabase();
  const proc = new Proc(
    [
      'hub',
      '--data',
      dataDir,
      '--listen',
      `127.0.0.1:${port}`,
      ...extra,
      ...(database ? ['--database', database] : []),
    ],
    env,
  );
  const url = await waitFor(
    () =>
      /listening on (\S+)/.exec(proc.err)?.[1] ??
      (proc.alive ? null : Promise.reject(new Error(`hub exited: ${proc.err}`))),
    { timeout: 30_000, what: 'hub to listen' },
  );
  // A replica without --identity-key on a database whose admin token another made has none ('').
  const tokenFile = path.join(dataDir, 'admin.token');
  const token = fs.existsSync(tokenFile) ? fs.readFileSync(tokenFile, 'utf8').trim() : '';
  const caFile = path.join(dataDir, 'tls', 'ca.pem');
  return { proc, url, token, ...(fs.existsSync(caFile) ? { ca: fs.readFileSync(caFile, 'utf8') } : {}) };
}

export async function startEdgeProc(
  dataDir: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<Proc> {
  const proc = new Proc(['edge', '--data', dataDir, ...args], env);
  await waitFor(
    () =>
      /outpost edge \S+ running/.test(proc.err)
        ? true
        : proc.alive
          ? null
          : Promise.reject(new Error(`edge exited: ${proc.err}`)),
    { timeout: 30_000, what: 'edge agent to run' },
  );
  return proc;
}

/** `outpost edge [flags]`: the agent, the one command that tunes its process (main/edge-command.ts). */
function isAgent(args: string[]): boolean {
  return args[0] === 'edge' && (args[1] === undefined || args[1].startsWith('-'));
}

/**
 * Commands that need a process of their own: a hub or an edge agent (servers), what acts on this
 * host as the edge's own CLI (`edge local`, `install`, `uninstall`), and the program's own flags.
 */
export function needsProcess(args: string[]): boolean {
  const [a, b] = args;
  if (a === undefined || a.startsWith('-') || a === 'hub' || isAgent(args)) return true;
  return a === 'edge' && ['local', 'install', 'uninstall'].includes(b ?? '');
}

/**
 * Runs the CLI to completion: in this process (test/fixtures/cli.ts runCli, the same commands
 * main.ts wires, with this process's environment and `env`), or, for what needsProcess names, as
 * a spawned `outpost`. A spawned CLI cost 1.2-1.7 s per call, and most suites make dozens.
 */
export async function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  if (!needsProcess(args)) {
    const merged = { ...process.env, ...env };
    const r = await runCli(args, { env: merged, homedir: merged.HOME ?? os.homedir() });
    return { code: r.code, stdout: r.stdout, stderr: r.stderr };
  }
  const p = new Proc(args, env);
  const code = await new Promise<number>((r) => p.child.on('exit', (c) => r(c ?? 1)));
  return { code, stdout: p.out, stderr: p.err };
}

/** A TCP proxy on loopback that a test can cut and heal: the network between an edge and its hub. */
export class CuttableProxy {
  private server: net.Server;
  private sockets = new Set<net.Socket>();
  cut = false;
  port = 0;
  constructor(private readonly target: number) {
    this.server = net.createServer((client) => {
      if (this.cut) return client.destroy();
      const upstream = net.connect(this.target, '127.0.0.1');
      this.sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream).pipe(client);
    });
  }
  async listen(): Promise<number> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this.port;
  }
  /** Drops every connection and refuses new ones. */
  sever(): void {
    this.cut = true;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }
  heal(): void {
    this.cut = false;
  }
  close(): Promise<void> {
    this.sever();
    return new Promise((r) => this.server.close(() => r()));
  }
}
