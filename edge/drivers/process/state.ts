/**
 * @module The per-workload state file of the process driver (`workloads/NAME/state.json`): what a
 * new agent needs to adopt processes it did not start. Written atomically (tmp file + rename), so a
 * kill -9 mid-write leaves the previous version, never half a file. Mode 0600: it holds the unit,
 * whose Secrets are in clear.
 */
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { WorkloadUnit } from '../driver.js';

export const STATE_VERSION = 1;

export type ProcessStatus = 'running' | 'backoff' | 'succeeded' | 'failed' | 'stopped';

export interface ProcessRecord {
  pid: number;
  /** /proc/PID/stat field 22 of the wrapper at spawn time. */
  startTime: number;
  /** Wall clock of the last spawn, for the stable-run backoff reset. */
  startedAt: number;
  status: ProcessStatus;
  restarts: number;
  /** Failures in a row without a stable run in between; drives the backoff. */
  consecutiveFailures: number;
  /** When status is backoff: wall clock of the next start. */
  nextStartAt?: number;
  lastExit?: { code: number | null; at: number; reason: string };
}

export interface WorkloadState {
  version: number;
  unit: WorkloadUnit;
  /** Set by stopWorkload; apply or startWorkload clears it. */
  stopped: boolean;
  bootId: string;
  /** Keyed by process key (`container` or `container-REPLICA`). */
  processes: Record<string, ProcessRecord>;
}

export function workloadDir(dataDir: string, name: string): string {
  return join(dataDir, 'workloads', name);
}

export function statePath(dataDir: string, name: string): string {
  return join(workloadDir(dataDir, name), 'state.json');
}

export async function writeState(dataDir: string, state: WorkloadState): Promise<void> {
  const dir = workloadDir(dataDir, state.unit.name);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = statePath(dataDir, state.unit.name);
  // A unique tmp name: two writes of one workload may overlap (supervisor tick and an apply).
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    await writeFile(tmp, JSON.stringify(state), { mode: 0o600 });
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw new Error(`writing state file ${file}`, { cause: err });
  }
}

/** Reads every workload's state file; a file that does not parse is skipped and reported. */
export async function readAllStates(
  dataDir: string,
): Promise<{ states: WorkloadState[]; errors: { file: string; error: unknown }[] }> {
  const root = join(dataDir, 'workloads');
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { states: [], errors: [] };
    throw new Error(`listing ${root}`, { cause: err });
  }
  const states: WorkloadState[] = [];
  const errors: { file: string; error: unknown }[] = [];
  for (const name of names) {
    const file = statePath(dataDir, name);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      // A directory without a state file is not ours (or a remove was cut short): ignore it.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR')
        errors.push({ file, error: err });
      continue;
    }
    try {
      const st = JSON.parse(text) as WorkloadState;
      if (st.version !== STATE_VERSION || st.unit?.name !== name)
        throw new Error(`unexpected version ${st.version} or name ${st.unit?.name}`);
      states.push(st);
    } catch (err) {
      errors.push({ file, error: err });
    }
  }
  return { states, errors };
}
