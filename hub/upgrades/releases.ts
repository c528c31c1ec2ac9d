/**
 * @module Agent releases: an admin pushes a binary as a blob, then asks the hub to sign
 * `{version, digest, size}` with its release key (core/release.ts). The signed release goes into
 * an AgentUpgrade; edges check it against the key they pinned before they replace anything.
 *
 * The binary passes the malware scan stage first (hub/scan/clamd.ts, the hub's `--scanner`): only
 * a Clean binary is signed, so a Quarantined or unscanned one can never be deployed (an
 * AgentUpgrade's signature is verified at apply). Fail-closed: no scanner, or one that is down,
 * signs nothing.
 */
import { isDigest, type BlobDigest } from '../../core/blobs.js';
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { signRelease, type SignedRelease } from '../../core/release.js';
import type { HubBlobs } from '../blobs/index.js';
import { ScanLimitError, scanFile, type ScannerSpec, type ScanVerdict } from '../scan/clamd.js';
import type { ReleaseKey } from './release-key.js';

const log = createLogger('hub:releases');

export class AgentReleases {
  readonly publicKeyPem: string;

  constructor(
    private readonly blobs: HubBlobs,
    private readonly key: ReleaseKey,
    /** The hub's `--scanner`; undefined: none configured (nothing is signed). */
    private readonly scanner: ScannerSpec | undefined,
  ) {
    this.publicKeyPem = key.publicKeyPem;
  }

  /** Scans the binary, then signs its release; the verdict comes with it. */
  async sign(project: string, digest: string, version: string): Promise<SignedRelease & { scan: ScanVerdict }> {
    if (!isDigest(digest)) throw new OutpostError('invalid', 'digest: use sha256: and 64 hex digits');
    if (!/^[0-9A-Za-z][0-9A-Za-z.+_-]{0,99}$/.test(version))
      throw new OutpostError('invalid', `version "${version.slice(0, 100)}": use letters, digits, ".", "+", "_", "-"`);
    const b = this.blobs.get(project, digest as BlobDigest);
    if (!b)
      throw new OutpostError(
        'not_found',
        `blob ${digest} not found in project ${project}: push the binary first (outpost agent push FILE does both)`,
      );
    let scan: ScanVerdict;
    try {
      scan = await scanFile(this.scanner, this.blobs.files.path(b.digest));
    } catch (err) {
      // Over the scanner's size settings: no retry helps until they change (413, not 503).
      throw new OutpostError(
        err instanceof ScanLimitError ? 'too_large' : 'unavailable',
        `agent binary ${digest} was not scanned, so it is not signed: ${(err as Error).message}`,
      );
    }
    if (scan.state === 'Quarantined') {
      log.warn(
        { project, digest, version, signature: scan.signature, engine: scan.engine },
        'agent binary quarantined',
      );
      throw new OutpostError(
        'invalid',
        `agent binary ${digest} (${version}) is Quarantined: the malware scanner found ${scan.signature} in it (${scan.engine}); it is not signed and cannot be deployed`,
      );
    }
    const r = signRelease(this.key.privateKeyPem, { version, digest: b.digest, size: b.size });
    log.info({ project, digest, version, scan: scan.engine }, 'agent release scanned Clean and signed');
    return { ...r, scan };
  }
}
