/**
 * @module The files of a backup (backup.ts, backup-postgres.ts, restore.ts): a new private file
 * that never replaces one, and a consistent copy of a SQLite file that others write to.
 */
import fs from 'node:fs';
import { openSqlite } from '../sync/native.js';

/**
 * Creates `to` empty and private (0600 whatever the umask) for a backup to be written into;
 * throws when it exists: backups never overwrite.
 */
export function reserveFile(to: string): void {
  let fd: number;
  try {
    fd = fs.openSync(to, fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new Error(`${to} already exists: choose a new file, backups never overwrite`, { cause: err });
    throw new Error(`cannot create ${to}: ${(err as Error).message}`, { cause: err });
  }
  fs.closeSync(fd);
}

/** One consistent copy of the SQLite file `src` into the empty file `to`, while others write to `src`. */
export function copySqlite(src: string, to: string): void {
  const db = openSqlite(src, { readonly: true });
  try {
    // A hub in the middle of a write holds its lock for milliseconds: wait rather than fail.
    db.pragma('busy_timeout = 10000');
    db.prepare('VACUUM INTO ?').run(to);
  } catch (err) {
    throw new Error(`backing up ${src} failed: ${(err as Error).message}`, { cause: err });
  } finally {
    db.close();
  }
}
