/**
 * @module PostgreSQL's own programs for `outpost hub backup` and `outpost hub restore` on a hub
 * whose tables are in PostgreSQL: `pg_dump` (one consistent snapshot of the hub's schema, while the
 * hub runs) and `pg_restore`, from Debian's postgresql-client or any install, and what the two
 * commands ask the database before they run them. The password goes to them in PGPASSWORD, never
 * on a command line (`ps` shows those).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { postgresFailure } from './open.js';
import { redactUrl } from './statements.js';
import { SyncPostgres } from './sync-client.js';

/** Where Debian and Ubuntu install each major version's programs (/usr/bin has wrappers of them). */
const DEBIAN_PG_LIB = '/usr/lib/postgresql';

/** The path of PostgreSQL program `name` (on PATH, else the newest under /usr/lib/postgresql); throws naming the fix. */
export function pgProgram(name: 'pg_dump' | 'pg_restore', env: NodeJS.ProcessEnv = process.env): string {
  const dirs = (env.PATH ?? '').split(path.delimiter).filter(Boolean);
  const versions = fs.existsSync(DEBIAN_PG_LIB)
    ? fs
        .readdirSync(DEBIAN_PG_LIB)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const dir of [...dirs, ...versions.map((v) => path.join(DEBIAN_PG_LIB, v, 'bin'))]) {
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  throw new Error(
    `${name} was not found (on PATH or in ${DEBIAN_PG_LIB}/VERSION/bin): install PostgreSQL's client programs, of the server's major version or newer (Debian and Ubuntu: apt-get install postgresql-client), or take the backup by hand as docs/operations.md says ("Backup and restore", a hub on PostgreSQL)`,
  );
}

/** `url` as libpq takes it, without the password, and the password in the environment. */
function target(url: string): { dbname: string; env: Record<string, string> } {
  const u = new URL(url);
  const password = decodeURIComponent(u.password);
  u.password = '';
  return { dbname: u.toString(), env: password ? { PGPASSWORD: password } : {} };
}

/** Runs `program` with `args` against the database at `url`; rejects with its own error output. */
export function runPgProgram(program: string, args: string[], url: string): Promise<void> {
  const t = target(url);
  return new Promise((resolve, reject) => {
    const child = spawn(program, [...args, `--dbname=${t.dbname}`], {
      env: { ...process.env, ...t.env, PGAPPNAME: `outpost ${path.basename(program)}` },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      if (err.length < 64 * 1024) err += c.toString('utf8');
    });
    child.on('error', (e) => reject(new Error(`cannot run ${program}: ${e.message}`, { cause: e })));
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `${path.basename(program)} failed against ${redactUrl(url)} (${signal ?? `exit code ${code}`}): ${err.trim() || 'no message'}`,
          ),
        );
    });
  });
}

/** What backup and restore ask the database first; it is never migrated or written by them. */
export interface DatabaseFacts {
  /** The schema the URL's user works in (current_schema(): `public` unless its search_path says else). */
  schema: string;
  serverVersion: string;
  /** The tables of that schema. */
  tables: string[];
}

export async function databaseFacts(url: string, schema?: string): Promise<DatabaseFacts> {
  const pg = new SyncPostgres(url);
  try {
    const r = pg.one<{ schema: string | null; version: string }>(
      "SELECT current_schema() AS schema, current_setting('server_version') AS version",
    )!;
    const s = schema ?? r.schema ?? 'public';
    const tables = pg
      .all<{ table_name: string }>(
        'SELECT table_name FROM information_schema.tables WHERE table_schema = ? ORDER BY table_name',
        s,
      )
      .map((t) => t.table_name);
    return { schema: s, serverVersion: r.version, tables };
  } catch (err) {
    throw postgresFailure(url, err, 'read');
  } finally {
    await pg.close();
  }
}
