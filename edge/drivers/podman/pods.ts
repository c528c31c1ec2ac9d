/**
 * @module A workload's pods and containers as the driver finds and removes them, always narrowed
 * to this data directory's owner id: the scan of one workload, the ids of its pods, the pods of one
 * version, their removal, and the container a log or exec request means. Also what every part of
 * the driver is given to work with (`PodmanContext`).
 */
import { DriverError } from '../driver.js';
import { podmanError, type Podman } from './cli.js';
import { LABEL_HASH, LABEL_OWNER, LABEL_WORKLOAD } from './plan.js';
import { scan, type Scan } from './scan.js';
import type { PodmanWorkloadState, StateStore } from './state.js';

/** What the parts of the driver share: the podman CLI, the state in the data directory and its owner id. */
export interface PodmanContext {
  readonly podman: Podman;
  readonly store: StateStore;
  /** The `outpost.dev/owner` id of the data directory; a DriverError before the driver is started. */
  readonly owner: string;
}

/** `pod rm -f` races with the restart policy of a crash-looping container; a retry wins it. */
const REMOVE_ATTEMPTS = 4;

export async function scanOne(ctx: PodmanContext, name: string, state?: PodmanWorkloadState): Promise<Scan> {
  return scan(ctx.podman, ctx.owner, name, new Map(state ? [[name, state]] : []));
}

export async function podsOfHash(ctx: PodmanContext, name: string, hash: string): Promise<Scan['pods']> {
  return (await scanOne(ctx, name)).pods.filter((p) => p.labels[LABEL_HASH] === hash);
}

export async function podIds(ctx: PodmanContext, name: string): Promise<string[]> {
  const out = await ctx.podman.ok(
    [
      'pod',
      'ps',
      '-q',
      '--no-trunc',
      '--filter',
      `label=${LABEL_OWNER}=${ctx.owner}`,
      '--filter',
      `label=${LABEL_WORKLOAD}=${name}`,
    ],
    `listing pods of ${name}`,
  );
  return out.split('\n').filter(Boolean);
}

/** Removes the workload's pods (only those of `subset` when given). */
export async function removePods(
  ctx: PodmanContext,
  name: string,
  graceSeconds: number,
  subset?: { id: string }[],
): Promise<void> {
  const only = subset && new Set(subset.map((p) => p.id));
  let lastError = '';
  for (let attempt = 0; attempt < REMOVE_ATTEMPTS; attempt++) {
    const ids = (await podIds(ctx, name)).filter((id) => !only || only.has(id));
    if (ids.length === 0) return;
    // Stop with the grace period, then remove what is stopped: podman 4.3's `pod rm -f -t N` took
    // ~5 s for a pod whose container ignores SIGTERM under N=1 (measured 2026-12-07: 4.7-5.3 s,
    // against 1.3-1.5 s for `pod stop -t 1` then `pod rm -f -t 0`). When the stop fails, the
    // removal gives the grace period itself.
    const stop = await ctx.podman.run(['pod', 'stop', '-t', String(graceSeconds), ...ids]);
    const rmGrace = stop.code === 0 ? 0 : graceSeconds;
    const r = await ctx.podman.run(['pod', 'rm', '-f', '-t', String(rmGrace), ...ids]);
    if (r.code === 0) return;
    lastError = podmanError(r.stderr);
    await new Promise((res) => setTimeout(res, 200 * (attempt + 1)));
  }
  throw new DriverError(`removing the pods of ${name}: ${lastError}; try 'podman pod rm -f' on them by hand`);
}

/** The container a log or exec request means: `container` by name, else the first of the first pod. */
export async function targetContainer(
  ctx: PodmanContext,
  name: string,
  container: string | undefined,
  running: boolean,
): Promise<string> {
  const seen = await scanOne(ctx, name, await ctx.store.read(name));
  const all = [...seen.containers].sort((a, b) => a.pod.localeCompare(b.pod));
  const pick = container ? all.filter((c) => c.container === container) : all;
  const chosen = running ? pick.find((c) => c.state === 'running') : pick[0];
  if (chosen) return chosen.id;
  if (all.length === 0) throw new DriverError(`workload ${name} has no containers on this edge`);
  if (container && pick.length === 0)
    throw new DriverError(
      `workload ${name} has no container named ${container}; it has ${[...new Set(all.map((c) => c.container))].join(', ')}`,
    );
  throw new DriverError(
    `workload ${name} has no running container${container ? ` named ${container}` : ''}; start it first`,
  );
}
