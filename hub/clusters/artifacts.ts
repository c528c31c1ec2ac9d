/**
 * @module The distribution of a cluster as artifacts the hub serves (docs/clusters.md, "The
 * artifact set"): each component is a blob of the project, signed with the hub's release key as
 * agent releases are (hub/upgrades/releases.ts `signAs`: the same scan, the same key), under a kind
 * that names the component (core/cluster.ts `artifactSignatureKind`): a signature made for the
 * kubelet is no agent release and no etcd. A ClusterTemplate's artifacts are checked at apply
 * (signature, scope, the blob in the project's store) and referenced, so garbage collection keeps
 * them while a template version names them.
 */
import type { BlobDigest } from '../../core/blobs.js';
import {
  ARTIFACT_NAMES,
  artifactSignatureKind,
  type ArtifactName,
  type ClusterTemplateSpec,
} from '../../core/cluster.js';
import { OutpostError } from '../../core/errors.js';
import { releaseScopeRefusal, verifyRelease, type SignedRelease } from '../../core/release.js';
import type { ScanVerdict } from '../scan/clamd.js';
import type { HubBlobs } from '../blobs/index.js';
import type { AgentReleases } from '../upgrades/releases.js';

export function isArtifactName(n: string): n is ArtifactName {
  return (ARTIFACT_NAMES as readonly string[]).includes(n);
}

/** Signs one artifact (`POST /api/v1/projects/P/cluster-artifacts`). */
export async function signArtifact(
  releases: Pick<AgentReleases, 'signAs'>,
  project: string,
  name: string,
  digest: string,
  version: string,
): Promise<SignedRelease & { scan: ScanVerdict }> {
  if (!isArtifactName(name))
    throw new OutpostError('invalid', `name "${name.slice(0, 64)}": use one of ${ARTIFACT_NAMES.join(', ')}`);
  return releases.signAs(
    { kind: artifactSignatureKind(name), what: `cluster artifact ${name}`, push: 'outpost cluster artifacts push DIR' },
    project,
    digest,
    version.replace(/^v/, ''),
  );
}

/** Checks every artifact of a template (inside its write transaction: throwing refuses it); returns their digests. */
export function checkTemplateArtifacts(
  publicKeyPem: string,
  blobs: Pick<HubBlobs, 'get'>,
  project: string,
  spec: ClusterTemplateSpec,
): BlobDigest[] {
  const digests: BlobDigest[] = [];
  for (const name of ARTIFACT_NAMES) {
    const a = spec.artifacts[name];
    const at = `spec.artifacts.${name}`;
    const refuse = (why: string) =>
      new OutpostError('invalid', `${at}: ${why}`, { details: [{ path: at, message: why }] });
    let r: SignedRelease;
    try {
      r = verifyRelease(publicKeyPem, a, artifactSignatureKind(name));
    } catch (err) {
      throw refuse(
        `${(err as Error).message.replace('this edge pinned at enrollment', 'of this hub')}; push it with \`outpost cluster artifacts push DIR\``,
      );
    }
    const outside = releaseScopeRefusal(r, project, `this template`);
    if (outside) throw refuse(outside.replace('`outpost agent push', '`outpost cluster artifacts push'));
    const b = blobs.get(project, r.digest);
    if (!b)
      throw refuse(`blob ${r.digest} is not in project ${project}'s blob store: push the artifacts in this project`);
    if (b.size !== r.size) throw refuse(`blob ${r.digest} holds ${b.size} bytes, the artifact says ${r.size}`);
    digests.push(r.digest);
  }
  return digests;
}
