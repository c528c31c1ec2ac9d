/**
 * @module What the synchronous PostgreSQL client (sync-client.ts) makes of statements and answers:
 * `?` placeholders numbered for PostgreSQL, rows as the hub reads them, the two errors the state
 * layer sees and which database errors mean the database is away, a URL fit for a message.
 */
import { OutpostError } from '../../../core/errors.js';

export type Param = string | number | bigint | boolean | null | Buffer;

/**
 * The database cannot be reached, or did not answer in time: an OutpostError `unavailable`, so
 * the one mapping (core/errors.ts) answers an API call with 503 while the database is down.
 */
export class DatabaseUnavailable extends OutpostError {
  constructor(message: string) {
    super('unavailable', message);
    this.name = 'DatabaseUnavailable';
  }
}

/** PostgreSQL refused a statement (its SQLSTATE in `code`). */
export class DatabaseError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'DatabaseError';
  }
}

/**
 * Whether an error code means the database is not there rather than that a statement was wrong:
 * no SQLSTATE at all (a socket error such as ECONNREFUSED, ECONNRESET, ENOTFOUND), class 08
 * (connection exception) or 57P (operator intervention: the server shuts down).
 */
export function connectionLost(code: string | undefined): boolean {
  return !code || !/^[0-9A-Z]{5}$/.test(code) || /^(08|57P)/.test(code);
}

/**
 * `?` placeholders numbered `$1`, `$2`... for PostgreSQL; a `?` inside '...' or "..." stays. Each
 * text is numbered once and the same string returned after: the hub's statements are a few
 * hundred constant texts, run thousands of times a second in a fan-out, and the maps keyed by the
 * numbered text (merge-writes.ts, prefetch-cache.ts) find a string they were given before at once.
 */
export function numberPlaceholders(sql: string): string {
  let out = numbered.get(sql);
  if (out !== undefined) return out;
  out = '';
  let n = 0;
  let quote: string | undefined;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = undefined;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else out += ch === '?' ? `$${++n}` : ch;
  }
  // Bounded, for texts made at run time.
  if (numbered.size >= MAX_NUMBERED) numbered.clear();
  numbered.set(sql, out);
  return out;
}

const numbered = new Map<string, string>();
const MAX_NUMBERED = 2_000;

/** `postgres://user:secret@host/db` with the password masked, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}

/**
 * A BYTEA value as a Buffer, as better-sqlite3 gives a BLOB: the worker's Buffer arrives as a plain
 * Uint8Array (a message between threads keeps only the bytes), which its callers, typed for Buffer,
 * would compare and print differently.
 */
export function asBuffer(v: unknown): unknown {
  return v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v;
}

/** Rows as the hub reads them (bytea as Buffer). */
export function asRows<Row>(rows: Record<string, unknown>[] | undefined): Row[] {
  for (const row of rows ?? []) for (const k in row) row[k] = asBuffer(row[k]);
  return (rows ?? []) as Row[];
}
