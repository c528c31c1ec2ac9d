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
import { ALL_PROJECTS_SCOPE, releaseScopeRefusal, verifyRelease, type SignedRelease } from '../../core/release.js';
import { GLOBAL_SCOPE } from '../../core/resources.js';
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
  /** `*`: for every project (a global template's); default the project's. */
  scope: string = project,
): Promise<SignedRelease & { scan: ScanVerdict }> {
  if (!isArtifactName(name))
    throw new OutpostError('invalid', `name "${name.slice(0, 64)}": use one of ${ARTIFACT_NAMES.join(', ')}`);
  return releases.signAs(
    { kind: artifactSignatureKind(name), what: `cluster artifact ${name}`, push: 'outpost cluster artifacts push DIR' },
    project,
    digest,
    version.replace(/^v/, ''),
    scope,
  );
}

/**
 * Checks every artifact of a template (inside its write transaction: throwing refuses it); returns
 * their digests. A global template's (project `*`) must be signed for every project, and each blob
 * may be in any project's store (hub/clusters/global-templates.ts takes it in).
 */
export function checkTemplateArtifacts(
  publicKeyPem: string,
  blobs: Pick<HubBlobs, 'get' | 'list'>,
  project: string,
  spec: ClusterTemplateSpec,
): BlobDigest[] {
  const hubWide = project === GLOBAL_SCOPE;
  const lookup = (d: BlobDigest) =>
    blobs.get(project, d) ?? (hubWide ? blobs.list('*').find((b) => b.digest === d) : undefined);
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
    if (hubWide && r.scope !== ALL_PROJECTS_SCOPE)
      throw refuse(
        `it is signed for project ${r.scope} only, and a global template serves every project: push the artifacts with \`outpost cluster artifacts push DIR --global\` (signed for every project)`,
      );
    const outside = releaseScopeRefusal(r, project, `this template`);
    if (outside) throw refuse(outside.replace('`outpost agent push', '`outpost cluster artifacts push'));
    const b = lookup(r.digest);
    if (!b)
      throw refuse(
        hubWide
          ? `blob ${r.digest} is in no project's blob store: push the artifacts first (outpost cluster artifacts push DIR --global)`
          : `blob ${r.digest} is not in project ${project}'s blob store: push the artifacts in this project`,
      );
    if (b.size !== r.size) throw refuse(`blob ${r.digest} holds ${b.size} bytes, the artifact says ${r.size}`);
    digests.push(r.digest);
  }
  return digests;
}
