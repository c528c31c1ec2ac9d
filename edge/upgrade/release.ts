/**
 * @module Before anything is replaced: a release is checked against the release key this edge
 * pinned at enrollment (core/release.ts), its scope against the edge's project, the blob's bytes
 * are hashed again and compared with the signed digest and size, and only then is the binary
 * copied beside the running one (`DATA/agent/outpost-VERSION-DIGEST12`, mode 0755, by rename: named
 * by its bytes too, so a rebuilt release of the same version never replaces the file a committed
 * release runs from, or a rollback returns to). A release
 * that fails any check leaves no file behind and changes nothing. Whether it may replace a newer
 * version is the order's question (edge/upgrade/orders.ts, local-route.ts: downgradeRefusal).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { releaseScopeRefusal, verifyRelease, type SignedRelease } from '../../core/release.js';
import { sha256File, type BlobFiles } from '../../sync/blob-files.js';

export class ReleaseRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReleaseRefused';
  }
}

/** What an edge trusts a release by: the key it pinned at enrollment and the project it is in. */
export interface ReleaseTrust {
  releaseKey: string | undefined;
  project: string;
}

/** Checks signature and scope, not the bytes; returns the verified release. Throws ReleaseRefused with the reason. */
export function verifyReleaseFor(trust: ReleaseTrust, release: unknown, kind?: string): SignedRelease {
  if (!trust.releaseKey)
    throw new ReleaseRefused(
      'this edge pinned no release key at enrollment (it enrolled with an older hub): it cannot verify releases; enroll it again to upgrade it from the hub',
    );
  let r: SignedRelease;
  try {
    r = verifyRelease(trust.releaseKey, release, kind);
  } catch (err) {
    throw new ReleaseRefused((err as Error).message);
  }
  const outside = releaseScopeRefusal(r, trust.project);
  if (outside) throw new ReleaseRefused(outside);
  return r;
}

/** Checks signature, scope, digest and size; returns the verified release. Throws ReleaseRefused with the reason. */
export async function checkRelease(
  files: BlobFiles,
  trust: ReleaseTrust,
  release: unknown,
  kind?: string,
): Promise<SignedRelease> {
  const r = verifyReleaseFor(trust, release, kind);
  const file = files.path(r.digest);
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch {
    throw new ReleaseRefused(`the binary ${r.digest} of release ${r.version} is not in the edge's blob store`);
  }
  if (size !== r.size)
    throw new ReleaseRefused(`the binary of release ${r.version} has ${size} bytes, the release says ${r.size}`);
  const actual = await sha256File(file);
  if (actual !== r.digest)
    throw new ReleaseRefused(
      `the binary of release ${r.version} hashes to ${actual}, the signed release says ${r.digest}`,
    );
  return r;
}

/** Verifies, then installs the binary under `dir`; returns its path. */
export async function stageRelease(
  files: BlobFiles,
  trust: ReleaseTrust,
  release: unknown,
  dir: string,
): Promise<{ release: SignedRelease; binary: string }> {
  const r = await checkRelease(files, trust, release);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const binary = path.join(dir, `outpost-${r.version}-${r.digest.slice('sha256:'.length, 'sha256:'.length + 12)}`);
  const tmp = `${binary}.tmp`;
  await fsp.copyFile(files.path(r.digest), tmp);
  await fsp.chmod(tmp, 0o755);
  const fh = await fsp.open(tmp, 'r');
  await fh.sync();
  await fh.close();
  // The copy is what runs: hash it too, so a disk error between check and copy cannot slip through.
  if ((await sha256File(tmp)) !== r.digest) {
    await fsp.rm(tmp, { force: true });
    throw new ReleaseRefused(`the staged copy of release ${r.version} does not hash to ${r.digest} (disk error?)`);
  }
  await fsp.rename(tmp, binary);
  return { release: r, binary };
}
