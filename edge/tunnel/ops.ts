/**
 * @module Logs, exec and remote actions over a tunnel stream, on the edge. Each goes through the
 * runtime driver, so it works the same for process, podman and kubernetes workloads.
 */
import { once } from 'node:events';
import { createLogger } from '../../core/logger.js';
import {
  EXEC_STDERR,
  EXEC_STDOUT,
  MAX_DATA_BYTES,
  TunnelError,
  type TunnelRequest,
  type TunnelStream,
} from '../../sync/tunnel.js';
import type { Driver } from '../drivers/driver.js';
import type { Reconciler } from '../reconciler.js';

const log = createLogger('edge:tunnel');

async function requireWorkload(driver: Driver, name: string): Promise<void> {
  const all = await driver.list();
  if (!all.some((w) => w.name === name))
    throw new TunnelError(
      'not_found',
      `workload ${name} does not run on this edge (it runs: ${all.map((w) => w.name).join(', ') || 'nothing'})`,
    );
}

/** The agent's Prometheus page: head `{ok, contentType}`, then the text. */
export async function runMetrics(
  s: TunnelStream,
  metrics: (() => Promise<{ text: string; contentType: string }>) | undefined,
): Promise<void> {
  if (!metrics) throw new TunnelError('not_found', 'this edge agent serves no metrics');
  const m = await metrics();
  s.sendMeta({ ok: true, contentType: m.contentType });
  s.end(Buffer.from(m.text));
}

/** A driver's own complaint (no such container, not started) is the caller's problem, not ours. */
function driverFailure(err: unknown): TunnelError {
  if (err instanceof TunnelError) return err;
  const msg = err instanceof Error ? err.message : String(err);
  return new TunnelError(
    /no workload|no container|has no|not found|does not/i.test(msg) ? 'not_found' : 'unavailable',
    msg,
  );
}

/** The earliest time a `logs` request asks for (epoch ms), if it bounds it; the later of both bounds. */
function sinceOf(r: { sinceSeconds?: number; sinceMs?: number }): number | undefined {
  const bounds = [r.sinceMs, r.sinceSeconds === undefined ? undefined : Date.now() - r.sinceSeconds * 1000];
  const set = bounds.filter((b): b is number => b !== undefined);
  return set.length > 0 ? Math.max(...set) : undefined;
}

export async function runLogs(
  s: TunnelStream,
  driver: Driver,
  r: Extract<TunnelRequest, { type: 'logs' }>,
): Promise<void> {
  await requireWorkload(driver, r.workload);
  const ctl = new AbortController();
  s.on('close', () => ctl.abort());
  let it: AsyncIterator<string>;
  let first: IteratorResult<string>;
  try {
    it = driver
      .logs(r.workload, {
        container: r.container,
        tail: r.tail,
        follow: r.follow,
        signal: ctl.signal,
        sinceMs: sinceOf(r),
        timestamps: r.timestamps,
      })
      [Symbol.asyncIterator]();
    // A follow on a quiet log may wait long for its first line; the head must not wait with it.
    const pending = it.next();
    const early = await Promise.race([
      pending.then(
        (v) => ({ v }),
        (e: unknown) => ({ e }),
      ),
      new Promise<null>((res) => setTimeout(() => res(null), 300)),
    ]);
    if (early && 'e' in early) throw early.e;
    s.sendMeta({ ok: true });
    first = early ? early.v : await pending;
  } catch (err) {
    throw driverFailure(err);
  }
  try {
    for (let n = first; !n.done; n = await it.next()) {
      if (s.destroyed) break;
      if (!s.write(`${n.value}\n`)) await once(s, 'drain');
    }
  } catch (err) {
    if (!ctl.signal.aborted) throw driverFailure(err);
  } finally {
    ctl.abort();
    await it.return?.().catch(() => undefined);
  }
  if (!s.destroyed) s.end();
}

export async function runExec(
  s: TunnelStream,
  driver: Driver,
  r: Extract<TunnelRequest, { type: 'exec' }>,
): Promise<void> {
  await requireWorkload(driver, r.workload);
  const ctl = new AbortController();
  s.on('close', () => ctl.abort());
  if (!r.interactive) {
    let res;
    try {
      res = await driver.exec(r.workload, r.command, { container: r.container, signal: ctl.signal });
    } catch (err) {
      throw driverFailure(err);
    }
    s.sendMeta({ exitCode: res.exitCode, stdout: res.stdout, stderr: res.stderr });
    s.end();
    return;
  }
  if (!driver.execInteractive) {
    throw new TunnelError(
      'refused',
      `the ${driver.name} driver runs one-shot commands only: drop -i/-t (outpost exec edge/NAME ${r.workload} -- ${r.command.join(' ')})`,
    );
  }
  const p = await driver
    .execInteractive(r.workload, r.command, {
      container: r.container,
      signal: ctl.signal,
      tty: r.tty,
      ...(r.size ? { size: r.size } : {}),
    })
    .catch((err: unknown) => {
      throw driverFailure(err);
    });
  s.sendMeta({ ok: true });
  s.pipe(p.stdin);
  // Each DATA frame the hub reads must start with its channel byte: the mux splits writes larger
  // than MAX_DATA_BYTES, so output goes in pieces that fit one frame with the byte in front.
  const channel = (ch: number, from: NodeJS.ReadableStream) => (c: Buffer | string) => {
    const b = Buffer.isBuffer(c) ? c : Buffer.from(c);
    let ok = true;
    for (let off = 0; off < b.length; off += MAX_DATA_BYTES - 1)
      ok = s.write(Buffer.concat([Buffer.from([ch]), b.subarray(off, off + MAX_DATA_BYTES - 1)])) && ok;
    if (!ok) from.pause();
  };
  p.stdout.on('data', channel(EXEC_STDOUT, p.stdout));
  p.stderr.on('data', channel(EXEC_STDERR, p.stderr));
  s.on('drain', () => {
    p.stdout.resume();
    p.stderr.resume();
  });
  const code = await p.exit;
  s.sendMeta({ exitCode: code });
  s.end();
}

export async function runAction(
  s: TunnelStream,
  driver: Driver,
  reconciler: Reconciler,
  r: Extract<TunnelRequest, { type: 'action' }>,
): Promise<void> {
  await requireWorkload(driver, r.workload);
  try {
    if (r.action === 'restart') {
      if (reconciler.heldStopped.has(r.workload))
        throw new TunnelError(
          'refused',
          `workload ${r.workload} is stopped by a remote action: start it instead (outpost edge action NAME start ${r.workload})`,
        );
      await driver.restartWorkload(r.workload);
    } else if (r.action === 'stop') {
      // Held by the reconciler, not just stopped by the driver: its next pass would restart it.
      // On disk before anything stops, so an agent restart cannot undo the order.
      await reconciler.heldStopped.add(r.workload);
      await reconciler.trigger();
    } else {
      await reconciler.heldStopped.delete(r.workload);
      await reconciler.trigger();
    }
  } catch (err) {
    throw driverFailure(err);
  }
  log.info({ workload: r.workload, action: r.action }, 'remote action done');
  s.sendMeta({ ok: true, message: `${r.action} of ${r.workload} done` });
  s.end();
}
