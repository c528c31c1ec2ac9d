/**
 * @module `outpost exec -i/-t`: a WebSocket to the hub's exec route, stdin up, stdout and stderr
 * down, using Kubernetes' channel bytes (0 stdin, 1 stdout, 2 stderr, 3 status).
 */
import WebSocket from 'ws';
import type { HubConnection } from './client.js';
import type { CliDeps } from './context.js';
import { CliError } from './errors.js';

export async function interactiveExec(
  conn: HubConnection,
  path: string,
  workload: string,
  command: string[],
  o: { container?: string; tty: boolean },
  deps: CliDeps,
): Promise<number> {
  const q = new URLSearchParams();
  for (const c of command) q.append('command', c);
  if (o.container) q.set('container', o.container);
  if (o.tty) {
    q.set('tty', 'true');
    // The terminal's size, so `stty size` and full-screen programs work in the session; COLUMNS and
    // LINES when stdout is not a terminal.
    const out = deps.stdout as { columns?: number; rows?: number };
    const cols = out.columns ?? Number(deps.env.COLUMNS);
    const rows = out.rows ?? Number(deps.env.LINES);
    if (Number.isInteger(cols) && cols > 0 && Number.isInteger(rows) && rows > 0) {
      q.set('cols', String(cols));
      q.set('rows', String(rows));
    }
  }
  const url = `${conn.hub.replace(/^http/, 'ws').replace(/\/+$/, '')}${path}/${workload}?${q}`;
  const ws = new WebSocket(url, {
    headers: { authorization: `Bearer ${conn.token}` },
    perMessageDeflate: false,
    ...(conn.ca ? { ca: conn.ca } : {}),
  });
  const stdin = deps.stdin as NodeJS.ReadStream;
  const raw = o.tty && stdin.isTTY && typeof stdin.setRawMode === 'function';
  return new Promise<number>((resolve, reject) => {
    let code: number | undefined;
    let error: string | undefined;
    ws.on('unexpected-response', (_req, res) => {
      let t = '';
      res.on('data', (c: Buffer) => (t += c.toString()));
      res.on('end', () => {
        let msg = t;
        try {
          msg = (JSON.parse(t) as { error?: { message?: string } }).error?.message ?? t;
        } catch {
          // not JSON: show as is
        }
        reject(new CliError(`the hub refused the exec session (HTTP ${res.statusCode}): ${msg}`));
      });
    });
    ws.on('open', () => {
      if (raw) stdin.setRawMode(true);
      stdin.on('data', (c: Buffer) => ws.send(Buffer.concat([Buffer.from([0]), c])));
      stdin.on('end', () => ws.readyState === ws.OPEN && ws.send(Buffer.from([0])));
    });
    ws.on('message', (d: Buffer) => {
      if (d[0] === 1) deps.stdout.write(d.subarray(1).toString('utf8'));
      else if (d[0] === 2) deps.stderr.write(d.subarray(1).toString('utf8'));
      else if (d[0] === 3) {
        const s = JSON.parse(d.subarray(1).toString('utf8')) as { exitCode?: number; error?: string };
        if (typeof s.exitCode === 'number') code = s.exitCode;
        if (s.error) error = s.error;
      }
    });
    ws.on('error', (err) => reject(new CliError(`exec session to ${conn.hub} failed: ${err.message}`, { cause: err })));
    ws.on('close', () => {
      if (raw) stdin.setRawMode(false);
      stdin.pause();
      if (error) reject(new CliError(error));
      else if (code === undefined)
        reject(new CliError('the exec session ended without an exit status (the edge disconnected?)'));
      else resolve(code);
    });
  });
}
