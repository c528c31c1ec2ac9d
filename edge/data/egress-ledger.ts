/**
 * @module The export ledger: table `egress_files` in the replica's SQLite, one row per exported
 * file, and the only SQL against it. It remembers what was queued and what the hub holds, by size
 * and modification time, so that after a restart nothing is uploaded twice and nothing is
 * forgotten; each write is one transaction. It also decides when a queued file's blob may leave
 * the edge's store: once no queued row needs it.
 */
import type { BlobDigest } from '../../core/blobs.js';
import { createLogger } from '../../core/logger.js';
import { buildInfo } from '../../core/version.js';
import { cachedStatement, inTransaction, migrate, type SqliteDatabase } from '../../sync/sqlite.js';
import type { EdgeBlobStore } from '../blobs/store.js';

const log = createLogger('edge:data');

/** Exported files go to the hub as opaque bytes. */
export const EXPORT_MEDIA_TYPE = 'application/octet-stream';

const MIGRATIONS = [
  {
    version: 1,
    sql: `
      CREATE TABLE egress_files (
        workload TEXT NOT NULL,
        target TEXT NOT NULL,
        -- TARGET/relative/path, as the hub lists it
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ms INTEGER NOT NULL,
        digest TEXT NOT NULL,
        -- queued: in the outbox or waiting to be recorded on the hub; done: the hub holds it
        state TEXT NOT NULL,
        mode TEXT NOT NULL,
        queued_at INTEGER NOT NULL,
        done_at INTEGER,
        PRIMARY KEY (workload, path)
      );
      CREATE INDEX egress_files_by_state ON egress_files (state, digest);
    `,
  },
];

/** One exported file as the ledger holds it. */
export interface EgressFileRow {
  workload: string;
  target: string;
  path: string;
  size: number;
  mtime_ms: number;
  digest: BlobDigest;
  state: 'queued' | 'done';
  mode: 'copy' | 'move';
  queued_at: number;
  done_at: number | null;
}

export class EgressLedger {
  constructor(
    private readonly db: SqliteDatabase,
    private readonly blobs: EdgeBlobStore,
  ) {
    migrate(db, 'egress', MIGRATIONS, buildInfo().version);
  }

  /**
   * Blobs of files the hub already holds that are still in the store: an agent killed between
   * marking a file done and dropping its blob left them (release is the step after the commit).
   */
  async releaseDone(): Promise<void> {
    const done = cachedStatement(
      this.db,
      "SELECT DISTINCT digest FROM egress_files WHERE state = 'done' AND digest NOT IN (SELECT digest FROM egress_files WHERE state = 'queued')",
    ).all() as { digest: BlobDigest }[];
    const outbox = new Set(this.blobs.outbox().map((o) => o.digest));
    for (const { digest } of done)
      if (!outbox.has(digest) && this.blobs.files.has(digest))
        await this.release(digest).catch((err: unknown) =>
          log.warn({ err, digest }, 'could not drop an uploaded blob'),
        );
  }

  /** Drops a blob from the edge's store once no queued file needs it. */
  async release(digest: BlobDigest): Promise<void> {
    if (cachedStatement(this.db, "SELECT 1 FROM egress_files WHERE digest = ? AND state = 'queued'").get(digest))
      return;
    await this.blobs.remove(digest);
  }

  /** Files queued and done per workload, workloads in name order. */
  countsByWorkload(): { workload: string; qf: number; qb: number; df: number }[] {
    return cachedStatement(
      this.db,
      `SELECT workload, SUM(state = 'queued') qf, COALESCE(SUM(CASE WHEN state = 'queued' THEN size END), 0) qb,
              SUM(state = 'done') df FROM egress_files GROUP BY workload ORDER BY workload`,
    ).all() as { workload: string; qf: number; qb: number; df: number }[];
  }

  /** Files and bytes not yet on the hub, over every workload. */
  queueTotals(): { n: number; b: number } {
    return cachedStatement(
      this.db,
      "SELECT COUNT(*) n, COALESCE(SUM(size), 0) b FROM egress_files WHERE state = 'queued'",
    ).get() as { n: number; b: number };
  }

  /** The rows of one export target. */
  ofTarget(workload: string, target: string): EgressFileRow[] {
    return cachedStatement(this.db, 'SELECT * FROM egress_files WHERE workload = ? AND target = ?').all(
      workload,
      target,
    ) as EgressFileRow[];
  }

  /** Bytes of one target's files not yet on the hub: what its `maxBytes` bounds. */
  queuedBytes(workload: string, target: string): number {
    return (
      cachedStatement(
        this.db,
        "SELECT COALESCE(SUM(size), 0) n FROM egress_files WHERE workload = ? AND target = ? AND state = 'queued'",
      ).get(workload, target) as { n: number }
    ).n;
  }

  /** Queued files in the order they were queued. */
  queued(): EgressFileRow[] {
    return cachedStatement(
      this.db,
      "SELECT * FROM egress_files WHERE state = 'queued' ORDER BY queued_at",
    ).all() as EgressFileRow[];
  }

  /** A file (new, or a newer version of a known one) is in the outbox. */
  queue(f: Pick<EgressFileRow, 'workload' | 'target' | 'path' | 'size' | 'mtime_ms' | 'digest' | 'mode'>): void {
    inTransaction(this.db, () => {
      cachedStatement(
        this.db,
        `INSERT INTO egress_files (workload, target, path, size, mtime_ms, digest, state, mode, queued_at, done_at)
         VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?, NULL)
         ON CONFLICT (workload, path) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms,
           digest = excluded.digest, state = 'queued', mode = excluded.mode, queued_at = excluded.queued_at, done_at = NULL`,
      ).run(f.workload, f.target, f.path, f.size, f.mtime_ms, f.digest, f.mode, Date.now());
    });
  }

  /**
   * The hub holds this version of the file. False when a newer version was queued meanwhile (the
   * row no longer has this digest, or is no longer queued).
   */
  markDone(row: EgressFileRow): boolean {
    const changed = inTransaction(this.db, () =>
      cachedStatement(
        this.db,
        "UPDATE egress_files SET state = 'done', done_at = ? WHERE workload = ? AND path = ? AND digest = ? AND state = 'queued'",
      ).run(Date.now(), row.workload, row.path, row.digest),
    ).changes;
    return changed > 0;
  }

  /** Forgets files, in one transaction. */
  forget(workload: string, paths: Iterable<string>): void {
    inTransaction(this.db, () => {
      for (const p of paths)
        cachedStatement(this.db, 'DELETE FROM egress_files WHERE workload = ? AND path = ?').run(workload, p);
    });
  }
}
