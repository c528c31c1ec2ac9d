/**
 * @module One hub identity for every replica on one PostgreSQL (issue #22; docs/operations.md, "HA
 * and scale-out"). The identity is what edges and tokens pin or trust: the CA (its certificate in
 * every join token, its key signing each replica's server certificate), the secrets key (Secret
 * values at rest, and the key each edge's Secrets are sealed from), the release key (edges pin its
 * public key at enrollment). It is kept in the database (hub/state/identity.ts), sealed with the
 * identity key each replica is given (key.ts), and written into the replica's data directory
 * before TLS, secrets and the release key are loaded from there as on a single hub.
 *
 * At start, with the key: a part the database lacks is put there from this replica's files, or
 * made new (the first replica; replicas racing on an empty database read back the one that won);
 * a part the database holds is written into the files this replica lacks. A data directory that
 * holds a DIFFERENT part is refused, never overwritten: switching the CA under edges that pinned
 * it would cut them off, and another secrets key would lose the Secrets it sealed.
 *
 * Each replica still issues its own server certificate (its own names) from the shared CA:
 * hub/tls.ts issues it again when the one in the data directory is not signed by that CA.
 *
 * @example
 * await shareHubIdentity(pg, { dataDir, key: loadIdentityKey(file), ownCa: true });
 * const tls = await ensureHubTls(dataDir, { hosts }); // now the shared CA
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { newReleaseKeyPair, publicKeyOf } from '../../core/release.js';
import { createLogger } from '../../core/logger.js';
import type { IdentityRow, IdentityStore } from '../state/identity.js';
import { SECRETS_KEY_FILE, SecretBox } from '../secrets.js';
import { caFingerprint, createCa, hubTlsFiles, readIfExists, writeFileAtomic } from '../tls.js';
import { releaseKeyFile } from '../upgrades/release-key.js';
import type { IdentityKey } from './key.js';

const log = createLogger('hub:identity');

/** The parts, by their name in the table. */
export type IdentityPart = 'ca' | 'secrets-key' | 'release-key';

interface Part {
  /** The part as this data directory holds it (the value sealed in the table); undefined: none. */
  read(dataDir: string): string | undefined;
  /** A new one, for the first replica of a hub. */
  make(): Promise<string>;
  /** Writes the parts of `value` this data directory lacks. */
  write(dataDir: string, value: string): void;
  /** What may be shown without the key; equal for two values exactly when they are the same part. */
  public(value: string): string;
  /** What to do when this data directory holds another value than the database. */
  conflict(dataDir: string, local: string, shared: string): string;
}

function writeNew(file: string, data: string, mode: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileAtomic(file, data, mode);
}

const takeShared = (what: string) =>
  `To join this replica to the others, move ${what} aside and start again: the replica then takes the shared one`;
const NEW_DATABASE =
  'to make this data directory the identity the replicas share instead, start it first on a new, empty database';

const PARTS: Record<IdentityPart, Part> = {
  ca: {
    // ca.pem is written last by hub/tls.ts, so it marks a complete CA; the key may be missing on
    // a hub that was given only its certificate, and is then taken from the database.
    read: (dataDir) => {
      const f = hubTlsFiles(dataDir);
      const cert = readIfExists(f.ca);
      return cert === undefined ? undefined : JSON.stringify({ cert, key: readIfExists(f.caKey) ?? null });
    },
    make: async () => {
      const { caPem, caKeyPem } = await createCa();
      return JSON.stringify({ cert: caPem, key: caKeyPem });
    },
    write: (dataDir, value) => {
      const f = hubTlsFiles(dataDir);
      const { cert, key } = JSON.parse(value) as { cert: string; key: string | null };
      // Without ca.pem a ca-key.pem is the remains of an interrupted first start (hub/tls.ts): replaced.
      if (!fs.existsSync(f.ca)) {
        if (key !== null) writeNew(f.caKey, key, 0o600);
        writeNew(f.ca, cert, 0o644);
      } else if (key !== null && !fs.existsSync(f.caKey)) writeNew(f.caKey, key, 0o600);
    },
    public: (value) => caFingerprint((JSON.parse(value) as { cert: string }).cert),
    conflict: (dataDir, local, shared) => {
      const f = hubTlsFiles(dataDir);
      return `${f.ca} is CA ${PARTS.ca.public(local)}, but the hub identity in the database has CA ${PARTS.ca.public(shared)}: this data directory belongs to another hub, and the edges and tokens that pin its CA would stop trusting this replica. ${takeShared(f.dir)} (edges enrolled with the old CA must enroll again); ${NEW_DATABASE}`;
    },
  },
  'secrets-key': {
    read: (dataDir) => readIfExists(path.join(dataDir, SECRETS_KEY_FILE))?.trim(),
    make: async () => crypto.randomBytes(32).toString('base64url'),
    write: (dataDir, value) => {
      const file = path.join(dataDir, SECRETS_KEY_FILE);
      if (!fs.existsSync(file)) writeNew(file, `${value}\n`, 0o600);
    },
    public: (value) => new SecretBox(Buffer.from(value, 'base64url')).keyId,
    conflict: (dataDir, local, shared) => {
      const file = path.join(dataDir, SECRETS_KEY_FILE);
      return `${file} is secrets key ${PARTS['secrets-key'].public(local)}, but the hub identity in the database has key ${PARTS['secrets-key'].public(shared)}: this data directory belongs to another hub. ${takeShared(file)} (keep the old file: it opens the Secrets that hub sealed); ${NEW_DATABASE}`;
    },
  },
  'release-key': {
    read: (dataDir) => readIfExists(releaseKeyFile(dataDir)),
    make: async () => newReleaseKeyPair().privateKeyPem,
    write: (dataDir, value) => {
      const file = releaseKeyFile(dataDir);
      if (!fs.existsSync(file)) writeNew(file, value, 0o600);
    },
    public: (value) => crypto.createHash('sha256').update(publicKeyOf(value)).digest('hex').slice(0, 16),
    conflict: (dataDir, local, shared) => {
      const file = releaseKeyFile(dataDir);
      return `${file} is release key ${PARTS['release-key'].public(local)}, but the hub identity in the database has release key ${PARTS['release-key'].public(shared)}: this data directory belongs to another hub, whose edges pinned its release key. ${takeShared(path.dirname(file))}; ${NEW_DATABASE}`;
    },
  },
};

/** What may be shown of a part this data directory holds; throws naming the part when it is damaged. */
function localPublic(part: IdentityPart, dataDir: string, value: string): string {
  try {
    return PARTS[part].public(value);
  } catch (err) {
    throw new Error(
      `the hub's ${part} in ${dataDir} is unreadable (${(err as Error).message}): restore it from a backup, or move it aside to take the one the replicas share`,
      { cause: err },
    );
  }
}

export interface ShareOptions {
  dataDir: string;
  /** The identity key; undefined: this replica keeps its own files (and is checked against the table). */
  key?: IdentityKey;
  /**
   * Whether the hub makes its own TLS (no --tls-cert, no --insecure-http): the CA is then part of
   * the identity. With the operator's own certificate the CA is theirs to give every replica.
   */
  ownCa: boolean;
  /** Make the parts neither the database nor the data directory holds (a hub's start); false: `hub migrate`. */
  make?: boolean;
}

export interface SharedIdentity {
  /** The parts this call put in the database (the first replica's), by name. */
  put: IdentityPart[];
  /** The parts this call wrote into the data directory from the database. */
  taken: IdentityPart[];
  /** The shared CA's fingerprint, when the CA is part of the identity. */
  caFingerprint?: string;
}

/**
 * Makes `dataDir` hold the hub identity the database keeps (see the module comment); throws naming
 * the fix on a wrong key, a data directory of another hub, or a keyless replica whose files are
 * not the shared identity. Runs before hub/tls.ts, hub/secrets.ts and the release key read the files.
 */
export async function shareHubIdentity(store: IdentityStore, o: ShareOptions): Promise<SharedIdentity> {
  const names = (Object.keys(PARTS) as IdentityPart[]).filter((p) => p !== 'ca' || o.ownCa);
  if (!o.key) return checkKeyless(store, o.dataDir, names);

  const key = o.key;
  const before = new Map(store.all().map((r) => [r.part, r]));
  // Every row is opened, those of parts this replica does not use too: a wrong key fails here.
  for (const r of before.values()) key.open(r.part, r.sealed);
  const local = new Map(names.map((p) => [p, PARTS[p].read(o.dataDir)] as const));
  const missing: Omit<IdentityRow, 'createdAt'>[] = [];
  for (const p of names) {
    if (before.has(p)) continue;
    const value = local.get(p) ?? (o.make === false ? undefined : await PARTS[p].make());
    if (value !== undefined) missing.push({ part: p, sealed: key.seal(p, value), public: PARTS[p].public(value) });
  }
  const rows = missing.length ? store.putMissing(missing) : [...before.values()];
  const shared = new Map(rows.map((r) => [r.part, r]));
  const out: SharedIdentity = { put: [], taken: [] };
  for (const p of names) {
    const row = shared.get(p);
    if (!row) continue;
    const value = key.open(p, row.sealed);
    const mine = local.get(p);
    if (mine !== undefined && localPublic(p, o.dataDir, mine) !== PARTS[p].public(value))
      throw new Error(PARTS[p].conflict(o.dataDir, mine, value));
    // The sealed text is unique (a random nonce): the row is ours exactly when it is what we put.
    if (missing.some((m) => m.sealed === row.sealed)) out.put.push(p);
    else if (mine === undefined) out.taken.push(p);
    PARTS[p].write(o.dataDir, value);
    if (p === 'ca') out.caFingerprint = row.public;
  }
  out.put.sort();
  out.taken.sort();
  log.info(
    { put: out.put, taken: out.taken, caFingerprint: out.caFingerprint, identityKey: key.keyId },
    out.put.length ? 'put this hub identity in the database' : 'using the hub identity in the database',
  );
  return out;
}

/**
 * A replica on PostgreSQL without the identity key keeps its own files, as before the key existed.
 * That is sound only while they are the identity the other replicas use: when the table holds one,
 * files that differ (or none yet) are refused.
 */
function checkKeyless(store: IdentityStore, dataDir: string, names: IdentityPart[]): SharedIdentity {
  const rows = store.all();
  if (rows.length === 0) {
    log.warn(
      'hub replicas on this database will not share an identity (CA, secrets key, release key) without --identity-key: each keeps its own in --data (docs/operations.md, "HA and scale-out")',
    );
    return { put: [], taken: [] };
  }
  for (const r of rows) {
    if (!names.includes(r.part as IdentityPart)) continue;
    const mine = PARTS[r.part as IdentityPart].read(dataDir);
    const pub = mine === undefined ? undefined : localPublic(r.part as IdentityPart, dataDir, mine);
    if (pub !== r.public)
      throw new Error(
        `the database holds the hub identity the replicas share (${r.part} ${r.public}), and this replica's data directory ${mine === undefined ? 'has none' : `has another (${pub})`}: start it with --identity-key FILE (or OUTPOST_IDENTITY_KEY_FILE), the key file the other replicas were given`,
      );
  }
  return { put: [], taken: [], caFingerprint: rows.find((r) => r.part === 'ca')?.public };
}

/** What `outpost hub migrate` tells the operator about the identity of the hub it moved. */
export function identityAdvice(dataDir: string, shared: SharedIdentity | undefined): string {
  if (shared)
    return `the hub identity is in the database (${shared.put.join(', ') || 'nothing new'}${shared.caFingerprint ? `, CA ${shared.caFingerprint}` : ''}): start every replica with the same --identity-key`;
  const files = [hubTlsFiles(dataDir).dir, path.join(dataDir, SECRETS_KEY_FILE), path.dirname(releaseKeyFile(dataDir))];
  return `the hub identity stayed in ${dataDir}: copy ${files.join(', ')} into every other replica's --data, or start the first replica on ${dataDir} with --identity-key FILE (it puts them in the database)`;
}
