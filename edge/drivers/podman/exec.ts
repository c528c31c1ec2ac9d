/**
 * @module Commands in a workload's container (docs/drivers.md, "exec"): `podman exec` to
 * completion, and `podman exec -i [-t]` as an interactive session. The container is the named one,
 * else the first running one of the first pod (pods.ts `targetContainer`).
 */
import {
  DriverError,
  type ExecOptions,
  type ExecResult,
  type InteractiveExec,
  type InteractiveExecOptions,
} from '../driver.js';
import { childSession } from '../interactive.js';
import { podmanError } from './cli.js';
import { targetContainer, type PodmanContext } from './pods.js';

export async function execIn(
  ctx: PodmanContext,
  name: string,
  command: string[],
  opts: ExecOptions,
): Promise<ExecResult> {
  if (command.length === 0) throw new DriverError('exec needs a command');
  const id = await targetContainer(ctx, name, opts.container, true);
  const r = await ctx.podman.run(['exec', id, ...command], { signal: opts.signal });
  // 125 is podman's own failure (exec could not start); 126/127 are the command's, as in a shell.
  if (r.code === 125 && /^Error:/m.test(r.stderr)) throw new DriverError(`exec in ${name}: ${podmanError(r.stderr)}`);
  return { exitCode: r.code, stdout: r.stdout, stderr: r.stderr };
}

/**
 * `podman exec -i [-t]`. Ending the session closes stdin and then stops the podman client; a
 * command that reads its input (a shell, cat) sees the end of it and ends. Podman 4.3 gives no
 * handle on the exec'd process, so one that ignores stdin (sleep) runs on in the container until
 * it ends by itself (docs/drivers.md).
 */
export async function execInteractiveIn(
  ctx: PodmanContext,
  name: string,
  command: string[],
  opts: InteractiveExecOptions,
): Promise<InteractiveExec> {
  if (command.length === 0) throw new DriverError('exec needs a command');
  const id = await targetContainer(ctx, name, opts.container, true);
  // `podman exec -t` from a client without a terminal gives the session a 0x0 terminal (`stty
  // size` fails, full-screen programs break): set the client's size (80x24 by default) through
  // the container's /bin/sh, when it has one.
  let argv = command;
  if (opts.tty && (await ctx.podman.run(['exec', id, '/bin/sh', '-c', ':'])).code === 0) {
    const { cols, rows } = opts.size ?? { cols: 80, rows: 24 };
    argv = [
      '/bin/sh',
      '-c',
      'stty rows "$1" cols "$2" 2>/dev/null; shift 2; exec "$@"',
      'outpost-exec',
      String(rows),
      String(cols),
      ...command,
    ];
  }
  const child = ctx.podman.spawn(['exec', '-i', ...(opts.tty ? ['-t'] : []), id, ...argv]);
  const kill = (): void => {
    child.stdin?.end();
    child.kill('SIGTERM');
  };
  return childSession(child, `podman exec in ${name}`, kill, opts.signal);
}
