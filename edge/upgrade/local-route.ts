/**
 * @module `POST /upgrade` of the edge's local API (`outpost edge local upgrade RELEASE.yaml`): checks
 * and stages a signed release whose binary is in this edge's blob store (edge/upgrade/release.ts),
 * records it on trial (edge/upgrade/switch.ts) and asks the agent to restart into it.
 */
import type { BlobFiles } from '../../sync/blob-files.js';
import { ReleaseRefused, stageRelease } from './release.js';
import { agentDir, requestSwitch } from './switch.js';

export interface UpgradeRouteDeps {
  dataDir: string;
  files: BlobFiles;
  releaseKey: string | undefined;
  version: string;
  /** Closes the agent and starts `outpost edge` again, which switches to release `version`. */
  restart(version: string): void;
}

export async function upgradeRoute(d: UpgradeRouteDeps, body: unknown): Promise<{ status: number; body: unknown }> {
  const b = (body ?? {}) as { release?: unknown; deadlineSeconds?: unknown };
  const deadline = b.deadlineSeconds ?? 120;
  if (typeof deadline !== 'number' || !Number.isInteger(deadline) || deadline < 1 || deadline > 3600)
    return { status: 400, body: { error: { message: 'deadlineSeconds must be a whole number from 1 to 3600' } } };
  try {
    const staged = await stageRelease(d.files, d.releaseKey, b.release, agentDir(d.dataDir));
    const s = requestSwitch(
      d.dataDir,
      { version: staged.release.version, binary: staged.binary },
      d.version,
      deadline * 1000,
    );
    setImmediate(() => d.restart(staged.release.version));
    return { status: 202, body: s };
  } catch (err) {
    if (err instanceof ReleaseRefused) return { status: 422, body: { error: { message: err.message } } };
    throw err;
  }
}
