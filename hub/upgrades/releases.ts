/**
 * @module Agent releases: an admin for every project pushes a binary as a blob, then asks the hub
 * to sign `{scope, version, digest, size}` with its release key (core/release.ts): the scope is the
 * project whose edges may run it, or `*` for every project's. The signed release goes into an
 * AgentUpgrade; edges check it against the key they pinned, and its scope against their project,
 * before they replace anything.
 *
 * The binary passes the malware scan stage first (hub/scan/clamd.ts, the hub's `--scanner`): only
 * a Clean binary is signed, so a Quarantined or unscanned one can never be deployed (an
 * AgentUpgrade's signature is verified at apply). Fail-closed: no scanner, or one that is down,
 * signs nothing.
 */
import { isDigest, type BlobDigest } from '../../core/blobs.js';
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import {
  ALL_PROJECTS_SCOPE,
  isReleaseVersion,
  RELEASE_KIND,
  signRelease,
  type SignedRelease,
} from '../../core/release.js';
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
  async sign(
    project: string,
    digest: string,
    version: string,
    scope: string = project,
  ): Promise<SignedRelease & { scan: ScanVerdict }> {
    return this.signAs(
      { kind: RELEASE_KIND, what: 'agent binary', push: 'outpost agent push FILE' },
      project,
      digest,
      version,
      scope,
    );
  }

  /**
   * The same scan and signature for another use of the release key: `use.kind` goes into what is
   * signed (core/release.ts `releasePayload`), so the signature holds for that use only (a cluster
   * artifact, hub/clusters/artifacts.ts); `what` and `push` name the file and its command in errors.
   */
  async signAs(
    use: { kind: string; what: string; push: string },
    project: string,
    digest: string,
    version: string,
    scope: string = project,
  ): Promise<SignedRelease & { scan: ScanVerdict }> {
    if (!isDigest(digest)) throw new OutpostError('invalid', 'digest: use sha256: and 64 hex digits');
    // Edges order releases by version to refuse a downgrade: one they cannot order is not signed.
    if (version.length > 100 || !isReleaseVersion(version))
      throw new OutpostError(
        'invalid',
        `version "${version.slice(0, 100)}": use a semantic version as the binary reports it, e.g. 0.2.0 or 0.3.0-rc.1`,
      );
    if (scope !== project && scope !== ALL_PROJECTS_SCOPE)
      throw new OutpostError(
        'invalid',
        `scope "${scope.slice(0, 100)}": a release pushed in project ${project} is for project ${project} or for every project ("*")`,
      );
    const b = this.blobs.get(project, digest as BlobDigest);
    if (!b)
      throw new OutpostError(
        'not_found',
        `blob ${digest} not found in project ${project}: push the file first (${use.push} does both)`,
      );
    let scan: ScanVerdict;
    try {
      scan = await scanFile(this.scanner, this.blobs.files.path(b.digest));
    } catch (err) {
      // Over the scanner's size settings: no retry helps until they change (413, not 503).
      throw new OutpostError(
        err instanceof ScanLimitError ? 'too_large' : 'unavailable',
        `${use.what} ${digest} was not scanned, so it is not signed: ${(err as Error).message}`,
      );
    }
    this.blobs.recordScan(project, b.digest, {
      state: scan.state,
      ...(scan.signature ? { signature: scan.signature } : {}),
      engine: scan.engine,
      scannedAt: new Date().toISOString(),
    });
    if (scan.state === 'Quarantined') {
      log.warn({ project, digest, version, signature: scan.signature, engine: scan.engine }, `${use.what} quarantined`);
      throw new OutpostError(
        'invalid',
        `${use.what} ${digest} (${version}) is Quarantined: the malware scanner found ${scan.signature} in it (${scan.engine}); it is not signed and cannot be deployed`,
      );
    }
    const r = signRelease(this.key.privateKeyPem, { scope, version, digest: b.digest, size: b.size }, use.kind);
    log.info(
      { project, scope, digest, version, scan: scan.engine, kind: use.kind },
      `${use.what} scanned Clean and signed`,
    );
    return { ...r, scan };
  }
}
