/** Real SQLite files in temp dirs for the hub/auth tests; `cleanup` closes and removes them all. */
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../../test/helpers.js';
import { openDatabase, type SqliteDatabase } from '../../sync/sqlite.js';

export function testDbs(): { open(): { db: SqliteDatabase; dir: string; file: string }; cleanup(): void } {
  const opened: { db: SqliteDatabase; dir: string }[] = [];
  return {
    open() {
      const dir = tempDir('outpost-auth-');
      const file = path.join(dir, 'hub.db');
      const db = openDatabase(file);
      opened.push({ db, dir });
      return { db, dir, file };
    },
    cleanup() {
      for (const { db, dir } of opened.splice(0)) {
        if (db.open) db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
