/**
 * @module Agent releases: an admin pushes a binary as a blob, then asks the hub to sign
 * `{version, digest, size}` with its release key (core/release.ts). The signed release goes into
 * an AgentUpgrade; edges check it against the key they pinned before they replace anything.
 */
import { isDigest, type BlobDigest } from '../../core/blobs.js';
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { signRelease, type SignedRelease } from '../../core/release.js';
import type { HubBlobs } from '../blobs/index.js';
import type { ReleaseKey } from './release-key.js';

const log = createLogger('hub:releases');

export class AgentReleases {
  readonly publicKeyPem: string;

  constructor(
    private readonly blobs: HubBlobs,
    private readonly key: ReleaseKey,
  ) {
    this.publicKeyPem = key.publicKeyPem;
  }

  sign(project: string, digest: string, version: string): SignedRelease {
    if (!isDigest(digest)) throw new OutpostError('invalid', 'digest: use sha256: and 64 hex digits');
    if (!/^[0-9A-Za-z][0-9A-Za-z.+_-]{0,99}$/.test(version))
      throw new OutpostError('invalid', `version "${version.slice(0, 100)}": use letters, digits, ".", "+", "_", "-"`);
    const b = this.blobs.get(project, digest as BlobDigest);
    if (!b)
      throw new OutpostError(
        'not_found',
        `blob ${digest} not found in project ${project}: push the binary first (outpost agent push FILE does both)`,
      );
    const r = signRelease(this.key.privateKeyPem, { version, digest: b.digest, size: b.size });
    log.info({ project, digest, version }, 'agent release signed');
    return r;
  }
}
