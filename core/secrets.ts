/**
 * @module Secret values inside workloads: where they are (the `data` and `stringData` of a
 * `kind: Secret` manifest), how they are redacted for output, and the one format in which the hub
 * seals them to one edge (docs/security.md, "Secrets").
 *
 * Sealing to an edge is X25519 + HKDF-SHA256 + AES-256-GCM (an ECIES "box"): the edge makes a key
 * pair at enrollment and gives the hub the public half; the hub derives a one-value ephemeral key,
 * agrees a key with the edge's public key, and encrypts. Only the edge's private key opens it, so
 * the spec document (whose CRDT history is never truncated), the hub's database and its backups
 * hold ciphertext only. The ephemeral key is derived from a hub secret, the edge's key and the
 * value, not drawn at random: sealing the same value to the same edge gives the same text, so a
 * spec written again is not a change, and equal content keeps one content hash. The price is that
 * equal values to one edge are visibly equal; the key being unique per value and edge, the fixed
 * GCM nonce is never reused with another plaintext.
 */
import crypto from 'node:crypto';
import type { Manifest } from './resources.js';

/** What output shows instead of a Secret value; applying it back keeps the stored value. */
export const REDACTED = '<redacted>';
/** A value sealed to an edge: `oes1.` + base64url(ephemeral public key 32 | GCM tag 16 | ciphertext). */
export const EDGE_SEALED_PREFIX = 'oes1.';
/** A value sealed at rest with the hub's key (hub/secrets.ts). */
export const HUB_SEALED_PREFIX = 'ohs1.';

const SECRET_FIELDS = ['data', 'stringData'] as const;
export type SecretField = (typeof SECRET_FIELDS)[number];

export interface SecretValueAt {
  /** Index of the manifest in the workload. */
  index: number;
  secret: string;
  field: SecretField;
  key: string;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function isSecretManifest(m: unknown): boolean {
  return isObj(m) && m.kind === 'Secret';
}

/**
 * A copy of `manifests` with every Secret value replaced by `fn(value)`; manifests without Secrets
 * are shared, not copied. Non-string values (a YAML number in stringData) are passed as strings.
 */
export function mapSecretValues(manifests: Manifest[], fn: (value: string, at: SecretValueAt) => string): Manifest[] {
  return manifests.map((m, index) => {
    if (!isSecretManifest(m)) return m;
    const out: Record<string, unknown> = { ...m };
    const secret = String((m.metadata as { name?: unknown } | undefined)?.name ?? '');
    for (const field of SECRET_FIELDS) {
      const values = m[field];
      if (!isObj(values)) continue;
      out[field] = Object.fromEntries(
        Object.entries(values).map(([key, v]) => [key, fn(String(v), { index, secret, field, key })]),
      );
    }
    return out as Manifest;
  });
}

export function hasSecretValues(manifests: Manifest[]): boolean {
  return manifests.some(
    (m) => isSecretManifest(m) && SECRET_FIELDS.some((f) => isObj(m[f]) && Object.keys(m[f]).length > 0),
  );
}

/**
 * The manifest as the Kubernetes schema check should see it: a Secret `data` value that stands for
 * a stored one (REDACTED) or is sealed is not base64 but is valid, so it is checked as an empty
 * value. Anything else is checked as given.
 */
export function standInSecretValues<T extends Record<string, unknown>>(m: T): T {
  if (!isSecretManifest(m) || !isObj(m.data)) return m;
  const stands = (v: unknown) =>
    v === REDACTED || (typeof v === 'string' && (v.startsWith(HUB_SEALED_PREFIX) || v.startsWith(EDGE_SEALED_PREFIX)));
  if (!Object.values(m.data).some(stands)) return m;
  return { ...m, data: Object.fromEntries(Object.entries(m.data).map(([k, v]) => [k, stands(v) ? '' : v])) };
}

/** Every Secret value replaced by REDACTED: what the API, the CLI and the UI show by default. */
export function redactSecrets(manifests: Manifest[]): Manifest[] {
  return mapSecretValues(manifests, () => REDACTED);
}

// ---------------------------------------------------------------------------------------------
// X25519 keys as 32 raw bytes in base64url (43 characters), wrapped in the DER Node imports.

const SPKI_X25519 = Buffer.from('302a300506032b656e032100', 'hex');
const PKCS8_X25519 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const INFO = 'outpost secret v1';

const publicKeyOf = (raw: Buffer) =>
  crypto.createPublicKey({ key: Buffer.concat([SPKI_X25519, raw]), format: 'der', type: 'spki' });
const privateKeyOf = (raw: Buffer) =>
  crypto.createPrivateKey({ key: Buffer.concat([PKCS8_X25519, raw]), format: 'der', type: 'pkcs8' });
const rawPublic = (k: crypto.KeyObject) =>
  crypto.createPublicKey(k).export({ format: 'der', type: 'spki' }).subarray(SPKI_X25519.length);

/** Whether `s` is an X25519 public key in the form enrollment sends. */
export function isSealKey(s: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(s) && Buffer.from(s, 'base64url').length === 32;
}

/** The edge's key pair, made at enrollment: the public half goes to the hub, the private half stays in edge.json. */
export function newSealKeyPair(): { publicKey: string; privateKey: string } {
  const priv = crypto.randomBytes(32);
  return { publicKey: rawPublic(privateKeyOf(priv)).toString('base64url'), privateKey: priv.toString('base64url') };
}

function boxKey(shared: Buffer, ephPub: Buffer, edgePub: Buffer): Buffer {
  return Buffer.from(crypto.hkdfSync('sha256', shared, Buffer.concat([ephPub, edgePub]), INFO, 32));
}

/**
 * Seals one value to the edge holding the private half of `edgePublicKey`. `derivation` is a hub
 * secret (never sent anywhere) from which the ephemeral key is derived, with the edge's key and the value.
 */
export function sealToEdge(edgePublicKey: string, value: string, derivation: Buffer): string {
  const edgePub = Buffer.from(edgePublicKey, 'base64url');
  const seed = crypto.createHmac('sha256', derivation).update(edgePub).update('\0').update(value, 'utf8').digest();
  const eph = privateKeyOf(seed);
  const ephPub = rawPublic(eph);
  const shared = crypto.diffieHellman({ privateKey: eph, publicKey: publicKeyOf(edgePub) });
  const cipher = crypto.createCipheriv('aes-256-gcm', boxKey(shared, ephPub, edgePub), Buffer.alloc(12));
  const ct = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return EDGE_SEALED_PREFIX + Buffer.concat([ephPub, cipher.getAuthTag(), ct]).toString('base64url');
}

/** Opens a value sealed by sealToEdge with the edge's private key; throws when it is not for this key. */
export function openOnEdge(privateKey: string, sealed: string): string {
  if (!sealed.startsWith(EDGE_SEALED_PREFIX)) throw new Error('not a sealed value');
  const raw = Buffer.from(sealed.slice(EDGE_SEALED_PREFIX.length), 'base64url');
  if (raw.length < 48) throw new Error('sealed value too short');
  const ephPub = raw.subarray(0, 32);
  const priv = privateKeyOf(Buffer.from(privateKey, 'base64url'));
  const shared = crypto.diffieHellman({ privateKey: priv, publicKey: publicKeyOf(ephPub) });
  const decipher = crypto.createDecipheriv('aes-256-gcm', boxKey(shared, ephPub, rawPublic(priv)), Buffer.alloc(12));
  decipher.setAuthTag(raw.subarray(32, 48));
  try {
    return Buffer.concat([decipher.update(raw.subarray(48)), decipher.final()]).toString('utf8');
  } catch {
    throw new Error('sealed for another key (was this edge enrolled again?)');
  }
}

/**
 * The manifests with every Secret value sealed to the edge opened, as a driver needs them. Values
 * not sealed (a local override) pass as they are. Throws naming the Secret and key that fail.
 */
export function openSecretsOnEdge(privateKey: string | undefined, manifests: Manifest[]): Manifest[] {
  if (!hasSecretValues(manifests)) return manifests;
  return mapSecretValues(manifests, (v, at) => {
    if (!v.startsWith(EDGE_SEALED_PREFIX)) return v;
    try {
      if (!privateKey) throw new Error('this edge has no key (edge.json from an agent older than sealed Secrets)');
      return openOnEdge(privateKey, v);
    } catch (err) {
      throw new Error(
        `Secret ${at.secret} ${at.field}.${at.key} cannot be opened: ${(err as Error).message}; decommission the edge and enroll it again`,
        { cause: err },
      );
    }
  });
}
