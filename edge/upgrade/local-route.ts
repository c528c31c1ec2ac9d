/**
 * @module `POST /upgrade` of the edge's local API (`outpost edge local upgrade RELEASE.yaml`): checks
 * and stages a signed release whose binary is in this edge's blob store (edge/upgrade/release.ts),
 * records it on trial (edge/upgrade/switch.ts) and asks the agent to restart into it. A release
 * older than what the edge runs or committed is refused unless the body says `allowDowngrade`
 * (`--allow-downgrade`), as an AgentUpgrade must.
 */
import { downgradeRefusal } from '../../core/release.js';
import type { BlobFiles } from '../../sync/blob-files.js';
import { ReleaseRefused, stageRelease, verifyReleaseFor } from './release.js';
import { agentDir, installedVersions, requestSwitch } from './switch.js';

export interface UpgradeRouteDeps {
  dataDir: string;
  files: BlobFiles;
  releaseKey: string | undefined;
  /** The edge's project: releases signed for another are refused. */
  project: string;
  version: string;
  /** Closes the agent and starts `outpost edge` again, which switches to release `version`. */
  restart(version: string): void;
}

export async function upgradeRoute(d: UpgradeRouteDeps, body: unknown): Promise<{ status: number; body: unknown }> {
  const b = (body ?? {}) as { release?: unknown; deadlineSeconds?: unknown; allowDowngrade?: unknown };
  const deadline = b.deadlineSeconds ?? 120;
  if (typeof deadline !== 'number' || !Number.isInteger(deadline) || deadline < 1 || deadline > 3600)
    return { status: 400, body: { error: { message: 'deadlineSeconds must be a whole number from 1 to 3600' } } };
  if (b.allowDowngrade !== undefined && typeof b.allowDowngrade !== 'boolean')
    return { status: 400, body: { error: { message: 'allowDowngrade must be true or false' } } };
  try {
    const release = verifyReleaseFor(d, b.release);
    const downgrade = downgradeRefusal(
      release.version,
      installedVersions(d.dataDir, d.version),
      b.allowDowngrade === true,
      'pass --allow-downgrade',
    );
    if (downgrade) throw new ReleaseRefused(downgrade);
    const staged = await stageRelease(d.files, d, release, agentDir(d.dataDir));
    const s = requestSwitch(
      d.dataDir,
      { version: staged.release.version, binary: staged.binary, digest: staged.release.digest },
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
