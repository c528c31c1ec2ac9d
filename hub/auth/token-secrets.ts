/**
 * @module The helpers every token kind shares: random ids and secrets, sha256 hashes (a stolen
 * database yields no usable token), constant-time comparison. The tables are hub/state/auth.ts's.
 *
 * Each table is keyed by the token id, a non-secret lookup key; only the secret is compared, and
 * in constant time, so response timing tells an attacker nothing about how close a guess was.
 */
import crypto from 'node:crypto';

/** A lookup key: 8 random bytes as 16 hex characters. Not secret. */
export function newId(): string {
  return crypto.randomBytes(8).toString('hex');
}

/** 32 random bytes, base64url without padding (43 characters). */
export function newSecret(): string {
  return crypto.randomBytes(32).toString('base64url');
}

export function hashSecret(secret: string): Buffer {
  return crypto.createHash('sha256').update(secret, 'utf8').digest();
}

/**
 * Compares a presented secret with a stored hash in constant time. Hashing first gives both
 * sides the same length, which timingSafeEqual requires, whatever was presented.
 */
export function secretMatches(secret: string, storedHash: Buffer): boolean {
  const presented = hashSecret(secret);
  return storedHash.length === presented.length && crypto.timingSafeEqual(presented, storedHash);
}
