/**
 * @module The ConfigMap and Secret volume files of a workload, which the driver writes itself
 * instead of podman (plan.ts says why): one directory per unit hash under
 * DATADIR/podman/volumes/WORKLOAD, written before the new version is played (so a replace never
 * edits the files the running version mounts) and pruned after the apply to the one version that runs.
 * Pods of the running version played again (apply.ts `recreateMissing`) mount the same directory.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { WorkloadUnit } from '../driver.js';
import type { PodmanPlan } from './plan.js';
import type { StateStore } from './state.js';

export async function writeVolumes(store: StateStore, unit: WorkloadUnit, plan: PodmanPlan): Promise<void> {
  await rm(store.volumeRoot(unit.name, unit.hash), { recursive: true, force: true });
  await writeFiles(store, unit, plan, 'w');
}

/**
 * Writes the files of the unit's version that are not there, leaving alone those that are: pods of
 * this version run and mount them, and a rewrite would empty the directory under them for a moment.
 */
export async function restoreVolumes(store: StateStore, unit: WorkloadUnit, plan: PodmanPlan): Promise<void> {
  await writeFiles(store, unit, plan, 'wx');
}

/** The plan's volume files under the version's root; with `wx` a file already there is kept. */
async function writeFiles(store: StateStore, unit: WorkloadUnit, plan: PodmanPlan, flag: 'w' | 'wx'): Promise<void> {
  const root = store.volumeRoot(unit.name, unit.hash);
  for (const v of plan.volumes) {
    const dir = join(root, v.dir);
    await mkdir(dir, { recursive: true, mode: 0o755 });
    for (const f of v.files) {
      const file = join(dir, f.path);
      await mkdir(dirname(file), { recursive: true, mode: 0o755 });
      await writeFile(file, f.content, { mode: f.mode, flag }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
    }
  }
}

/** Deletes the workload's volume directories except `keep`. */
export async function pruneVolumes(store: StateStore, name: string, keep: string | undefined): Promise<void> {
  const dir = store.volumesOf(name);
  const entries = await readdir(dir).catch(() => [] as string[]);
  for (const e of entries) if (join(dir, e) !== keep) await rm(join(dir, e), { recursive: true, force: true });
}
