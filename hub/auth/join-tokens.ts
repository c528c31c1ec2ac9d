/**
 * @module Join tokens: `opj1.<caFingerprint|none>.<id>.<secret>`. An edge presents one once, at
 * enrollment, and gets an edge credential in exchange; the token decides the edge's project and
 * labels (binding: see enrollLabels), expires (24 h unless told otherwise) and may allow a limited
 * number of uses. Only admins create them (docs/security.md).
 */
import { JOIN_TOKEN_DEFAULT_TTL_MS } from '../../core/durations.js';
import { OutpostError } from '../../core/errors.js';
import { Labels } from '../../core/resources.js';
import { formatToken, NO_FINGERPRINT, parseToken } from '../../sync/pinned-ca.js';
import type { AuthTables } from '../state/auth.js';
import { hashSecret, newId, newSecret, secretMatches } from './token-secrets.js';
import { checkProject, checkTtl } from './tokens.js';

export interface JoinGrant {
  project: string;
  labels: Labels;
}

export interface CreateJoinTokenOptions {
  project: string;
  labels?: Labels;
  /** Lifetime; absent means JOIN_TOKEN_DEFAULT_TTL_MS (24 h): a join token always expires. */
  ttlMs?: number;
  /** How many edges may enroll with it; absent means unlimited. */
  uses?: number;
  description?: string;
  /** The hub's CA pin, written into the token for the edge; null or absent for a plain-HTTP hub. */
  caFingerprint?: string | null;
}

export interface JoinTokenInfo extends JoinGrant {
  id: string;
  description: string;
  createdAt: number;
  expiresAt: number | null;
  usesLimit: number | null;
  uses: number;
  revokedAt: number | null;
}

const CREATE_NEW = 'create a new one with `outpost token create`';

/** When a join token made now with `ttlMs` (absent: the 24 h default) expires. */
export function joinTokenExpiry(ttlMs: number | undefined, now: number): number {
  return now + (ttlMs ?? JOIN_TOKEN_DEFAULT_TTL_MS);
}

export function createJoinToken(db: AuthTables, opts: CreateJoinTokenOptions, now = Date.now()): string {
  checkProject(opts.project, false);
  checkTtl(opts.ttlMs);
  if (opts.uses !== undefined && !(Number.isSafeInteger(opts.uses) && opts.uses > 0)) {
    throw new OutpostError(
      'invalid',
      `uses must be a positive whole number (got ${opts.uses}); leave it out for unlimited`,
    );
  }
  const labels = Labels.safeParse(opts.labels ?? {});
  if (!labels.success) {
    const issue = labels.error.issues[0];
    throw new OutpostError(
      'invalid',
      `labels${issue.path.length ? `.${issue.path.join('.')}` : ''}: ${issue.message}`,
      { details: labels.error.issues },
    );
  }
  const id = newId();
  const secret = newSecret();
  const token = formatToken('join', opts.caFingerprint ?? NO_FINGERPRINT, id, secret);
  db.insertJoinToken({
    id,
    secret_hash: hashSecret(secret),
    project: opts.project,
    labels: JSON.stringify(labels.data),
    description: opts.description ?? '',
    created_at: now,
    expires_at: joinTokenExpiry(opts.ttlMs, now),
    uses_limit: opts.uses ?? null,
  });
  return token;
}

/**
 * Checks a join token and counts one use, atomically: the check and the increment run in one
 * transaction that locks before reading (SQLite: IMMEDIATE, the file's write lock; PostgreSQL:
 * the token's row, `SELECT ... FOR UPDATE`), so two hub processes, or hub replicas, enrolling at
 * once cannot both see the last use as free. Called inside the caller's transaction (enrollment:
 * consume + create the edge + issue its credential) it becomes part of it.
 */
export function consumeJoinToken(db: AuthTables, token: string, now = Date.now()): JoinGrant {
  const t = parseToken(token);
  const unknown = () =>
    new OutpostError('unauthorized', `unknown join token: check that it was copied whole, or ${CREATE_NEW}`);
  if (!t || t.kind !== 'join') throw unknown();
  const consume = (): JoinGrant => {
    const row = db.lockJoinToken(t.id);
    // A wrong secret is reported like an unknown id, so guessing reveals nothing about ids.
    if (!row || !secretMatches(t.secret, row.secret_hash)) throw unknown();
    if (row.revoked_at !== null)
      throw new OutpostError(
        'unauthorized',
        `join token ${row.id} was revoked at ${new Date(row.revoked_at).toISOString()}: ${CREATE_NEW}`,
      );
    if (row.expires_at !== null && row.expires_at <= now) {
      throw new OutpostError(
        'unauthorized',
        `join token expired at ${new Date(row.expires_at).toISOString()}: ${CREATE_NEW}`,
      );
    }
    if (row.uses_limit !== null && row.uses >= row.uses_limit) {
      throw new OutpostError(
        'unauthorized',
        `join token already used ${row.uses} times (limit ${row.uses_limit}): ${CREATE_NEW}`,
      );
    }
    db.countJoinTokenUse(row.id);
    return { project: row.project, labels: JSON.parse(row.labels) as Labels };
  };
  return db.transaction(consume, { immediate: true });
}

/**
 * The labels an enrolling edge gets: the token's, plus those it asks for under keys the token does
 * not set. A token's labels bind: a request that would change one is refused, never merged over it,
 * or a token holder could select itself into any placement (and receive its workloads and Secrets).
 */
export function enrollLabels(grant: JoinGrant, requested: Labels = {}): Labels {
  const conflicts = Object.entries(requested).filter(([k, v]) => k in grant.labels && grant.labels[k] !== v);
  if (conflicts.length) {
    throw new OutpostError(
      'forbidden',
      `labels ${conflicts.map(([k, v]) => `${k}=${v}`).join(', ')} conflict with the join token's ${conflicts.map(([k]) => `${k}=${grant.labels[k]}`).join(', ')}: a join token's labels bind; leave ${conflicts.length === 1 ? 'that key' : 'those keys'} out of --labels, or ask an admin for a token with the labels this edge needs`,
      {
        details: conflicts.map(([k]) => ({
          path: `labels.${k}`,
          message: `set by the join token to ${grant.labels[k]}`,
        })),
      },
    );
  }
  return { ...requested, ...grant.labels };
}

export function listJoinTokens(db: AuthTables): JoinTokenInfo[] {
  return db.joinTokens().map((r) => ({
    id: r.id,
    project: r.project,
    labels: JSON.parse(r.labels) as Labels,
    description: r.description,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    usesLimit: r.uses_limit,
    uses: r.uses,
    revokedAt: r.revoked_at,
  }));
}

/** Revokes by id; false if there is no such token or it was already revoked. */
export function revokeJoinToken(db: AuthTables, id: string, now = Date.now()): boolean {
  return db.revokeJoinToken(id, now);
}
