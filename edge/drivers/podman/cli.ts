/**
 * @module Running the podman CLI. Every podman process the driver starts gets `CONTAINERS_CONF`
 * pointing at Outpost's podman configuration (see `containersConf`), so the settings that make
 * podman work without systemd (build/podman/containers.conf) apply without touching the system's
 * /etc/containers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { DriverError } from '../driver.js';

/** Where build/setup.sh writes the configuration; OUTPOST_CONTAINERS_CONF overrides it. */
export const DEFAULT_CONTAINERS_CONF = '/etc/outpost/containers.conf';

/**
 * The containers.conf for podman processes: OUTPOST_CONTAINERS_CONF when set (it must exist), else
 * /etc/outpost/containers.conf when present, else whatever CONTAINERS_CONF the agent inherited
 * (undefined: podman's own defaults).
 */
export function containersConf(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const override = env.OUTPOST_CONTAINERS_CONF;
  if (override) {
    if (!existsSync(override))
      throw new DriverError(
        `OUTPOST_CONTAINERS_CONF points at ${override}, which does not exist; run build/setup.sh or fix the path`,
      );
    return override;
  }
  if (existsSync(DEFAULT_CONTAINERS_CONF)) return DEFAULT_CONTAINERS_CONF;
  return env.CONTAINERS_CONF;
}

export interface PodmanResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Podman {
  readonly bin: string;
  /** Runs podman to completion; never throws for a non-zero exit (callers decide). */
  run(args: string[], opts?: { input?: string; signal?: AbortSignal }): Promise<PodmanResult>;
  /** Runs podman and throws a DriverError carrying its stderr when it exits non-zero. */
  ok(args: string[], what: string, opts?: { input?: string }): Promise<string>;
  /** Starts a long-running podman process (logs --follow). */
  spawn(args: string[]): ChildProcess;
}

/** `socketPath`: talk to a running `podman system service` there (podman --url) instead of locally. */
export function createPodman(bin = 'podman', socketPath?: string): Podman {
  const conf = containersConf();
  const env = conf ? { ...process.env, CONTAINERS_CONF: conf } : { ...process.env };
  const global = socketPath ? ['--url', `unix://${socketPath}`] : [];

  const spawnPodman = (args: string[]): ChildProcess =>
    spawn(bin, [...global, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });

  const run = (args: string[], opts: { input?: string; signal?: AbortSignal } = {}): Promise<PodmanResult> =>
    new Promise((resolve, reject) => {
      const child = spawnPodman(args);
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout!.on('data', (b: Buffer) => out.push(b));
      child.stderr!.on('data', (b: Buffer) => err.push(b));
      const onAbort = (): void => {
        child.kill('SIGTERM');
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      child.on('error', (e: NodeJS.ErrnoException) => {
        opts.signal?.removeEventListener('abort', onAbort);
        const hint =
          e.code === 'ENOENT'
            ? `: ${bin} is not installed; run build/setup.sh (apt-get install podman runc catatonit)`
            : '';
        reject(new DriverError(`starting ${bin} ${args[0] ?? ''}${hint}`, { cause: e }));
      });
      child.on('close', (code, sig) => {
        opts.signal?.removeEventListener('abort', onAbort);
        resolve({
          code: code ?? (sig ? 128 : 1),
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
        });
      });
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(opts.input ?? '');
    });

  return {
    bin,
    run,
    spawn: spawnPodman,
    async ok(args, what, opts) {
      const r = await run(args, opts);
      if (r.code !== 0)
        throw new DriverError(`${what}: ${podmanError(r.stderr) || `podman ${args[0]} exited with ${r.code}`}`);
      return r.stdout;
    },
  };
}

/** The error lines of podman's stderr, without its warnings and retry chatter. */
export function podmanError(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const errors = lines
    .filter((l) => l.startsWith('Error:') || l.startsWith('*'))
    .map((l) => l.replace(/^Error:\s*/, ''));
  return (errors.length ? errors : lines.slice(-3)).join('; ');
}
