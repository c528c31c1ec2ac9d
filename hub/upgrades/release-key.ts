/**
 * @module The hub's release key (docs/operations.md, "Upgrading edges from the hub"): an ed25519
 * key pair made at the first start in `DATA/release/` (the private key 0600, beside the CA key,
 * backed up with the data directory). The public key goes to every edge at enrollment, which
 * pins it; the private key signs agent releases an admin pushes (core/release.ts). It lives in a
 * file, not in the database: a database row alone cannot sign anything. (Hub replicas on one
 * PostgreSQL keep it there sealed with their identity key, and write it here: hub/identity/.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { newReleaseKeyPair, publicKeyOf } from '../../core/release.js';

export interface ReleaseKey {
  privateKeyPem: string;
  publicKeyPem: string;
}

/** The release private key's file in a hub data directory. */
export const releaseKeyFile = (dataDir: string) => path.join(dataDir, 'release', 'release-key.pem');

export function ensureReleaseKey(dataDir: string): ReleaseKey {
  const keyFile = releaseKeyFile(dataDir);
  const dir = path.dirname(keyFile);
  const pubFile = path.join(dir, 'release.pub.pem');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!fs.existsSync(keyFile)) {
    const k = newReleaseKeyPair();
    const tmp = `${keyFile}.tmp`;
    fs.writeFileSync(tmp, k.privateKeyPem, { mode: 0o600 });
    fs.renameSync(tmp, keyFile);
  }
  let privateKeyPem: string;
  try {
    privateKeyPem = fs.readFileSync(keyFile, 'utf8');
    const publicKeyPem = publicKeyOf(privateKeyPem);
    fs.writeFileSync(pubFile, publicKeyPem, { mode: 0o644 });
    return { privateKeyPem, publicKeyPem };
  } catch (err) {
    throw new Error(
      `cannot read the release key ${keyFile}: restore it from the hub's backup (edges pinned its public key and refuse releases signed by another)`,
      { cause: err },
    );
  }
}
