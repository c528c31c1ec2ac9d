/**
 * @module people_sessions (schema: hub/state/schema/people.ts): the hub's sessions of people
 * signed in with the identity provider, whose rules are hub/auth/people.ts's. Secrets are stored
 * as sha256 hashes; the provider's refresh token only sealed (hub/secrets.ts).
 */
import { all, migrateTables, one, run, type SqlDb } from './sql.js';

export interface PersonSessionRow {
  id: string;
  secret_hash: Buffer;
  subject: string;
  email: string | null;
  /** JSON array of group names. */
  member_groups: string;
  project: string;
  refresh_token: string | null;
  created_at: number;
  expires_at: number;
  refresh_due: number;
  revoked_at: number | null;
  revoked_why: string | null;
}

export interface PeopleTables {
  insert(r: Omit<PersonSessionRow, 'revoked_at' | 'revoked_why'>): void;
  get(id: string): PersonSessionRow | undefined;
  /** Live sessions (neither revoked nor expired at `now`) whose refresh is due at `now`. */
  due(now: number): PersonSessionRow[];
  /** What a refresh learned: the groups, the next refresh token (sealed) and when the next refresh is due. */
  refreshed(id: string, r: { groups: string; refreshToken: string | null; refreshDue: number }): void;
  /** Sets revoked_at unless already set; false when no such session or already revoked. */
  revoke(id: string, now: number, why: string): boolean;
  /** The validity columns of the sessions among `ids` that exist. */
  validity(ids: readonly string[]): Pick<PersonSessionRow, 'id' | 'revoked_at' | 'expires_at' | 'refresh_due'>[];
  /** Deletes the rows that ended (expired or revoked) before `before`. */
  prune(before: number): number;
}

export function sqlPeopleTables(db: SqlDb): PeopleTables {
  migrateTables(db, 'hub-people');
  return {
    insert(r) {
      run(
        db,
        `INSERT INTO people_sessions (id, secret_hash, subject, email, member_groups, project, refresh_token, created_at, expires_at, refresh_due)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        r.id,
        r.secret_hash,
        r.subject,
        r.email,
        r.member_groups,
        r.project,
        r.refresh_token,
        r.created_at,
        r.expires_at,
        r.refresh_due,
      );
    },
    get: (id) => one<PersonSessionRow>(db, 'SELECT * FROM people_sessions WHERE id = ?', id),
    due: (now) =>
      all<PersonSessionRow>(
        db,
        'SELECT * FROM people_sessions WHERE revoked_at IS NULL AND expires_at > ? AND refresh_due <= ? ORDER BY refresh_due, id',
        now,
        now,
      ),
    refreshed(id, r) {
      run(
        db,
        'UPDATE people_sessions SET member_groups = ?, refresh_token = ?, refresh_due = ? WHERE id = ? AND revoked_at IS NULL',
        r.groups,
        r.refreshToken,
        r.refreshDue,
        id,
      );
    },
    revoke: (id, now, why) =>
      run(
        db,
        'UPDATE people_sessions SET revoked_at = ?, revoked_why = ? WHERE id = ? AND revoked_at IS NULL',
        now,
        why,
        id,
      ) === 1,
    validity(ids) {
      if (!ids.length) return [];
      return all(
        db,
        `SELECT id, revoked_at, expires_at, refresh_due FROM people_sessions WHERE id IN (${ids.map(() => '?').join(', ')})`,
        ...ids,
      );
    },
    prune: (before) =>
      run(
        db,
        'DELETE FROM people_sessions WHERE expires_at < ? OR (revoked_at IS NOT NULL AND revoked_at < ?)',
        before,
        before,
      ),
  };
}
