/**
 * @module `outpost logs`, `outpost exec`, `outpost edge action`, `outpost edge kubeconfig` and
 * `outpost edge proxy-url`: commands that reach into an edge through the hub's tunnel
 * (docs/tunnel.md). Logs stream as they arrive; exec exits with the command's exit code.
 */
import http from 'node:http';
import https from 'node:https';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { stringify as toYaml } from 'yaml';
import { parseDuration } from '../core/durations.js';
import { isValidName } from '../core/ids.js';
import { describeHttpError, HubClient, type HubConnection } from './client.js';
import { resolveConnection } from './config.js';
import type { CliDeps } from './context.js';
import { CliError } from './errors.js';
import { line } from './output.js';

function parseEdgeRef(s: string): string {
  const m = /^(?:edges?\/)?([^/]+)$/.exec(s);
  if (!m || !isValidName(m[1]))
    throw new InvalidArgumentError(`invalid edge "${s}": write edge/NAME, e.g. edge/shop-12`);
  return m[1];
}

function parseName(what: string) {
  return (s: string): string => {
    if (!isValidName(s))
      throw new InvalidArgumentError(`invalid ${what} name "${s}": 1-63 lower-case letters, digits or "-"`);
    return s;
  };
}

function parsePort(s: string): number {
  if (!/^\d{1,5}$/.test(s) || Number(s) < 1 || Number(s) > 65535)
    throw new InvalidArgumentError(`invalid port "${s}": give a declared containerPort of the workload (1-65535)`);
  return Number(s);
}

function parseSessionTtl(s: string): number {
  let ms: number;
  try {
    ms = parseDuration(s);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  if (ms < 1000 || ms > 12 * 3600_000) throw new InvalidArgumentError(`--ttl ${s}: give between 1s and 12h, e.g. 30m`);
  return Math.round(ms / 1000);
}

function parseTail(s: string): number {
  if (!/^\d+$/.test(s)) throw new InvalidArgumentError(`--tail ${s}: give a whole number of lines`);
  return Number(s);
}

/** `--since 5m` (a duration with a unit: s, m, h, d) or `--since 2026-01-02T15:04:05Z` (RFC 3339). */
function parseSince(s: string): { sinceSeconds: string } | { sinceTime: string } {
  if (/^\d+(?:\.\d+)?(s|m|h|d)$/.test(s.trim()))
    return { sinceSeconds: String(Math.max(1, Math.ceil(parseDuration(s) / 1000))) };
  if (
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(s.trim()) &&
    Number.isFinite(Date.parse(s))
  )
    return { sinceTime: s.trim() };
  throw new InvalidArgumentError(
    `--since ${s}: give a duration with a unit (30s, 5m, 2h, 1d) or an RFC 3339 time (2026-01-02T15:04:05Z)`,
  );
}

/** A streaming request to the hub: resolves with the response once its head arrived (2xx), else rejects with the hub's error. */
function open(conn: HubConnection, method: string, path: string, body?: unknown): Promise<http.IncomingMessage> {
  const url = new URL(conn.hub.replace(/\/+$/, '') + path);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const tls = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const req = (tls ? https : http).request(
      url,
      {
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${conn.token}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
        },
        ...(tls && conn.ca ? { ca: conn.ca } : {}),
      },
      (res) => {
        if ((res.statusCode ?? 0) < 300) return resolve(res);
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          reject(describeHttpError(res.statusCode ?? 0, parsed, conn.hub));
        });
      },
    );
    req.on('error', (err) =>
      reject(new CliError(`request to the hub at ${conn.hub} failed: ${err.message}`, { cause: err })),
    );
    req.end(payload);
  });
}

async function readAll(res: http.IncomingMessage): Promise<string> {
  let text = '';
  for await (const c of res) text += (c as Buffer).toString();
  return text;
}

/**
 * The connection of this run. Streams and WebSockets go to one URL: with several (the hub's
 * replicas), the first that answers, tried in order (cli/failover.ts), first in the list returned.
 */
async function connection(deps: CliDeps): Promise<HubConnection> {
  const { conn } = await resolveConnection({ env: deps.env, homedir: deps.homedir });
  if (!conn.hubs || conn.hubs.length < 2) return conn;
  const client = new HubClient(conn, { onFailover: (note) => line(deps.stderr, note) });
  await client.get('/healthz');
  return { ...conn, hub: client.hub, hubs: [client.hub, ...client.hubs.filter((h) => h !== client.hub)] };
}

const edgePath = (edge: string, route: string): string => `/api/v1/edges/${encodeURIComponent(edge)}/${route}`;

interface LogsFlags {
  container?: string;
  follow?: boolean;
  tail?: number;
  since?: ReturnType<typeof parseSince>;
  sinceTime?: ReturnType<typeof parseSince>;
  timestamps?: boolean;
}

/** `outpost logs` and `outpost exec`, on the program. */
export function registerTunnelCommands(program: Command, deps: CliDeps): void {
  program
    .command('logs')
    .description("print a workload's logs on an edge, through the hub")
    .argument('<edge>', 'edge/NAME', parseEdgeRef)
    .argument('<workload>', 'the workload', parseName('workload'))
    .option('-c, --container <name>', 'the container (default: the first)')
    .option('-f, --follow', 'keep printing new lines until interrupted')
    .option('--tail <n>', 'only the last N lines', parseTail)
    .option('--since <when>', 'only lines newer than a duration (5m, 2h) or an RFC 3339 time', parseSince)
    .addOption(
      new Option('--since-time <time>', 'only lines since an RFC 3339 time (as kubectl)').argParser(parseSince),
    )
    .option('--timestamps', 'prefix each line with the RFC 3339 time it was written')
    .addHelpText(
      'after',
      '\nExamples:\n  outpost logs edge/shop-12 web --tail 100 --follow\n  outpost logs edge/shop-12 web --since 15m --timestamps',
    )
    .action(async (edge: string, workload: string, o: LogsFlags) => {
      if (o.since && o.sinceTime) throw new CliError('give --since or --since-time, not both');
      const conn = await connection(deps);
      const q = new URLSearchParams();
      if (o.container) q.set('container', o.container);
      if (o.follow) q.set('follow', 'true');
      if (o.tail !== undefined) q.set('tail', String(o.tail));
      for (const [k, v] of Object.entries(o.since ?? o.sinceTime ?? {})) q.set(k, v);
      if (o.timestamps) q.set('timestamps', 'true');
      const res = await open(conn, 'GET', `${edgePath(edge, 'logs')}/${workload}?${q}`);
      await new Promise<void>((resolve, reject) => {
        res.on('data', (c: Buffer) => deps.stdout.write(c.toString('utf8')));
        res.on('end', resolve);
        res.on('error', reject);
        res.on('aborted', () =>
          reject(
            new CliError(
              `the log stream of ${workload} on edge ${edge} broke off (the edge disconnected, the stream passed its deadline, or the token was revoked or expired)`,
            ),
          ),
        );
      });
    });

  program
    .command('exec')
    .description("run a command in a workload on an edge, through the hub; exits with the command's exit code")
    .argument('<edge>', 'edge/NAME', parseEdgeRef)
    .argument('<workload>', 'the workload', parseName('workload'))
    .argument('<command...>', 'the command and its arguments (after --)')
    .option('-c, --container <name>', 'the container (default: the first)')
    .addOption(new Option('-i, --stdin', 'pass stdin to the command (interactive; needs driver support)'))
    .addOption(new Option('-t, --tty', 'allocate a terminal (with -i)'))
    .addHelpText('after', '\nExample:\n  outpost exec edge/shop-12 web -- cat /etc/hostname')
    .action(
      async (
        edge: string,
        workload: string,
        command: string[],
        o: { container?: string; stdin?: boolean; tty?: boolean },
      ) => {
        const conn = await connection(deps);
        if (o.stdin || o.tty) {
          const { interactiveExec } = await import('./exec-interactive.js');
          const code = await interactiveExec(
            conn,
            edgePath(edge, 'exec'),
            workload,
            command,
            { container: o.container, tty: !!o.tty },
            deps,
          );
          if (code !== 0) throw new CliError('', { exitCode: code });
          return;
        }
        const res = await open(conn, 'POST', `${edgePath(edge, 'exec')}/${workload}`, {
          command,
          ...(o.container ? { container: o.container } : {}),
        });
        const r = JSON.parse(await readAll(res)) as { exitCode: number; stdout: string; stderr: string };
        deps.stdout.write(r.stdout);
        deps.stderr.write(r.stderr);
        // The command's own failure: nothing more to print, its exit code says it.
        if (r.exitCode !== 0) throw new CliError('', { exitCode: r.exitCode });
      },
    );
}

/** `outpost edge action` and `outpost edge kubeconfig`, on the `edge` command. */
export function registerEdgeTunnelCommands(edge: Command, deps: CliDeps): void {
  edge
    .command('action')
    .description('restart, stop or start a workload on an edge now (recorded as an event); stop holds until start')
    .argument('<name>', 'the edge', parseEdgeRef)
    .argument('<action>', 'restart, stop or start', (s: string) => {
      if (s !== 'restart' && s !== 'stop' && s !== 'start')
        throw new InvalidArgumentError(`unknown action "${s}": use restart, stop or start`);
      return s;
    })
    .argument('<workload>', 'the workload', parseName('workload'))
    .action(async (name: string, action: string, workload: string) => {
      const conn = await connection(deps);
      await new HubClient(conn).post(
        edgePath(name, 'actions'),
        { action, workload },
        { subject: { kind: 'edge', name } },
      );
      line(deps.stdout, `${action} of ${workload} on edge/${name} done`);
    });

  edge
    .command('proxy-url')
    .description(
      "print a link that opens a workload's web UI in a browser through the hub (works once, then a cookie for that port only)",
    )
    .argument('<name>', 'the edge', parseEdgeRef)
    .argument('<workload>', 'the workload', parseName('workload'))
    .argument('<port>', 'a declared containerPort of the workload', parsePort)
    .option('--ttl <duration>', 'how long the browser session lasts (default 1h, at most 12h)', parseSessionTtl)
    .addHelpText('after', '\nExample:\n  xdg-open "$(outpost edge proxy-url shop-12 web 8080)"')
    .action(async (name: string, workload: string, port: number, o: { ttl?: number }) => {
      const conn = await connection(deps);
      const r = await new HubClient(conn).post<{ path: string }>(
        edgePath(name, 'proxy-session'),
        { workload, port, ...(o.ttl ? { ttlSeconds: o.ttl } : {}) },
        { subject: { kind: 'edge', name } },
      );
      // The hub URL the user configured, not the Host the hub saw: behind a proxy they differ.
      line(deps.stdout, `${conn.hub.replace(/\/+$/, '')}${r.path}`);
    });

  edge
    .command('kubeconfig')
    .description("print a kubeconfig that reaches the edge's Kubernetes API through the hub with your token")
    .argument('<name>', 'the edge', parseEdgeRef)
    .addHelpText(
      'after',
      '\nExample:\n  outpost edge kubeconfig shop-12 > shop-12.yaml && kubectl --kubeconfig shop-12.yaml get pods -A',
    )
    .action(async (name: string) => {
      const conn = await connection(deps);
      deps.stdout.write(kubeconfigFor(conn, name));
    });
}

/**
 * The kubeconfig: server is the hub's kube route for the edge, CA the pinned hub CA, credential the
 * user's token; `ctx` names its cluster, user and context.
 */
export function kubeconfigFor(conn: HubConnection, edge: string, ctx = `outpost-${edge}`): string {
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: ctx,
        cluster: {
          server: `${conn.hub.replace(/\/+$/, '')}${edgePath(edge, 'kube')}`,
          ...(conn.ca ? { 'certificate-authority-data': Buffer.from(conn.ca).toString('base64') } : {}),
        },
      },
    ],
    users: [{ name: ctx, user: { token: conn.token } }],
    contexts: [{ name: ctx, context: { cluster: ctx, user: ctx } }],
    'current-context': ctx,
  });
}
