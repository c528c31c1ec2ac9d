/**
 * @module Applying a unit (docs/drivers.md, "Updates"): nothing when its version already runs
 * (but containers podman left down are started: start-watch.ts, and pods removed on site are
 * played again beside the ones that run: `recreateMissing`), else the replace by new pods:
 * images present (pull.ts), volume files written (volumes.ts), the new pods played beside the old
 * ones (play.ts), and only then the old pods removed. Whatever fails, the old pods keep serving;
 * the state file records the outcome (state.ts) and a failed version is tried again after
 * FAILED_RETRY_MS.
 */
import { FAILED_RETRY_MS } from '../../../core/durations.js';
import { createLogger } from '../../../core/logger.js';
import { DriverError, type WorkloadUnit } from '../driver.js';
import { DEFAULT_GRACE_SECONDS, LABEL_HASH, planUnit, UnsupportedUnitError, type PodmanPlan } from './plan.js';
import { play } from './play.js';
import { removePods, scanOne, type PodmanContext } from './pods.js';
import { ensureImages, removePullAccess, writePullAccess } from './pull.js';
import { startLeftDown } from './start-watch.js';
import type { PodmanWorkloadState } from './state.js';
import { missingPods } from './status.js';
import { pruneVolumes, restoreVolumes, writeVolumes } from './volumes.js';

const log = createLogger('edge:driver:podman');

/**
 * A new version is made next to the running one: images first (pulled if missing), then the new
 * pods created stopped, started, and only then the old pods removed. Whatever fails on the way,
 * the old pods keep serving and the workload reports Failed with the reason (docs/drivers.md).
 */
export async function applyUnit(ctx: PodmanContext, unit: WorkloadUnit): Promise<void> {
  const { store } = ctx;
  const state = await store.read(unit.name);
  const seen = await scanOne(ctx, unit.name, state);
  const current = seen.pods.filter((p) => p.labels[LABEL_HASH] === unit.hash);
  const old = seen.pods.filter((p) => p.labels[LABEL_HASH] !== unit.hash);
  // The unit's version was applied without error and runs (status.ts reports pods of another
  // version beside it as left over: they are removed, the running ones not touched); or it runs
  // alone and the state file was lost.
  const runs = state ? state.hash === unit.hash && !state.error : current.length > 0 && old.length === 0;
  // With none of its pods left, the replace below makes them all, as a first apply does.
  if (runs && current.length > 0) {
    if (old.length) {
      log.warn(
        { workload: unit.name, pods: old.map((p) => p.podmanName) },
        'pods of another version left beside the running one; removing them',
      );
      await removePods(ctx, unit.name, state!.graceSeconds, old);
    }
    const missing = state ? missingPods(state, current) : [];
    if (state && missing.length) await recreateMissing(ctx, unit, state, missing);
    // After a recreate too: the state's pod templates become the plan's, should they differ.
    if (!state || state.generation !== unit.generation || missing.length) await adoptState(ctx, unit, state);
    // The version runs, but podman may have left a container of it down (status reports that as drift).
    if (!state?.stopped) await startLeftDown(ctx, unit.name, seen);
    return;
  }
  if (state?.hash === unit.hash && state.error && Date.now() - state.attemptedAt < FAILED_RETRY_MS) return;

  let plan: PodmanPlan;
  try {
    plan = planUnit(unit, ctx.owner, store.volumeRoot(unit.name, unit.hash));
  } catch (err) {
    if (!(err instanceof UnsupportedUnitError)) throw err;
    await store.write({
      ...emptyState(unit),
      ...(state ? pick(state) : {}),
      name: unit.name,
      generation: unit.generation,
      hash: unit.hash,
      error: err.message,
      attemptedAt: Date.now(),
    });
    log.warn({ workload: unit.name, err: err.message }, 'workload cannot run on podman');
    return;
  }
  if (plan.ignored.length)
    log.info({ workload: unit.name, ignored: plan.ignored }, 'kinds the podman driver does not create');

  const oldHash = old[0]?.labels[LABEL_HASH];
  // Pods of this very version are what is left of an earlier try: they are replaced, never a fallback.
  if (current.length) await removePods(ctx, unit.name, state?.graceSeconds ?? plan.graceSeconds, current);
  await writeVolumes(store, unit, plan);
  // Registry credentials exist on disk (0600) only while images are pulled and played.
  const access = await writePullAccess(store, unit.name, plan);
  let error: string | undefined;
  try {
    error =
      (await ensureImages(ctx.podman, unit.name, plan, access)) ??
      (await play(ctx, unit, plan, old, state?.graceSeconds ?? plan.graceSeconds, access));
  } finally {
    await removePullAccess(store, unit.name);
  }
  if (!error && old.length) {
    await removePods(ctx, unit.name, state?.graceSeconds ?? plan.graceSeconds, old).catch((err) =>
      log.warn({ workload: unit.name, err }, 'removing the previous version after an update'),
    );
  }
  const keepOld = error !== undefined && old.length > 0 && state !== undefined;
  await store.write({
    name: unit.name,
    generation: unit.generation,
    hash: unit.hash,
    ...(error ? { error } : {}),
    attemptedAt: Date.now(),
    // After a failed update the pods that run are the previous version's: keep what status needs of it.
    ...(keepOld
      ? { templates: state.templates, ports: state.ports, graceSeconds: state.graceSeconds, probes: state.probes }
      : { templates: plan.templates, ports: plan.ports, graceSeconds: plan.graceSeconds, probes: plan.probes }),
    claims: [...new Set([...(state?.claims ?? []), ...plan.claims])],
  });
  const keep = error ? oldHash && store.volumeRoot(unit.name, oldHash) : store.volumeRoot(unit.name, unit.hash);
  await pruneVolumes(store, unit.name, keep || undefined);
}

/**
 * Plays the pods of the running version that are missing (`podman pod rm` on site: status reports
 * them as drift, so the reconciler applies the unit again), next to the ones that run, which are
 * not touched: not stopped, not replaced, their volume files not rewritten. Under a stop on request
 * they are made and left stopped, as the others are. A failure leaves the running pods as they
 * are and throws: the reconciler shows the message and, the pods still missing, tries again on
 * its next pass.
 */
async function recreateMissing(
  ctx: PodmanContext,
  unit: WorkloadUnit,
  state: PodmanWorkloadState,
  missing: string[],
): Promise<void> {
  const plan = planUnit(unit, ctx.owner, ctx.store.volumeRoot(unit.name, unit.hash));
  const names = new Set(missing);
  const pods = plan.pods.filter((p) => names.has(p.name));
  // The plan declares none of them (one made by an Outpost that planned otherwise): adoptState takes its templates.
  if (pods.length === 0) return;
  log.warn(
    { workload: unit.name, pods: pods.map((p) => p.name) },
    'pods of the running version are missing; playing them again',
  );
  await restoreVolumes(ctx.store, unit, plan);
  const access = await writePullAccess(ctx.store, unit.name, plan);
  let error: string | undefined;
  try {
    error =
      (await ensureImages(ctx.podman, unit.name, plan, access)) ??
      (await play(ctx, unit, plan, [], state.graceSeconds, access, { only: pods, created: state.stopped }));
  } finally {
    await removePullAccess(ctx.store, unit.name);
  }
  if (error)
    throw new DriverError(
      `recreating the missing pods ${pods.map((p) => p.name).join(', ')} of ${unit.name} (the others keep running): ${error}`,
    );
}

/** Same hash already running: refresh the state file (new generation, or a lost file) without touching pods. */
async function adoptState(
  ctx: PodmanContext,
  unit: WorkloadUnit,
  state: PodmanWorkloadState | undefined,
): Promise<void> {
  let plan: Partial<PodmanPlan> = {};
  try {
    plan = planUnit(unit, ctx.owner, ctx.store.volumeRoot(unit.name, unit.hash));
  } catch {
    // It runs, so it planned once; keep what the state file had.
  }
  await ctx.store.write({
    ...emptyState(unit),
    ...(state ? pick(state) : {}),
    ...(plan.templates
      ? {
          templates: plan.templates,
          ports: plan.ports!,
          graceSeconds: plan.graceSeconds!,
          probes: plan.probes!,
          claims: plan.claims!,
        }
      : {}),
    name: unit.name,
    generation: unit.generation,
    hash: unit.hash,
    attemptedAt: state?.attemptedAt ?? Date.now(),
    ...(state?.stopped ? { stopped: true } : {}),
  });
}

function emptyState(unit: WorkloadUnit): PodmanWorkloadState {
  return {
    name: unit.name,
    generation: unit.generation,
    hash: unit.hash,
    attemptedAt: Date.now(),
    templates: [],
    ports: [],
    graceSeconds: DEFAULT_GRACE_SECONDS,
    probes: {},
    claims: [],
  };
}

function pick(s: PodmanWorkloadState): Partial<PodmanWorkloadState> {
  return { templates: s.templates, ports: s.ports, graceSeconds: s.graceSeconds, probes: s.probes, claims: s.claims };
}
