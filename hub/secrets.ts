/**
 * @module Secret values on the hub (docs/security.md, "Secrets"): sealed at rest with the hub's key
 * (DATA/secrets.key, 32 random bytes, mode 0600, never in a backup), opened only to reveal them to
 * an operator who asks or to seal them again to one edge's public key for its spec document.
 *
 * At rest: AES-256-GCM, `ohs1.<key id>.<base64url(nonce 12 | tag 16 | ciphertext)>`. The nonce is
 * an HMAC of the value (a synthetic IV): the same value seals to the same text, so applying an
 * unchanged workload is no change (no new revision, no new generation on the edges), at the cost
 * that equal values are visibly equal. Different values get different nonces, so GCM never sees a
 * nonce twice with two plaintexts.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { OutpostError } from '../core/errors.js';
import type { Manifest } from '../core/resources.js';
import {
  EDGE_SEALED_PREFIX,
  hasSecretValues,
  HUB_SEALED_PREFIX,
  mapSecretValues,
  REDACTED,
  redactSecrets,
  sealToEdge,
  type SecretValueAt,
} from '../core/secrets.js';

export const SECRETS_KEY_FILE = 'secrets.key';

const subkey = (key: Buffer, label: string) => Buffer.from(crypto.hkdfSync('sha256', key, '', label, 32));
const where = (at: SecretValueAt) => `spec.manifests[${at.index}] (Secret ${at.secret}) ${at.field}.${at.key}`;

export class SecretBox {
  readonly keyId: string;
  private readonly enc: Buffer;
  private readonly nonce: Buffer;
  /** What sealToEdge derives its ephemeral keys from. */
  readonly edgeDerivation: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error(`a secrets key is 32 bytes, got ${key.length}`);
    this.keyId = crypto.createHash('sha256').update(key).digest('hex').slice(0, 8);
    this.enc = subkey(key, 'outpost hub secrets: encryption');
    this.nonce = subkey(key, 'outpost hub secrets: nonce');
    this.edgeDerivation = subkey(key, 'outpost hub secrets: edge seal');
  }

  seal(value: string): string {
    const iv = crypto.createHmac('sha256', this.nonce).update(value, 'utf8').digest().subarray(0, 12);
    const c = crypto.createCipheriv('aes-256-gcm', this.enc, iv);
    const ct = Buffer.concat([c.update(value, 'utf8'), c.final()]);
    return `${HUB_SEALED_PREFIX}${this.keyId}.${Buffer.concat([iv, c.getAuthTag(), ct]).toString('base64url')}`;
  }

  open(sealed: string): string {
    const m = /^ohs1\.([0-9a-f]{8})\.([A-Za-z0-9_-]+)$/.exec(sealed);
    if (!m) throw new Error('not a value sealed by a hub');
    if (m[1] !== this.keyId)
      throw new Error(
        `sealed with hub key ${m[1]}, but ${SECRETS_KEY_FILE} is key ${this.keyId}: put back the ${SECRETS_KEY_FILE} that belongs to this database`,
      );
    const raw = Buffer.from(m[2], 'base64url');
    const d = crypto.createDecipheriv('aes-256-gcm', this.enc, raw.subarray(0, 12));
    d.setAuthTag(raw.subarray(12, 28));
    try {
      return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8');
    } catch {
      throw new Error('a sealed value was altered (authentication failed)');
    }
  }
}

/**
 * Loads DATA/secrets.key, or creates it (mode 0600) on a hub whose database holds no sealed value.
 * A database with sealed values and no key file is a restore that forgot the key: refusing to
 * start says so, where making a new key would lose every Secret.
 */
export function loadSecretsKey(dataDir: string, sealedKeyIdInDb: string | undefined): SecretBox {
  const file = path.join(dataDir, SECRETS_KEY_FILE);
  let box: SecretBox;
  if (fs.existsSync(file)) {
    const text = fs.readFileSync(file, 'utf8').trim();
    const key = Buffer.from(text, 'base64url');
    if (!/^[A-Za-z0-9_-]{43}$/.test(text) || key.length !== 32)
      throw new Error(`${file} is not a secrets key (43 base64url characters): restore it from where you keep it`);
    if ((fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, 0o600);
    box = new SecretBox(key);
  } else {
    if (sealedKeyIdInDb)
      throw new Error(
        `${file} is missing but the database holds Secrets sealed with key ${sealedKeyIdInDb}: copy the secrets.key of this hub (kept apart from its backups) into ${dataDir}; without it those Secrets cannot be read (docs/operations.md, "Backup and restore")`,
      );
    const key = crypto.randomBytes(32);
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, `${key.toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    box = new SecretBox(key);
  }
  if (sealedKeyIdInDb && sealedKeyIdInDb !== box.keyId)
    throw new Error(
      `the database holds Secrets sealed with key ${sealedKeyIdInDb}, but ${file} is key ${box.keyId}: put back the secrets.key of this hub`,
    );
  return box;
}

/** What the hub does with Secret values: the object store, the API and the scheduler call these. */
export class HubSecrets {
  constructor(
    readonly box: SecretBox,
    /** The edge's public key from enrollment; undefined for an edge enrolled by an older agent. */
    private readonly edgeKey: (edge: string) => string | undefined,
  ) {}

  /**
   * Seals a workload's Secret values for storage. A value already sealed by this hub is kept (a
   * rollback, a stored object applied again), REDACTED takes the stored value of the same Secret
   * key from `current` (get -o yaml, edit, apply), anything else is sealed.
   */
  sealForStorage(manifests: Manifest[], current: Manifest[] | undefined): Manifest[] {
    if (!hasSecretValues(manifests)) return manifests;
    const stored = new Map<string, string>();
    if (current)
      mapSecretValues(current, (v, at) => {
        stored.set(`${at.secret}\0${at.field}\0${at.key}`, v);
        return v;
      });
    return mapSecretValues(manifests, (v, at) => {
      if (v === REDACTED) {
        const s = stored.get(`${at.secret}\0${at.field}\0${at.key}`);
        if (s === undefined)
          throw new OutpostError(
            'invalid',
            `${where(at)}: is ${REDACTED} but the stored workload has no such value to keep: give the value (outpost get --show-secrets shows the stored ones)`,
          );
        return s;
      }
      if (v.startsWith(HUB_SEALED_PREFIX)) {
        try {
          this.box.open(v);
        } catch (err) {
          throw new OutpostError('invalid', `${where(at)}: ${(err as Error).message}`);
        }
        return v;
      }
      if (v.startsWith(EDGE_SEALED_PREFIX))
        throw new OutpostError('invalid', `${where(at)}: is sealed to an edge; give the plain value`);
      return this.box.seal(v);
    });
  }

  redact(manifests: Manifest[]): Manifest[] {
    return hasSecretValues(manifests) ? redactSecrets(manifests) : manifests;
  }

  reveal(manifests: Manifest[]): Manifest[] {
    if (!hasSecretValues(manifests)) return manifests;
    return mapSecretValues(manifests, (v) => (v.startsWith(HUB_SEALED_PREFIX) ? this.box.open(v) : v));
  }

  /** Why this edge cannot receive these manifests, or undefined when it can. */
  cannotReceive(edge: string, manifests: Manifest[]): string | undefined {
    if (!hasSecretValues(manifests) || this.edgeKey(edge)) return undefined;
    return `edge ${edge} has no key to receive Secrets (it was enrolled by an agent older than sealed Secrets): decommission it and enroll it again`;
  }

  /** One value sealed to one edge's key (a cluster node's PKI, hub/clusters/); throws when the edge has no key. */
  sealValueForEdge(edge: string, value: string): string {
    const key = this.edgeKey(edge);
    if (!key)
      throw new Error(
        `edge ${edge} has no key to receive secrets (it was enrolled by an agent older than sealed Secrets): decommission it and enroll it again`,
      );
    return sealToEdge(key, value, this.box.edgeDerivation);
  }

  /** The manifests as written into one edge's spec document: every Secret value sealed to that edge. */
  sealForEdge(edge: string, manifests: Manifest[]): Manifest[] {
    if (!hasSecretValues(manifests)) return manifests;
    const key = this.edgeKey(edge);
    if (!key) throw new Error(this.cannotReceive(edge, manifests));
    return mapSecretValues(manifests, (v) =>
      sealToEdge(key, v.startsWith(HUB_SEALED_PREFIX) ? this.box.open(v) : v, this.box.edgeDerivation),
    );
  }
}
