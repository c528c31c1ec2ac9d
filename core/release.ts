/**
 * @module A signed release of the edge agent: the manifest `{kind, version, digest, size}` and an
 * ed25519 signature over its canonical JSON, made with the hub's release key
 * (hub/upgrades/release-key.ts) and checked by the edge against the public key it pinned at
 * enrollment. The digest names the exact bytes: a transfer that delivered other bytes, or a
 * database row naming another digest, has no valid signature, so no edge runs it.
 *
 * @example
 * const signed = signRelease(privateKeyPem, { version: '0.2.0', digest, size });
 * verifyRelease(publicKeyPem, signed); // throws with the reason when it does not hold
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { z } from 'zod';
import { DIGEST_PATTERN, type BlobDigest } from './blobs.js';

export const RELEASE_KIND = 'outpost-agent';

export const ReleaseManifest = z.object({
  version: z.string().min(1).max(100),
  digest: z.string().regex(DIGEST_PATTERN),
  size: z.number().int().min(1),
});
export type ReleaseManifest = z.infer<typeof ReleaseManifest> & { digest: BlobDigest };

export const SignedRelease = ReleaseManifest.extend({ signature: z.string().regex(/^[A-Za-z0-9+/=]{40,200}$/) });
export type SignedRelease = ReleaseManifest & { signature: string };

/** The bytes signed: fixed key order, so both sides compute the same text. */
export function releasePayload(m: ReleaseManifest): Buffer {
  return Buffer.from(
    JSON.stringify({ kind: RELEASE_KIND, version: m.version, digest: m.digest, size: m.size }),
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

export function signRelease(privateKeyPem: string, m: ReleaseManifest): SignedRelease {
  const signature = sign(null, releasePayload(m), createPrivateKey(privateKeyPem)).toString('base64');
  return { version: m.version, digest: m.digest, size: m.size, signature };
}

/** Throws a message naming what failed: the form of the release, or its signature under the pinned key. */
export function verifyRelease(publicKeyPem: string, r: unknown): SignedRelease {
  const parsed = SignedRelease.safeParse(r);
  if (!parsed.success)
    throw new Error(
      `the release is malformed: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`,
    );
  const s = parsed.data as SignedRelease;
  let ok = false;
  try {
    ok = verify(null, releasePayload(s), createPublicKey(publicKeyPem), Buffer.from(s.signature, 'base64'));
  } catch {
    ok = false;
  }
  if (!ok)
    throw new Error(
      `the signature of release ${s.version} (${s.digest}) does not verify with the release key this edge pinned at enrollment: refused`,
    );
  return s;
}
