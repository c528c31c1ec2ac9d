/**
 * @module An AgentUpgrade checked at apply (hub/upgrades/controller.ts `onObjectChange`, inside the
 * object's write transaction; throwing refuses the write with 422 naming the field): its release
 * verifies with this hub's release key and is signed for the object's project or `*` (the edges
 * check both again: edge/upgrade/release.ts), its binary is in the project's blob store, and its
 * deadline is one the edges accept.
 */
import type { BlobDigest } from '../../core/blobs.js';
import { parseDuration } from '../../core/durations.js';
import { OutpostError } from '../../core/errors.js';
import { releaseScopeRefusal, verifyRelease } from '../../core/release.js';
import type { AgentUpgrade } from '../../core/resources.js';
import type { HubBlobs } from '../blobs/index.js';

export function checkAgentUpgrade(u: AgentUpgrade, releaseKeyPem: string, blobs: HubBlobs): void {
  const { release } = u.spec;
  let verified;
  try {
    verified = verifyRelease(releaseKeyPem, release);
  } catch {
    throw new OutpostError(
      'invalid',
      `spec.release: the signature of ${release.version} (${release.digest}) does not verify with this hub's release key: use the release \`outpost agent push\` printed on this hub`,
      { details: [{ path: 'spec.release.signature', message: 'does not verify with the hub release key' }] },
    );
  }
  // The edges check it too (edge/upgrade/release.ts): saying so here spares the rollout.
  const outside = releaseScopeRefusal(verified, u.metadata.project, 'this AgentUpgrade');
  if (outside)
    throw new OutpostError('invalid', `spec.release.scope: ${outside}`, {
      details: [{ path: 'spec.release.scope', message: `not project ${u.metadata.project} or "*"` }],
    });
  const blob = blobs.get(u.metadata.project, release.digest as BlobDigest);
  if (!blob)
    throw new OutpostError(
      'invalid',
      `spec.release.digest: blob ${release.digest} is not in project ${u.metadata.project}'s blob store: push the binary with \`outpost agent push FILE\` in this project`,
      { details: [{ path: 'spec.release.digest', message: 'not in the blob store' }] },
    );
  const deadline = parseDuration(u.spec.rollout.deadline);
  if (deadline < 1_000 || deadline > 3_600_000)
    throw new OutpostError('invalid', 'spec.rollout.deadline: must be from 1s to 1h', {
      details: [{ path: 'spec.rollout.deadline', message: 'must be from 1s to 1h' }],
    });
}
