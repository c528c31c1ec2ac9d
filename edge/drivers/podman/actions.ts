/**
 * @module Stop, start and restart on request (the remote actions): `podman pod stop` with the
 * workload's grace period and `podman pod start` on all of the workload's pods, then a watch that
 * the start took (start-watch.ts: podman 4.3 can leave a container exited right after a start),
 * and the `stopped` flag of the state file, which makes status report Paused until a start or an
 * apply of a new version.
 */
import { DriverError } from '../driver.js';
import { podIds, type PodmanContext } from './pods.js';
import { DEFAULT_GRACE_SECONDS } from './plan.js';
import { watchStart } from './start-watch.js';
import type { PodmanWorkloadState } from './state.js';

async function podAction(
  ctx: PodmanContext,
  name: string,
  action: 'stop' | 'start',
  graceSeconds: number,
  known = false,
): Promise<void> {
  const ids = await podIds(ctx, name);
  if (ids.length === 0)
    throw new DriverError(
      known
        ? `workload ${name} has no pods on this edge (removed outside Outpost?); the next apply recreates them`
        : `workload ${name} has no pods on this edge; apply it first`,
    );
  const args = action === 'stop' ? ['pod', 'stop', '-t', String(graceSeconds), ...ids] : ['pod', 'start', ...ids];
  await ctx.podman.ok(args, `${action === 'stop' ? 'stopping' : 'starting'} the pods of ${name}`);
}

async function setStopped(
  ctx: PodmanContext,
  name: string,
  stopped: boolean,
): Promise<PodmanWorkloadState | undefined> {
  const state = await ctx.store.read(name);
  if (state && Boolean(state.stopped) !== stopped) await ctx.store.write({ ...state, stopped });
  return state;
}

export async function stopOnRequest(ctx: PodmanContext, name: string): Promise<void> {
  const state = await setStopped(ctx, name, true);
  await podAction(ctx, name, 'stop', state?.graceSeconds ?? DEFAULT_GRACE_SECONDS);
}

/**
 * Not stopped any more before anything starts: a pod removed while the workload was stopped, or a
 * container the watch cannot get running, is then drift in status (status.ts), which the reconciler
 * applies again, not a Paused workload that no start can run.
 */
export async function startOnRequest(ctx: PodmanContext, name: string): Promise<void> {
  const state = await setStopped(ctx, name, false);
  await podAction(ctx, name, 'start', 0, state !== undefined);
  await watchStart(ctx, name);
}

/** `podman pod restart` has no stop timeout flag; stop + start honours the workload's grace period. */
export async function restartOnRequest(ctx: PodmanContext, name: string): Promise<void> {
  const state = await ctx.store.read(name);
  await podAction(ctx, name, 'stop', state?.graceSeconds ?? DEFAULT_GRACE_SECONDS);
  await podAction(ctx, name, 'start', 0);
  await setStopped(ctx, name, false);
  await watchStart(ctx, name);
}
