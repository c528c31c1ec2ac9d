/**
 * @module Logs and exec for the kubernetes driver, through the API server (`pods/log` and the
 * `pods/exec` websocket protocol), with @kubernetes/client-node's Log and Exec clients.
 * Interactive exec adds stdin (channel 0; its end is the v5 close frame) and, with a tty, asks
 * the kubelet for a terminal, which merges stderr into stdout as kubectl does.
 */
import { PassThrough, Writable } from 'node:stream';
import { Exec, Log, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import { DriverError, type ExecResult, type InteractiveExec } from '../driver.js';
import type { KObj } from './objects.js';

/** Lines of one container's log; ends when the server ends the stream or `signal` aborts. */
export async function* podLogLines(
  kc: KubeConfig,
  pod: KObj,
  container: string,
  opts: { tail?: number; follow?: boolean; signal?: AbortSignal; sinceMs?: number; timestamps?: boolean },
): AsyncGenerator<string> {
  if (opts.signal?.aborted) return;
  const out = new PassThrough();
  let ctl: AbortController;
  try {
    ctl = await new Log(kc).log(pod.metadata.namespace!, pod.metadata.name, container, out, {
      follow: opts.follow ?? false,
      ...(opts.tail !== undefined ? { tailLines: opts.tail } : {}),
      // Relative, so the kubelet's clock need not agree with the edge's.
      ...(opts.sinceMs !== undefined
        ? { sinceSeconds: Math.max(1, Math.ceil((Date.now() - opts.sinceMs) / 1000)) }
        : {}),
      ...(opts.timestamps ? { timestamps: true } : {}),
    });
  } catch (err) {
    const code = (err as { code?: number }).code;
    throw new DriverError(
      `reading logs of pod ${pod.metadata.namespace}/${pod.metadata.name} container ${container} failed${code ? ` (HTTP ${code})` : ''}; the container may not have started yet`,
      { cause: err },
    );
  }
  // Aborting the request does not end the piped stream; end it ourselves so the loop below finishes.
  const onAbort = (): void => {
    ctl.abort();
    out.end();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  let partial = '';
  try {
    for await (const chunk of out) {
      const parts = (partial + (chunk as Buffer).toString('utf8')).split('\n');
      partial = parts.pop() ?? '';
      for (const l of parts) yield l;
      if (opts.signal?.aborted) return;
    }
    if (partial) yield partial;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    ctl.abort();
  }
}

class Collect extends Writable {
  readonly chunks: Buffer[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.chunks.push(Buffer.from(chunk));
    cb();
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** Exit code from the status the API server sends on the exec error channel. */
export function exitCodeOf(status: V1Status): number | undefined {
  if (status.status === 'Success') return 0;
  if (status.reason === 'NonZeroExitCode') {
    const c = status.details?.causes?.find((x) => x.reason === 'ExitCode');
    const n = Number(c?.message);
    if (Number.isInteger(n)) return n;
  }
  return undefined;
}

export async function execInPod(
  kc: KubeConfig,
  pod: KObj,
  container: string,
  command: string[],
  signal?: AbortSignal,
): Promise<ExecResult> {
  const stdout = new Collect();
  const stderr = new Collect();
  let status: V1Status | undefined;
  let ws;
  try {
    ws = await new Exec(kc).exec(
      pod.metadata.namespace!,
      pod.metadata.name,
      container,
      command,
      stdout,
      stderr,
      null,
      false,
      (s) => {
        status = s;
      },
    );
  } catch (err) {
    throw new DriverError(
      `exec in pod ${pod.metadata.namespace}/${pod.metadata.name} container ${container} failed to connect; check that the kubeconfig user may create pods/exec`,
      { cause: err },
    );
  }
  await new Promise<void>((resolve) => {
    const abort = (): void => ws.close();
    signal?.addEventListener('abort', abort, { once: true });
    ws.on('close', () => {
      signal?.removeEventListener('abort', abort);
      resolve();
    });
  });
  if (signal?.aborted) throw new DriverError(`exec of ${command[0]} in ${pod.metadata.name} was aborted`);
  if (!status)
    throw new DriverError(
      `exec of ${command[0]} in ${pod.metadata.name}: the API server closed the stream without an exit status`,
    );
  const exitCode = exitCodeOf(status);
  if (exitCode === undefined)
    throw new DriverError(
      `exec of ${command[0]} in ${pod.metadata.name} failed: ${status.message ?? status.reason ?? 'unknown error'}`,
    );
  return { exitCode, stdout: stdout.text(), stderr: stderr.text() };
}

/** `outpost exec -it` in a pod: stdin streams up, output comes down as the API server sends it. */
export async function execInPodInteractive(
  kc: KubeConfig,
  pod: KObj,
  container: string,
  command: string[],
  opts: { tty?: boolean; signal?: AbortSignal },
): Promise<InteractiveExec> {
  const where = `pod ${pod.metadata.namespace}/${pod.metadata.name} container ${container}`;
  const stdin = new PassThrough();
  // Input piped in after the session closed has nowhere to go; that is not an error of the session.
  stdin.on('error', () => undefined);
  const stdout = new PassThrough();
  // With a terminal there is no separate stderr (the API server refuses stderr=true with tty=true).
  const stderr = new PassThrough();
  let status: V1Status | undefined;
  let ws;
  try {
    ws = await new Exec(kc).exec(
      pod.metadata.namespace!,
      pod.metadata.name,
      container,
      command,
      stdout,
      opts.tty ? null : stderr,
      stdin,
      !!opts.tty,
      (s) => {
        status = s;
      },
    );
  } catch (err) {
    throw new DriverError(`exec in ${where} failed to connect; check that the kubeconfig user may create pods/exec`, {
      cause: err,
    });
  }
  const socket = ws;
  const exit = new Promise<number>((resolve, reject) => {
    const abort = (): void => socket.close();
    if (opts.signal?.aborted) abort();
    else opts.signal?.addEventListener('abort', abort, { once: true });
    socket.on('close', () => {
      opts.signal?.removeEventListener('abort', abort);
      stdin.destroy();
      // The client library ends the output streams when the status arrives; a socket that closed
      // without one (aborted, API server gone) must end them too, or readers wait forever.
      if (!stdout.writableEnded) stdout.end();
      if (!stderr.writableEnded) stderr.end();
      if (!status)
        return reject(
          new DriverError(
            `exec of ${command[0]} in ${where}: ${opts.signal?.aborted ? 'aborted' : 'the API server closed the stream without an exit status'}`,
          ),
        );
      const code = exitCodeOf(status);
      if (code === undefined)
        return reject(
          new DriverError(
            `exec of ${command[0]} in ${where} failed: ${status.message ?? status.reason ?? 'unknown error'}`,
          ),
        );
      resolve(code);
    });
  });
  // Settled by whoever awaits it; until then a rejection must not count as unhandled.
  exit.catch(() => undefined);
  return { stdin, stdout, stderr, exit };
}
