/**
 * Opens the hub's PostgreSQL database at start (`outpost hub --database URL`, OUTPOST_DATABASE):
 * checks the URL, connects, migrates (schema.ts). Every way this can fail ends the start with one
 * message that names the problem and the fix; the password never appears in it.
 */
import { createLogger } from '../../../core/logger.js';
import { DatabaseError, DatabaseUnavailable, redactUrl } from './statements.js';
import { SyncPostgres } from './sync-client.js';
import { migratePostgres } from './schema.js';

const log = createLogger('hub:db');

const URL_FORM = 'postgres://USER:PASSWORD@HOST:PORT/DATABASE';

/** Why `url` is not a PostgreSQL URL the hub can use; undefined when it is one. */
export function postgresUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `it is not a URL: use ${URL_FORM}`;
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:')
    return `it is a ${u.protocol.replace(/:$/, '')} URL: use ${URL_FORM}`;
  if (!u.hostname) return `it names no host: use ${URL_FORM}`;
  if (u.pathname.replace(/^\//, '') === '') return `it names no database: use ${URL_FORM}`;
  return undefined;
}

/** A SQLSTATE of PostgreSQL's refusal to let this URL in, with what to do about it. */
const REFUSALS: Record<string, string> = {
  '28P01': 'the password was refused: check the user and password in the URL',
  '28000': 'the server refused this user: check the user in the URL and the server’s pg_hba.conf',
  '3D000': 'the database does not exist: create it (createdb NAME, or CREATE DATABASE) or fix its name in the URL',
  '42501': 'the user may not create the hub’s tables: grant it CREATE on the database (or its schema)',
};

/** Connects and migrates; throws an Error whose message says what is wrong and how to fix it. */
export async function openPostgres(url: string): Promise<SyncPostgres> {
  const shown = redactUrl(url);
  const problem = postgresUrlProblem(url);
  if (problem) throw new Error(`--database ${shown}: ${problem}`);
  const pg = new SyncPostgres(url);
  try {
    const applied = migratePostgres(pg);
    // Replicas starting at once: one of them applies the migrations, the others find none.
    log.info({ database: shown, migrationsApplied: applied }, 'database schema up to date');
    return pg;
  } catch (err) {
    await pg.close();
    throw postgresFailure(url, err, 'prepare');
  }
}

/**
 * The error to show for `err`, met using the database at `url`: unreachable, refused (with the
 * fix), or else what `doing` failed; the password never in it.
 */
export function postgresFailure(url: string, err: unknown, doing: string): Error {
  const where = `the hub database at ${redactUrl(url)}`;
  // The cause's message follows this one (core/errors.ts errorMessage): what the server said.
  if (err instanceof DatabaseUnavailable)
    return new Error(
      `cannot reach ${where}: check that PostgreSQL runs there and accepts connections from this host, and that --database (or OUTPOST_DATABASE) names it`,
      { cause: err },
    );
  if (err instanceof DatabaseError && err.code && REFUSALS[err.code])
    return new Error(`cannot use ${where}: ${REFUSALS[err.code]}`, { cause: err });
  return new Error(`cannot ${doing} ${where}`, { cause: err });
}
