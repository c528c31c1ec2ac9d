/**
 * @module The hub's identity, shared by the hub processes on one PostgreSQL (issue #22;
 * docs/operations.md, "HA and scale-out"): one row per part (the CA, the secrets key, the release
 * key, and the first admin token: hub/identity/admin-token.ts), each sealed with the identity key
 * every replica is given (hub/identity/). The rows are written once, by the first replica that
 * starts with the key, and never changed (but the admin token, which `token rotate-admin` replaces): a part is put
 * with `ON CONFLICT DO NOTHING`, so replicas starting at once on an empty database all read back
 * the one identity the first of them wrote.
 *
 * `public` holds what anyone may see of the part (the CA's fingerprint, the release public key's
 * digest, the secrets key's id): a replica started without the identity key can still tell whether
 * its own files are the shared identity.
 *
 * | table | |
 * |---|---|
 * | hub_identity | part, sealed, public, created_at |
 */
import { all, migrateTables, run, transaction, type SqlDb } from './sql.js';

export interface IdentityRow {
  part: string;
  /** The part's secret material, sealed with the identity key (hub/identity/key.ts). */
  sealed: string;
  /** What may be shown of the part without the key: a fingerprint or a key id. */
  public: string;
  createdAt: number;
}

export class IdentityStore {
  constructor(private readonly db: SqlDb) {
    migrateTables(db, 'hub-identity');
  }

  /**
   * Puts each part the table does not hold yet, in one transaction; a part already there is kept
   * (another replica wrote it first). Answers every row afterwards: the identity all replicas share.
   */
  putMissing(rows: Omit<IdentityRow, 'createdAt'>[], now = Date.now()): IdentityRow[] {
    return transaction(this.db, () => {
      // The same order in every replica: two racing transactions wait on the same first key, never
      // on each other's second.
      for (const r of [...rows].sort((a, b) => (a.part < b.part ? -1 : 1)))
        run(
          this.db,
          `INSERT INTO hub_identity (part, sealed, public, created_at) VALUES (?, ?, ?, ?) ON CONFLICT(part) DO NOTHING`,
          r.part,
          r.sealed,
          r.public,
          now,
        );
      return this.all();
    });
  }

  /**
   * Replaces a part: only the shared admin token (hub/identity/admin-token.ts), which `token
   * rotate-admin` changes; the CA and the keys are written once and never changed.
   */
  replace(row: Omit<IdentityRow, 'createdAt'>, now = Date.now()): void {
    run(
      this.db,
      `INSERT INTO hub_identity (part, sealed, public, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT(part) DO UPDATE SET sealed = excluded.sealed, public = excluded.public, created_at = excluded.created_at`,
      row.part,
      row.sealed,
      row.public,
      now,
    );
  }

  /** Every part, by name. */
  all(): IdentityRow[] {
    return all<{ part: string; sealed: string; public: string; created_at: number }>(
      this.db,
      'SELECT part, sealed, public, created_at FROM hub_identity ORDER BY part',
    ).map((r) => ({ part: r.part, sealed: r.sealed, public: r.public, createdAt: r.created_at }));
  }
}
