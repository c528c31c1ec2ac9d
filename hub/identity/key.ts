/**
 * @module The identity key (`outpost hub --identity-key FILE`, OUTPOST_IDENTITY_KEY_FILE): 32
 * random bytes, base64, that every hub replica on one PostgreSQL is given, and that seals the
 * parts of the hub's identity the database keeps (hub/state/identity.ts). The operator makes it
 * once (`outpost hub identity-key > FILE`) and hands the same file to each replica like any other
 * secret (docs/operations.md, "HA and scale-out").
 *
 * Sealed: AES-256-GCM with a random 12-byte nonce, the part's name as additional data (a row
 * copied onto another part does not open), `oid1.<key id>.<base64url(nonce | tag | ciphertext)>`.
 * The key id (8 hex digits of the key's sha256) names a wrong key in the error before any
 * decryption is tried.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createLogger } from '../../core/logger.js';

const log = createLogger('hub:identity');

const PREFIX = 'oid1.';
const MAKE_ONE = 'make one with `outpost hub identity-key > FILE` and give the same file to every replica';

/** A new identity key, as the file holds it: base64url and a newline. */
export function newIdentityKey(): string {
  return `${crypto.randomBytes(32).toString('base64url')}\n`;
}

export class IdentityKey {
  readonly keyId: string;

  constructor(
    private readonly key: Buffer,
    /** Where the key came from, for messages. */
    readonly source: string,
  ) {
    if (key.length !== 32) throw new Error(`an identity key is 32 bytes, got ${key.length}`);
    this.keyId = crypto.createHash('sha256').update(key).digest('hex').slice(0, 8);
  }

  seal(part: string, value: string): string {
    const iv = crypto.randomBytes(12);
    const c = crypto.createCipheriv('aes-256-gcm', this.key, iv);
    c.setAAD(Buffer.from(part, 'utf8'));
    const ct = Buffer.concat([c.update(value, 'utf8'), c.final()]);
    return `${PREFIX}${this.keyId}.${Buffer.concat([iv, c.getAuthTag(), ct]).toString('base64url')}`;
  }

  /** The value of a sealed part; throws naming the fix when this key cannot open it. */
  open(part: string, sealed: string): string {
    const m = /^oid1\.([0-9a-f]{8})\.([A-Za-z0-9_-]{38,})$/.exec(sealed);
    if (!m)
      throw new Error(`the hub identity part "${part}" in the database is not sealed by a hub: restore the database`);
    if (m[1] !== this.keyId)
      throw new Error(
        `the hub identity in the database is sealed with identity key ${m[1]}, but ${this.source} is key ${this.keyId}: give this replica the key file the other replicas were started with`,
      );
    const raw = Buffer.from(m[2], 'base64url');
    const d = crypto.createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    d.setAAD(Buffer.from(part, 'utf8'));
    d.setAuthTag(raw.subarray(12, 28));
    try {
      return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8');
    } catch {
      throw new Error(
        `cannot open the hub identity part "${part}" with ${this.source} (key ${this.keyId}): the row was altered, or the key is not the one the other replicas use`,
      );
    }
  }
}

/** Reads an identity key file (base64 or base64url of 32 bytes); throws naming the fix. */
export function loadIdentityKey(file: string): IdentityKey {
  const source = `--identity-key ${file}`;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'ENOENT'
        ? `${source} does not exist: ${MAKE_ONE}`
        : `cannot read ${source} (${code ?? (err as Error).message}): check its path and permissions`,
      { cause: err },
    );
  }
  // Node's base64 decoder reads both alphabets: a key made with `openssl rand -base64 32` works too.
  const key = /^[A-Za-z0-9+/_-]+=*$/.test(text) ? Buffer.from(text, 'base64') : undefined;
  if (!key || key.length !== 32)
    throw new Error(
      `${source} is not an identity key (32 random bytes in base64, ${text.length} characters found${key ? `, ${key.length} bytes` : ''}): ${MAKE_ONE}`,
    );
  // Not refused: the file is the operator's, placed by their tooling; but said, since it opens the CA key.
  if ((fs.statSync(file).mode & 0o077) !== 0)
    log.warn({ file }, 'the identity key file can be read by other users: make it mode 0600, owned by the hub user');
  return new IdentityKey(key, source);
}
