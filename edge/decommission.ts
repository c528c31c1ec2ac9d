/**
 * @module The decommission marker, `DATA/decommissioned.json`: written when the hub says this
 * edge is decommissioned (sync/client.ts `decommissioned`: a typed close while connected, or the
 * 401 with code `decommissioned` an edge that was offline gets when it dials). An agent that finds
 * it does not sync, reconcile or run workloads; `outpost edge local status` shows it and
 * `outpost edge uninstall` removes what is left (docs/operations.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import { createLogger } from '../core/logger.js';
import type { Driver } from './drivers/driver.js';

const log = createLogger('edge');

export const DECOMMISSIONED_FILE = 'decommissioned.json';

export interface Decommissioned {
  /** ISO time the agent learnt it. */
  at: string;
  /** What the hub said. */
  message: string;
}

export function readDecommissioned(dataDir: string): Decommissioned | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dataDir, DECOMMISSIONED_FILE), 'utf8')) as Decommissioned;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    // A marker that does not parse is still a marker: the hub said so once.
    return { at: '', message: `unreadable ${DECOMMISSIONED_FILE}: ${(err as Error).message}` };
  }
}

export function writeDecommissioned(dataDir: string, message: string, now = new Date()): Decommissioned {
  const d: Decommissioned = { at: now.toISOString(), message };
  const file = path.join(dataDir, DECOMMISSIONED_FILE);
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(d, null, 2), { mode: 0o600 });
  fs.renameSync(`${file}.tmp`, file);
  return d;
}

/** Stops every workload (keeping them, for `outpost edge uninstall` to remove). */
export async function stopAll(driver: Driver): Promise<void> {
  for (const w of await driver.list().catch(() => []))
    if (w.phase !== 'Paused' && w.phase !== 'Pending')
      await driver
        .stopWorkload(w.name)
        .catch((err: unknown) => log.warn({ err, workload: w.name }, 'stopping a workload of a decommissioned edge'));
}
