/**
 * @module The scheduler's tables `assignments` and `spec_written`: what a decommissioned edge held
 * goes with it. (The scheduler's own state module, with every read and write of these tables, is
 * landing from the scheduler's redesign, issue #16; this is the part the edge lifecycle needs.)
 */
import { cachedStatement, inTransaction, type SqliteDatabase } from '../../sync/sqlite.js';

export class SqliteAssignmentStore {
  constructor(private readonly db: SqliteDatabase) {}

  /** A decommissioned edge: its assignments and spec digest go. */
  forgetEdge(edge: string): void {
    inTransaction(this.db, () => {
      cachedStatement(this.db, 'DELETE FROM assignments WHERE edge = ?').run(edge);
      cachedStatement(this.db, 'DELETE FROM spec_written WHERE edge = ?').run(edge);
    });
  }
}
