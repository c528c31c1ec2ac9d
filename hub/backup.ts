/**
 * @module Online backup of a hub's data: one consistent copy of the one database file (documents,
 * sync states, objects, tokens) taken while the hub keeps running and writing. Restoring is
 * starting a hub on a directory holding the copy (plus the TLS files, so that tokens' CA pins
 * stay valid).
 *
 * `VACUUM INTO` copies the database in one read transaction: the hub's writes go on beside it (WAL)
 * and the copy is the state at its start. SQLite's stepped backup API, used before, started over
 * on every write by another connection: under ~9 applies a second it did not finish until the
 * writes stopped. The copy holds secrets (tokens' hashes, Secret manifests): it is created 0600.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openSqlite } from '../sync/native.js';

export async function backupHub(dataDir: string, to: string): Promise<{ bytes: number; ms: number }> {
  const src = path.join(dataDir, 'hub.db');
  if (!fs.existsSync(src)) throw new Error(`${dataDir} holds no hub database (hub.db): check --data`);
  const t0 = performance.now();
  // Created empty and private first (VACUUM INTO accepts an empty file): never world-readable,
  // and never an existing file overwritten.
  let fd: number;
  try {
    fd = fs.openSync(to, fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new Error(`${to} already exists: choose a new file, backups never overwrite`, { cause: err });
    throw new Error(`cannot create ${to}: ${(err as Error).message}`, { cause: err });
  }
  fs.closeSync(fd);
  const db = openSqlite(src, { readonly: true });
  try {
    // A hub in the middle of a write holds its lock for milliseconds: wait rather than fail.
    db.pragma('busy_timeout = 10000');
    db.prepare('VACUUM INTO ?').run(to);
  } catch (err) {
    fs.rmSync(to, { force: true });
    throw new Error(`backing up ${src} failed: ${(err as Error).message}`, { cause: err });
  } finally {
    db.close();
  }
  fs.chmodSync(to, 0o600);
  return { bytes: fs.statSync(to).size, ms: Math.round(performance.now() - t0) };
}
