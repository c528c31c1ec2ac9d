/**
 * @module API tokens: `opt1.<caFingerprint|none>.<id>.<secret>` (docs/security.md), each with a
 * role and a project (`*` = every project). Only the sha256 of the secret is stored; the token is
 * shown once, when created. The admin token of a fresh hub is written to DATA/admin.token.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OutpostError } from '../../core/errors.js';
import { isValidName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { formatToken, NO_FINGERPRINT, parseToken } from '../../sync/pinned-ca.js';
import type { ApiTokenRow, AuthTables } from '../state/auth.js';
import { ALL_PROJECTS, isRole, type Principal, type Role } from './roles.js';
import { hashSecret, newId, newSecret, secretMatches } from './token-secrets.js';

const log = createLogger('hub:auth');

export interface ApiTokenInfo {
  id: string;
  role: Role;
  project: string;
  description: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
}

export interface CreateApiTokenOptions {
  role: Role;
  project: string;
  description?: string;
  ttlMs?: number;
  /** The hub's CA pin, written into the token for clients; null or absent for a plain-HTTP hub. */
  caFingerprint?: string | null;
}

type Row = ApiTokenRow;

/** Shared checks of the options every token kind takes; throws 422 naming the field. */
export function checkTtl(ttlMs: number | undefined): void {
  if (ttlMs !== undefined && !(Number.isSafeInteger(ttlMs) && ttlMs > 0)) {
    throw new OutpostError('invalid', `ttl must be a positive duration, e.g. 24h (got ${ttlMs} ms)`);
  }
}

export function checkProject(project: string, allowAll: boolean): void {
  if (allowAll && project === ALL_PROJECTS) return;
  if (!isValidName(project)) {
    throw new OutpostError(
      'invalid',
      `project "${project}" is not a valid name: use lower-case letters, digits and '-'${allowAll ? ', or * for all projects' : ''}`,
    );
  }
}

/** Creates an API token and returns it; this is the only time the secret exists outside the caller. */
export function createApiToken(db: AuthTables, opts: CreateApiTokenOptions, now = Date.now()): string {
  if (!isRole(opts.role))
    throw new OutpostError('invalid', `role "${opts.role}" is not one of admin, operator, viewer`);
  checkProject(opts.project, true);
  checkTtl(opts.ttlMs);
  const id = newId();
  const secret = newSecret();
  const token = formatToken('api', opts.caFingerprint ?? NO_FINGERPRINT, id, secret);
  db.insertApiToken({
    id,
    secret_hash: hashSecret(secret),
    role: opts.role,
    project: opts.project,
    description: opts.description ?? '',
    created_at: now,
    expires_at: opts.ttlMs === undefined ? null : now + opts.ttlMs,
  });
  return token;
}

/** The one rule of a token's validity: neither revoked nor expired. */
function live(row: Pick<Row, 'revoked_at' | 'expires_at'>, now: number): boolean {
  return row.revoked_at === null && (row.expires_at === null || row.expires_at > now);
}

/**
 * The principal of a valid token, with its expiry (null: none); null for anything expired, revoked,
 * unknown or malformed.
 */
export function verifyApiToken(
  db: AuthTables,
  token: string,
  now = Date.now(),
): (Principal & { id: string; expiresAt: number | null }) | null {
  const t = parseToken(token);
  if (!t || t.kind !== 'api') return null;
  const row = db.apiToken(t.id);
  if (!row || !secretMatches(t.secret, row.secret_hash)) return null;
  if (!live(row, now)) return null;
  return { id: row.id, role: row.role, project: row.project, expiresAt: row.expires_at };
}

/**
 * Which of the token ids `ids` are valid now (neither revoked nor expired; an unknown id is not),
 * a few statements for any number: what a hub rechecks for the tokens of its open streams.
 */
export function liveApiTokens(db: AuthTables, ids: string[], now = Date.now()): Set<string> {
  return new Set(
    db
      .apiTokenValidity(ids)
      .filter((r) => live(r, now))
      .map((r) => r.id),
  );
}

/** When token `id` expires (null: never); undefined when it is not valid now (revoked, expired, unknown). */
export function apiTokenExpiry(db: AuthTables, id: string, now = Date.now()): number | null | undefined {
  const row = db.apiToken(id);
  return row && live(row, now) ? row.expires_at : undefined;
}

/** Revokes by id; false if there is no such token or it was already revoked. */
export function revokeApiToken(db: AuthTables, id: string, now = Date.now()): boolean {
  return db.revokeApiToken(id, now);
}

export function listApiTokens(db: AuthTables): ApiTokenInfo[] {
  return db.apiTokens().map((r) => ({
    id: r.id,
    role: r.role,
    project: r.project,
    description: r.description,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
  }));
}

/** How the admin tokens of DATA/admin.token are described (`token list`), and found again. */
const FIRST_START_ADMIN = 'created at first start (admin.token)';
const ROTATED_ADMIN = 'admin.token, rotated at ';

/**
 * Whether the database holds a live admin token a hub made for its admin.token (at a first start
 * or by `token rotate-admin`): hub replicas on one database make that token once.
 */
export function hasFirstStartAdminToken(db: AuthTables, now = Date.now()): boolean {
  return db.liveAdminTokens(ALL_PROJECTS, now, FIRST_START_ADMIN, ROTATED_ADMIN) > 0;
}

/**
 * On first start, creates an admin token for all projects and writes it to DATA/admin.token
 * (mode 0600). Once the file exists only rotateAdminToken rewrites it (`outpost token
 * rotate-admin`); deleting it and restarting also makes a new one, but leaves the old one valid
 * until revoked.
 */
export function ensureAdminToken(
  db: AuthTables,
  dataDir: string,
  caFingerprint: string | null,
  now = Date.now(),
): { token: string; created: boolean } {
  const file = path.join(dataDir, 'admin.token');
  if (fs.existsSync(file)) {
    const token = fs.readFileSync(file, 'utf8').trim();
    if (!verifyApiToken(db, token, now)) {
      log.warn(
        { file },
        `${file} holds a token this hub does not accept (revoked, expired or from another database): delete the file and restart the hub to get a new admin token`,
      );
    }
    return { token, created: false };
  }
  // The row and the file succeed or fail together: a failed write rolls the token back.
  const token = db.transaction(() => {
    const t = createApiToken(
      db,
      { role: 'admin', project: ALL_PROJECTS, description: FIRST_START_ADMIN, caFingerprint },
      now,
    );
    try {
      fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      // 'wx' never overwrites a file another process wrote meanwhile.
      fs.writeFileSync(file, `${t}\n`, { mode: 0o600, flag: 'wx' });
      fs.chmodSync(file, 0o600);
    } catch (err) {
      throw new Error(`cannot write the admin token to ${file}: check the data directory's permissions`, {
        cause: err,
      });
    }
    return t;
  });
  return { token, created: true };
}

/**
 * Replaces the admin token of DATA/admin.token: a new admin token for all projects is written to
 * the file (a temporary file renamed over it, mode 0600) and the one the file held is revoked, in
 * one transaction with the file write, so a failed write leaves the old token valid and the file
 * unchanged. Returns the new token and the id of the revoked one (null when the file held none
 * this hub knew).
 */
export function rotateAdminToken(
  db: AuthTables,
  dataDir: string,
  caFingerprint: string | null,
  now = Date.now(),
): { token: string; id: string; revoked: string | null } {
  const file = path.join(dataDir, 'admin.token');
  const oldId = fs.existsSync(file) ? (parseToken(fs.readFileSync(file, 'utf8').trim())?.id ?? null) : null;
  return db.transaction(() => {
    const token = createApiToken(
      db,
      {
        role: 'admin',
        project: ALL_PROJECTS,
        description: `${ROTATED_ADMIN}${new Date(now).toISOString()}`,
        caFingerprint,
      },
      now,
    );
    const revoked = oldId !== null && revokeApiToken(db, oldId, now) ? oldId : null;
    const tmp = `${file}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(tmp, `${token}\n`, { mode: 0o600 });
      fs.chmodSync(tmp, 0o600);
      fs.renameSync(tmp, file);
    } catch (err) {
      fs.rmSync(tmp, { force: true });
      throw new Error(`cannot write the new admin token to ${file}: check the data directory's permissions`, {
        cause: err,
      });
    }
    log.info({ file, revoked }, 'admin token rotated');
    return { token, id: parseToken(token)!.id, revoked };
  });
}
