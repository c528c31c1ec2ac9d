/**
 * @module Logs, exec and remote actions on the hub side of the tunnel (routes under
 * `/api/v1/edges/NAME/logs|exec|actions`). The edge runs them through its driver.
 */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { OutpostError } from '../../core/errors.js';
import { isValidName } from '../../core/ids.js';
import { actorOf } from '../auth/principal.js';
import { EXEC_STDERR, EXEC_STDOUT, TunnelError } from '../../sync/tunnel.js';
import { sendError, type RouteContext } from './routes.js';

/** Request bodies of exec and actions are small JSON. */
const MAX_JSON_BODY = 1024 * 1024;
/** Interactive exec frames follow Kubernetes' channel protocol: first byte 0 stdin, 1 stdout, 2 stderr, 3 status. */
const WS_STDIN = 0;
const WS_STATUS = 3;

export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_JSON_BODY) throw new OutpostError('too_large', `request body exceeds ${MAX_JSON_BODY} bytes`);
    chunks.push(c as Buffer);
  }
  try {
    const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new OutpostError('bad_request', 'the request body is not a JSON object');
}

function workloadOf(ctx: RouteContext, usage: string): string {
  const w = ctx.rest.replace(/^\//, '');
  if (!isValidName(w)) throw new OutpostError('bad_request', `use ${usage} (WORKLOAD a workload name)`);
  return w;
}

/** The first META of a stream, or the error that ended it first. */
function head(s: {
  once(e: 'meta', f: (m: Record<string, unknown>) => void): unknown;
  once(e: 'error', f: (e: Error) => void): unknown;
}): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    s.once('meta', resolve);
    s.once('error', reject);
  });
}

/** `sinceSeconds=N` or `sinceTime=RFC3339` (as the Kubernetes API names them), checked. */
function sinceOf(q: URLSearchParams): { sinceSeconds?: number; sinceMs?: number } {
  const seconds = q.get('sinceSeconds');
  const time = q.get('sinceTime');
  if (seconds !== null && time !== null)
    throw new OutpostError('bad_request', 'sinceSeconds and sinceTime: give one of them, not both');
  if (seconds !== null) {
    if (!/^\d{1,9}$/.test(seconds) || Number(seconds) < 1 || Number(seconds) > 315_360_000)
      throw new OutpostError(
        'bad_request',
        `sinceSeconds: must be a whole number of seconds from 1 to 315360000, not "${seconds}"`,
      );
    return { sinceSeconds: Number(seconds) };
  }
  if (time !== null) {
    const ms = RFC3339.test(time) ? Date.parse(time) : NaN;
    if (!Number.isFinite(ms) || ms < 0)
      throw new OutpostError(
        'bad_request',
        `sinceTime: must be an RFC 3339 time such as 2026-01-02T15:04:05Z, not "${time}"`,
      );
    return { sinceMs: ms };
  }
  return {};
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

export async function handleLogs(ctx: RouteContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const workload = workloadOf(
    ctx,
    `GET /api/v1/edges/${ctx.edge}/logs/WORKLOAD?container=C&follow=true&tail=N&sinceSeconds=S&timestamps=true`,
  );
  const q = new URL(req.url ?? '/', 'http://x').searchParams;
  const tail = q.get('tail');
  if (tail !== null && !/^\d+$/.test(tail))
    throw new OutpostError('bad_request', 'tail: must be a whole number of lines');
  const follow = q.get('follow') === 'true' || q.get('follow') === '1';
  const s = ctx.open(
    {
      type: 'logs',
      workload,
      ...(q.get('container') ? { container: q.get('container') } : {}),
      follow,
      ...(tail !== null ? { tail: Number(tail) } : {}),
      ...sinceOf(q),
      ...(q.get('timestamps') === 'true' || q.get('timestamps') === '1' ? { timestamps: true } : {}),
    },
    follow,
    `logs ${workload}`,
  );
  s.end();
  res.on('close', () => {
    if (!res.writableFinished) s.destroy();
  });
  await head(s);
  s.on('error', (err) => sendError(res, err));
  // Flushed at once so `--follow` shows the stream is open even before the first line.
  res.writeHead(200, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
  });
  res.flushHeaders();
  s.pipe(res);
}

export async function handleExec(
  ctx: RouteContext,
  req: IncomingMessage,
  res: ServerResponse | undefined,
): Promise<void> {
  const usage = `POST /api/v1/edges/${ctx.edge}/exec/WORKLOAD {"command": [...]}`;
  const workload = workloadOf(ctx, usage);
  if (ctx.upgrade) return interactive(ctx, req, workload);
  if (req.method !== 'POST')
    throw new OutpostError('bad_request', `use ${usage}, or a WebSocket for an interactive session`);
  const b = await readJson(req);
  const command = b.command;
  if (!Array.isArray(command) || command.length === 0 || !command.every((x) => typeof x === 'string'))
    throw new OutpostError('invalid', 'command: must be a non-empty array of strings, e.g. ["sh", "-c", "ls"]');
  if (b.container !== undefined && typeof b.container !== 'string')
    throw new OutpostError('invalid', 'container: must be a string');
  const s = ctx.open(
    { type: 'exec', workload, command, ...(b.container ? { container: b.container } : {}) },
    false,
    `exec ${workload} ${(command as string[]).join(' ').slice(0, 200)}`,
  );
  s.end();
  s.resume();
  res!.on('close', () => s.destroy());
  const r = await head(s);
  res!
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ exitCode: r.exitCode, stdout: r.stdout ?? '', stderr: r.stderr ?? '' }));
}

const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1024 * 1024 });

/** `-it`: stdin from the WebSocket to the edge, output and the exit status back. */
async function interactive(ctx: RouteContext, req: IncomingMessage, workload: string): Promise<void> {
  const q = new URL(req.url ?? '/', 'http://x').searchParams;
  const command = q.getAll('command');
  if (command.length === 0)
    throw new OutpostError('bad_request', 'give the command as ?command=sh&command=-c&command=...');
  const tty = q.get('tty') === 'true';
  const cols = Number(q.get('cols'));
  const rows = Number(q.get('rows'));
  const sized = (n: number): boolean => Number.isInteger(n) && n >= 1 && n <= 10_000;
  if ((q.has('cols') || q.has('rows')) && !(sized(cols) && sized(rows)))
    throw new OutpostError(
      'bad_request',
      'cols and rows must both be whole numbers from 1 to 10000 (the terminal size)',
    );
  const { socket, head: upgradeHead } = ctx.upgrade!;
  const ws = await new Promise<WebSocket>((resolve) => wss.handleUpgrade(req, socket, upgradeHead, resolve));
  const s = ctx.open(
    {
      type: 'exec',
      workload,
      command,
      interactive: true,
      tty,
      // The client's terminal size goes with the request: the edge sets it on the session's terminal.
      ...(tty && q.has('cols') ? { size: { cols, rows } } : {}),
      ...(q.get('container') ? { container: q.get('container') } : {}),
    },
    true,
    `exec -it ${workload} ${command.join(' ').slice(0, 200)}`,
  );
  const status = (m: Record<string, unknown>): void => {
    if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.from([WS_STATUS]), Buffer.from(JSON.stringify(m))]));
  };
  ws.on('message', (data: Buffer) => {
    if (data[0] === WS_STDIN) {
      if (data.length === 1) s.end();
      else if (!s.write(data.subarray(1))) ws.pause();
    }
  });
  s.on('drain', () => ws.resume());
  ws.on('close', () => s.destroy());
  s.on('meta', (m) => {
    if (typeof m.exitCode === 'number') status({ exitCode: m.exitCode });
  });
  s.on('data', (c: Buffer) => {
    if (c[0] === EXEC_STDOUT || c[0] === EXEC_STDERR) ws.send(c);
  });
  s.on('error', (err) => {
    status({ error: err instanceof TunnelError ? err.message : 'internal error on the hub' });
    ws.close(1011);
  });
  s.on('end', () => ws.close(1000));
  await once(ws, 'close');
}

/** `GET /api/v1/edges/NAME/metrics`: the edge agent's own Prometheus page, through its tunnel. */
export async function handleMetrics(ctx: RouteContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'GET' || ctx.rest !== '')
    throw new OutpostError('bad_request', `use GET /api/v1/edges/${ctx.edge}/metrics`);
  const s = ctx.open({ type: 'metrics' }, false, 'metrics');
  s.end();
  res.on('close', () => {
    if (!res.writableFinished) s.destroy();
  });
  const m = await head(s);
  s.on('error', (err) => sendError(res, err));
  res.writeHead(200, {
    'content-type': typeof m.contentType === 'string' ? m.contentType : 'text/plain; version=0.0.4; charset=utf-8',
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
  });
  s.pipe(res);
}

export async function handleActions(
  ctx: RouteContext,
  req: IncomingMessage,
  res: ServerResponse | undefined,
): Promise<void> {
  if (req.method !== 'POST' || ctx.rest !== '')
    throw new OutpostError(
      'bad_request',
      `use POST /api/v1/edges/${ctx.edge}/actions {"action": "restart|stop|start", "workload": "NAME"}`,
    );
  const b = await readJson(req);
  if (b.action !== 'restart' && b.action !== 'stop' && b.action !== 'start')
    throw new OutpostError('invalid', 'action: must be one of restart, stop, start');
  if (typeof b.workload !== 'string' || !isValidName(b.workload))
    throw new OutpostError('invalid', 'workload: must be a workload name');
  const { action, workload } = b as { action: string; workload: string };
  const s = ctx.open({ type: 'action', action, workload }, false, `action ${action} ${workload}`);
  s.end();
  s.resume();
  const actor = actorOf(ctx.principal);
  const reason = `Remote${action[0].toUpperCase()}${action.slice(1)}`;
  const record = (message: string): void => {
    ctx.events.record({ project: ctx.project, kind: 'Edge', name: ctx.edge, reason, message });
    ctx.events.record({ project: ctx.project, kind: 'Workload', name: workload, reason, message });
  };
  try {
    await head(s);
  } catch (err) {
    record(`${action} of ${workload} on edge ${ctx.edge} by ${actor} failed: ${(err as Error).message}`);
    throw err;
  }
  record(`${action} of ${workload} on edge ${ctx.edge} by ${actor}`);
  res!
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ edge: ctx.edge, workload, action, done: true }));
}
