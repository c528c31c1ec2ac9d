/**
 * @module A signed release of the edge agent: the manifest `{kind, scope, version, digest, size}`
 * and an ed25519 signature over its canonical JSON, made with the hub's release key
 * (hub/upgrades/release-key.ts) and checked by the edge against the public key it pinned at
 * enrollment. The digest names the exact bytes: a transfer that delivered other bytes, or a
 * database row naming another digest, has no valid signature, so no edge runs it. The scope names
 * the project whose edges may run it (`*`: every project's): an edge of another project refuses it
 * (docs/security.md, "Agent releases").
 *
 * @example
 * const signed = signRelease(privateKeyPem, { scope: 'shop', version: '0.2.0', digest, size });
 * verifyRelease(publicKeyPem, signed); // throws with the reason when it does not hold
 * releaseScopeRefusal(signed, 'shop'); // undefined: an edge of project shop may run it
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import semver from 'semver';
import { z } from 'zod';
import { DIGEST_PATTERN, type BlobDigest } from './blobs.js';
import { NAME_PATTERN } from './ids.js';

export const RELEASE_KIND = 'outpost-agent';
/** The scope of a release every project's edges may run. */
export const ALL_PROJECTS_SCOPE = '*';

/** A project name, or `*` for every project. */
export const ReleaseScope = z
  .string()
  .refine((s) => s === ALL_PROJECTS_SCOPE || NAME_PATTERN.test(s), 'must be a project name or "*" (every project)');

export const ReleaseManifest = z.object({
  scope: ReleaseScope,
  version: z.string().min(1).max(100),
  digest: z.string().regex(DIGEST_PATTERN),
  size: z.number().int().min(1),
});
export type ReleaseManifest = z.infer<typeof ReleaseManifest> & { digest: BlobDigest };

const SIGNATURE = z.string().regex(/^[A-Za-z0-9+/=]{40,200}$/);
/**
 * A release as it travels (an AgentUpgrade's `spec.release`, an upgrade order). `scope` is optional
 * here only so that a release signed before releases had one still parses, and verifyRelease can
 * refuse it by name instead of an order being dropped as malformed.
 */
export const SignedRelease = ReleaseManifest.extend({ scope: ReleaseScope.optional(), signature: SIGNATURE });
export type SignedRelease = ReleaseManifest & { signature: string };

/**
 * The bytes signed: fixed key order, so both sides compute the same text. `kind` says what the
 * bytes are for (an agent binary, or a cluster artifact named in it: hub/clusters/artifacts.ts), so
 * a signature made for one use is never valid for another.
 */
export function releasePayload(m: ReleaseManifest, kind = RELEASE_KIND): Buffer {
  return Buffer.from(
    JSON.stringify({ kind, scope: m.scope, version: m.version, digest: m.digest, size: m.size }),
    'utf8',
  );
}

export function newReleaseKeyPair(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

export function publicKeyOf(privateKeyPem: string): string {
  return createPublicKey(createPrivateKey(privateKeyPem)).export({ type: 'spki', format: 'pem' }).toString();
}

export function signRelease(privateKeyPem: string, m: ReleaseManifest, kind = RELEASE_KIND): SignedRelease {
  const signature = sign(null, releasePayload(m, kind), createPrivateKey(privateKeyPem)).toString('base64');
  return { scope: m.scope, version: m.version, digest: m.digest, size: m.size, signature };
}

/**
 * Throws a message naming what failed: the form of the release, a release without a scope (signed
 * before releases had one: its signature says nothing of where it may run, so it is refused, not
 * trusted everywhere), or its signature under the pinned key.
 */
export function verifyRelease(publicKeyPem: string, r: unknown, kind = RELEASE_KIND): SignedRelease {
  const parsed = SignedRelease.safeParse(r);
  if (!parsed.success)
    throw new Error(
      `the release is malformed: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`,
    );
  const s = parsed.data;
  if (s.scope === undefined)
    throw new Error(
      `release ${s.version} (${s.digest}) has no scope: it was signed by a hub from before releases were bound to a project, and its signature does not say which edges may run it: refused; have an admin for every project push the binary again (\`outpost agent push\`)`,
    );
  const release = s as SignedRelease;
  let ok = false;
  try {
    ok = verify(null, releasePayload(release, kind), createPublicKey(publicKeyPem), Buffer.from(s.signature, 'base64'));
  } catch {
    ok = false;
  }
  if (!ok)
    throw new Error(
      `the signature of ${kind === RELEASE_KIND ? 'release' : kind} ${s.version} (${s.digest}, for ${scopeWords(release.scope)}) does not verify with the release key this edge pinned at enrollment: refused`,
    );
  return release;
}

function scopeWords(scope: string): string {
  return scope === ALL_PROJECTS_SCOPE ? 'every project' : `project ${scope}`;
}

/** Why `holder` (an edge, an AgentUpgrade) of `project` may not use the verified release `r`; undefined when it may. */
export function releaseScopeRefusal(r: SignedRelease, project: string, holder = 'this edge'): string | undefined {
  if (r.scope === ALL_PROJECTS_SCOPE || r.scope === project) return undefined;
  return `release ${r.version} is signed for project ${r.scope}, and ${holder} is in project ${project}: refused; have an admin for every project push it for project ${project} (\`outpost agent push --project ${project}\`) or for every project (\`--all-projects\`)`;
}

/** A version `semver` can order: canonical MAJOR.MINOR.PATCH[-PRE][+BUILD], as the binary reports it. */
export const isReleaseVersion = (v: string) => semver.valid(v) === v;

/** A version the edge runs or committed, named for the message: `0.3.0, the release committed on this edge`. */
export interface InstalledVersion {
  version: string;
  what: string;
}

/**
 * The newest of `installed` that release `version` is older than (semver), if any. Versions that
 * are not semantic versions (a development build) bound nothing.
 */
export function newerInstalled(version: string, installed: InstalledVersion[]): InstalledVersion | undefined {
  if (!isReleaseVersion(version)) return undefined;
  return installed
    .filter((i) => isReleaseVersion(i.version) && semver.lt(version, i.version))
    .sort((a, b) => semver.rcompare(a.version, b.version))[0];
}

/**
 * Why switching to release `version` would be a downgrade the order does not allow: it is older
 * than a version the edge runs or committed, or it is not a semantic version (so it cannot be
 * ordered). Undefined: not a downgrade, or `allowDowngrade`. `fix` says how to allow it.
 *
 * @example
 * downgradeRefusal('0.2.0', [{ version: '0.3.0', what: 'the release committed on this edge' }], false, 'pass --allow-downgrade');
 * // 'release 0.2.0 is older than 0.3.0, the release committed on this edge: refused as a downgrade; to go back on purpose pass --allow-downgrade'
 */
export function downgradeRefusal(
  version: string,
  installed: InstalledVersion[],
  allowDowngrade: boolean,
  fix: string,
): string | undefined {
  if (allowDowngrade) return undefined;
  if (!isReleaseVersion(version))
    return `release version ${version} is not a semantic version (MAJOR.MINOR.PATCH): this edge cannot tell whether it is older than what it runs: refused; to switch anyway ${fix}`;
  const newer = newerInstalled(version, installed);
  return newer
    ? `release ${version} is older than ${newer.version}, ${newer.what}: refused as a downgrade; to go back on purpose ${fix}`
    : undefined;
}
