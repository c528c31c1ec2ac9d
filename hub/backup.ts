/**
 * @module Online backup of a hub's data: SQLite's backup API copies a consistent snapshot of the
 * one database file (documents, sync states, objects, tokens) while the hub keeps running and
 * writing. Restoring is starting a hub on a directory holding the copy (plus the TLS files, so
 * that tokens' CA pins stay valid).
 */
import fs from 'node:fs';
import path from 'node:path';
import { openSqlite } from '../sync/native.js';

export async function backupHub(dataDir: string, to: string): Promise<{ bytes: number }> {
  const src = path.join(dataDir, 'hub.db');
  if (!fs.existsSync(src)) throw new Error(`${dataDir} holds no hub database (hub.db): check --data`);
  if (fs.existsSync(to)) throw new Error(`${to} already exists: choose a new file, backups never overwrite`);
  const db = openSqlite(src, { readonly: true });
  try {
    await db.backup(to);
  } finally {
    db.close();
  }
  return { bytes: fs.statSync(to).size };
}
