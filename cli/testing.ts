/**
 * @module Test helpers for the CLI: run a command line in-process with captured output, and a small
 * HTTP server on 127.0.0.1 that answers like the hub's API (docs/api.md) and records requests.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { PassThrough } from 'node:stream';
import { Command } from 'commander';
import type { CliDeps } from './context.js';
import { exitCodeOf, formatError, shouldPrintError } from './errors.js';
import { registerEdgeAdminCommands, registerOperatorCommands } from './index.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  stdin?: string;
  /** Pretend stdin/stdout are terminals. */
  tty?: boolean;
  answer?: boolean;
  /** Replaces the clock and sleep: each sleep advances the fake clock, so watches and timeouts need no waiting. */
  fakeClock?: { now: number };
  /** With fakeClock: called at each sleep (1, 2, ...), e.g. to change something while a watch runs. */
  onSleep?: (n: number) => Promise<void> | void;
  homedir?: string;
}

function writer(tty: boolean): { write(s: string): boolean; isTTY: boolean; text: string } {
  return {
    text: '',
    isTTY: tty,
    write(s: string) {
      this.text += s;
      return true;
    },
  };
}

/** Runs `outpost ARGS` the way main.ts does (exitOverride, exit code mapping), in this process. */
export async function runCli(args: string[], opts: RunOptions = {}): Promise<CliRun & { questions: string[] }> {
  const stdout = writer(!!opts.tty);
  const stderr = writer(!!opts.tty);
  const stdin = new PassThrough() as PassThrough & { isTTY?: boolean };
  stdin.isTTY = !!opts.tty;
  stdin.end(opts.stdin ?? '');
  const questions: string[] = [];
  const clock = opts.fakeClock;
  let sleeps = 0;
  const deps: Partial<CliDeps> = {
    stdout,
    stderr,
    stdin,
    env: opts.env ?? {},
    homedir: opts.homedir ?? os.tmpdir(),
    async confirm(q) {
      questions.push(q);
      return !!opts.answer;
    },
    ...(clock
      ? {
          now: () => clock.now,
          sleep: async (ms: number) => {
            clock.now += ms;
            await opts.onSleep?.(++sleeps);
            await new Promise((r) => setImmediate(r));
          },
        }
      : {}),
  };
  const program = new Command('outpost')
    .exitOverride()
    .configureOutput({ writeOut: (s) => stdout.write(s), writeErr: (s) => stderr.write(s) });
  registerOperatorCommands(program, deps);
  const edge = program.command('edge').description('edge agent and edge administration');
  registerEdgeAdminCommands(edge, deps);
  let code = 0;
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (err) {
    code = exitCodeOf(err);
    if (shouldPrintError(err)) stderr.write(`error: ${formatError(err)}\n`);
  }
  return { code, stdout: stdout.text, stderr: stderr.text, questions };
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

export interface FakeAnswer {
  status?: number;
  body?: unknown;
  /** Sent as is instead of JSON. */
  raw?: string;
}

export type Handler = (req: RecordedRequest) => FakeAnswer | undefined;

/** An imitation of the hub's REST API: routes are `METHOD /path` keys; unknown routes get the hub's 404. */
export class FakeHub {
  readonly requests: RecordedRequest[] = [];
  readonly routes = new Map<string, Handler>();
  private server!: http.Server;
  url = '';

  static async start(tls?: { cert: string; key: string }): Promise<FakeHub> {
    const hub = new FakeHub();
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => hub.handle(req, res);
    hub.server = tls ? https.createServer({ cert: tls.cert, key: tls.key }, handler) : http.createServer(handler);
    await new Promise<void>((resolve) => hub.server.listen(0, '127.0.0.1', resolve));
    hub.url = `${tls ? 'https' : 'http'}://127.0.0.1:${(hub.server.address() as AddressInfo).port}`;
    return hub;
  }

  on(route: string, h: Handler | FakeAnswer): this {
    this.routes.set(route, typeof h === 'function' ? h : () => h);
    return this;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://x');
      const text = Buffer.concat(chunks).toString('utf8');
      const rec: RecordedRequest = {
        method: req.method ?? '',
        path: u.pathname,
        query: Object.fromEntries(u.searchParams),
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      this.requests.push(rec);
      const h = this.routes.get(`${rec.method} ${rec.path}`);
      const r = h?.(rec) ?? {
        status: 404,
        body: { error: { code: 'not_found', message: `no route ${rec.method} ${rec.path}` } },
      };
      res.writeHead(r.status ?? 200, { 'content-type': 'application/json' });
      res.end(r.raw ?? (r.body === undefined ? '' : JSON.stringify(r.body)));
    });
  }

  find(method: string, p: string): RecordedRequest | undefined {
    return this.requests.find((r) => r.method === method && r.path === p);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A syntactically valid API token (the fake hub accepts anything); `fp` pins a CA, default none. */
export function apiToken(fp = 'none'): string {
  return `opt1.${fp}.0123456789abcdef.${'A'.repeat(42)}w`;
}
