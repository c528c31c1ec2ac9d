/**
 * @module `outpost edge local ...`: orders given on site, through the running agent's unix socket
 * (DATA/agent.sock). They work with the hub unreachable; each becomes a local intent in the
 * report document and reaches the hub on reconnect.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { Command, InvalidArgumentError } from 'commander';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { EgressState } from './data/egress.js';

interface Out {
  out: (s: string) => void;
}

function call(
  socketPath: string,
  method: string,
  p: string,
  body?: unknown,
  onChunk?: (s: string) => void,
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      {
        socketPath,
        method,
        path: p,
        headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {},
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          if (onChunk) onChunk(c.toString());
          else text += c.toString();
        });
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : null;
          } catch {
            /* text */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'ENOENT' || err.code === 'ECONNREFUSED'
            ? `no edge agent is running with data directory ${socketPath.replace(/\/agent\.sock$/, '')} (start it with outpost edge --data DIR, or pass --data)`
            : err.message,
        ),
      ),
    );
    req.end(payload);
  });
}

function parseSet(v: string, prev: Record<string, unknown> = {}): Record<string, unknown> {
  const i = v.indexOf('=');
  if (i <= 0)
    throw new InvalidArgumentError(
      `"${v}": use PATH=VALUE, e.g. spec.replicas=3 or Deployment/web:spec.template.spec.containers.0.image=app:2`,
    );
  const raw = v.slice(i + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    /* a plain string */
  }
  return { ...prev, [v.slice(0, i)]: value };
}

export function registerEdgeLocalCommands(edge: Command, io: Out = { out: (s) => process.stdout.write(s) }): void {
  const local = edge
    .command('local')
    .description('orders on site to the running agent (work with the hub unreachable)');
  const sock = (cmd: Command): string =>
    path.join((cmd.optsWithGlobals() as { data?: string }).data ?? '/var/lib/outpost-edge', 'agent.sock');
  const origin = `local:${os.userInfo().username}@${os.hostname()}`;
  const check = (r: { status: number; body: any }) => {
    if (r.status >= 400) throw new Error(r.body?.error?.message ?? `agent answered HTTP ${r.status}`);
    return r.body;
  };
  // --data is the `outpost edge` option (the agent's data directory); commander parses it anywhere.

  local
    .command('status')
    .description('what this edge runs, its status and local intents, and whether the hub is reachable')
    .option('-o, --output <format>', 'table or json', 'table')
    .action(async (opts: { output: string }, cmd: Command) => {
      const s = check(await call(sock(cmd), 'GET', '/status'));
      if (opts.output === 'json') return io.out(`${JSON.stringify(s, null, 2)}\n`);
      io.out(`edge ${s.edge}  hub ${s.hub} (${s.connection})  driver ${s.driver}\n`);
      if (s.lastError) io.out(`cannot reach the hub (since ${s.lastError.at}): ${s.lastError.message}\n`);
      if (s.upgrade)
        io.out(
          `release ${s.upgrade.version}: ${s.upgrade.state === 'rolled-back' ? 'RolledBack' : s.upgrade.state === 'committed' ? 'Committed' : 'Switching'} (from ${s.upgrade.previousVersion}, ${s.upgrade.at})${s.upgrade.reason ? `: ${s.upgrade.reason}` : ''}\n`,
        );
      if (s.decommissioned)
        io.out(
          `DECOMMISSIONED${s.decommissioned.at ? ` at ${s.decommissioned.at}` : ''}: ${s.decommissioned.message}\n` +
            'this agent no longer syncs or runs workloads; remove it with: outpost edge uninstall --yes\n',
        );
      const rows = [['WORKLOAD', 'GEN', 'OBSERVED', 'PHASE', 'RESTARTS', 'LOCAL']];
      for (const w of s.workloads) {
        const l = w.local
          ? [
              w.local.paused ? 'paused' : '',
              Object.keys(w.local.overrides ?? {}).length
                ? `overrides: ${Object.entries(w.local.overrides)
                    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
                    .join(',')}`
                : '',
            ]
              .filter(Boolean)
              .join('; ')
          : '';
        rows.push([
          w.name,
          String(w.generation),
          String(w.status?.observedGeneration ?? '-'),
          w.error ? 'Error' : (w.status?.phase ?? 'Pending'),
          String(w.status?.restarts ?? 0),
          l,
        ]);
      }
      const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
      for (const r of rows)
        io.out(
          `${r
            .map((c, i) => c.padEnd(widths[i]))
            .join('  ')
            .trimEnd()}\n`,
        );
      const data = Object.entries(
        (s.data ?? {}) as Record<
          string,
          { version: string; path: string; state: string; percent?: number; reason?: string }
        >,
      );
      if (data.length) {
        io.out('\nDATA OBJECT  VERSION  PATH  STATE\n');
        for (const [name, d] of data)
          io.out(
            `${name}  ${d.version}  ${d.path}  ${d.state}${d.percent !== undefined ? ` ${d.percent}%` : ''}${d.reason ? `: ${d.reason}` : ''}\n`,
          );
      }
      const exports = (s.exports ?? []) as EgressState[];
      if (exports.length) {
        io.out('\nEXPORTS (files to the hub)  QUEUED  QUEUED BYTES  UPLOADED\n');
        for (const e of exports)
          io.out(
            `${e.workload}  ${e.queuedFiles}  ${e.queuedBytes}  ${e.doneFiles}${e.degraded ? `  Degraded: ${e.degraded}` : ''}\n`,
          );
      }
    });

  for (const action of ['pause', 'resume', 'clear'] as const) {
    local
      .command(`${action} <workload>`)
      .description(
        action === 'clear' ? 'drop the local overrides and pause of a workload' : `${action} a workload on this edge`,
      )
      .action(async (workload: string, _o: unknown, cmd: Command) => {
        const r = check(await call(sock(cmd), 'POST', '/intents', { workload, action, origin }));
        io.out(`${workload}: ${action} recorded as local intent #${r.seq}\n`);
      });
  }
  local
    .command('override <workload>')
    .description('override fields of a workload on this edge (local wins on these paths until cleared)')
    .requiredOption('--set <path=value>', 'PATH=VALUE (repeatable); VALUE is JSON or a string', parseSet)
    .action(async (workload: string, opts: { set: Record<string, unknown> }, cmd: Command) => {
      const r = check(
        await call(sock(cmd), 'POST', '/intents', { workload, action: 'override', set: opts.set, origin }),
      );
      io.out(`${workload}: override recorded as local intent #${r.seq}\n`);
    });
  local
    .command('logs <workload>')
    .description('the logs of a workload on this edge')
    .option('-c, --container <name>', 'container')
    .option('--tail <n>', 'last N lines', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('--tail takes a whole number');
      return n;
    })
    .option('-f, --follow', 'keep printing new lines')
    .action(async (workload: string, opts: { container?: string; tail?: number; follow?: boolean }, cmd: Command) => {
      const q = new URLSearchParams({
        workload,
        ...(opts.container ? { container: opts.container } : {}),
        ...(opts.tail !== undefined ? { tail: String(opts.tail) } : {}),
        ...(opts.follow ? { follow: '1' } : {}),
      });
      const r = await call(sock(cmd), 'GET', `/logs?${q}`, undefined, (s) => io.out(s));
      if (r.status >= 400) throw new Error(`agent answered HTTP ${r.status}`);
    });

  local
    .command('upgrade <release-file>')
    .description(
      'switch this edge to a signed release (the YAML `outpost agent push` printed) whose binary is in its blob store (`outpost edge local blob pull DIGEST`): checked, staged, then the agent restarts into it and rolls back unless it connects and reconciles within --deadline',
    )
    .option('--deadline <seconds>', 'seconds the new binary has to connect to the hub and reconcile', '120')
    .option('--allow-downgrade', 'switch even to a release older than the version this edge runs or committed')
    .action(async (file: string, opts: { deadline: string; allowDowngrade?: boolean }, cmd: Command) => {
      // The AgentUpgrade `outpost agent push` prints (spec.release), or a bare `release:` document.
      const doc = parseYaml(fs.readFileSync(file, 'utf8')) as {
        release?: unknown;
        spec?: { release?: unknown };
      } | null;
      const deadlineSeconds = Number(opts.deadline);
      const r = check(
        await call(sock(cmd), 'POST', '/upgrade', {
          release: doc?.spec?.release ?? doc?.release ?? doc,
          deadlineSeconds,
          ...(opts.allowDowngrade ? { allowDowngrade: true } : {}),
        }),
      ) as {
        version: string;
        binary: string;
      };
      io.out(`${r.version}: staged as ${r.binary}; switching (see \`outpost edge local status\`)\n`);
    });

  const blob = local.command('blob').description("this edge's blob store: files to send to the hub or bring from it");
  blob
    .command('push <file>')
    .description('copy a file into the store and send it to the hub (now or when it is back); prints its digest')
    .option('--media-type <type>', 'what the bytes are', 'application/octet-stream')
    .action(async (file: string, opts: { mediaType: string }, cmd: Command) => {
      const r = check(
        await call(sock(cmd), 'POST', '/blobs/push', { file: path.resolve(file), mediaType: opts.mediaType }),
      );
      io.out(`${r.digest}\n`);
    });
  blob
    .command('pull <digest>')
    .description("bring a blob of this edge's project from the hub (now or when it is back)")
    .action(async (digest: string, _o: unknown, cmd: Command) => {
      const r = check(await call(sock(cmd), 'POST', '/blobs/pull', { digest }));
      io.out(`${r.digest} ${r.state}\n`);
    });
  blob
    .command('ls')
    .description('blobs stored, partly received, wanted, or waiting to be sent')
    .option('-o, --output <format>', 'table or json', 'table')
    .action(async (opts: { output: string }, cmd: Command) => {
      const r = check(await call(sock(cmd), 'GET', '/blobs'));
      if (opts.output === 'json') return io.out(`${JSON.stringify(r, null, 2)}\n`);
      for (const b of r.items as { digest: string; size?: number; state: string; partialBytes?: number }[])
        io.out(`${b.digest}  ${b.state}  ${b.size ?? b.partialBytes ?? 0}\n`);
    });
  blob
    .command('rm <digest>')
    .description('remove a blob from this edge (and from its queues)')
    .action(async (digest: string, _o: unknown, cmd: Command) => {
      check(await call(sock(cmd), 'DELETE', `/blobs/${digest}`));
      io.out(`${digest} removed\n`);
    });
}
