/**
 * @module The hub's state: one module per table group, each the only code that runs SQL against
 * its tables, each behind a small interface so a second implementation (PostgreSQL, issue #22)
 * can be added without touching its callers.
 *
 * | module | tables |
 * |---|---|
 * | objects.ts | objects, workload_revisions, counters |
 * | edges.ts | edge_runtime, connections |
 * | events.ts | events |
 * | status.ts | workload_status (and the joined status reads) |
 * | blobs.ts | blobs, blob_refs |
 * | ../auth/ | api_tokens, join_tokens, edge_credentials, decommissioned_credentials (hub/auth/schema.ts) |
 * | ../tunnel/proxy-session.ts | tunnel_proxy_sessions |
 * | ../catalog/state.ts | packages, package_deployments |
 * | ../db.ts | the schema of the hub's tables (migrations only, no reads or writes) |
 *
 * test/architecture.test.ts fails when a table is written anywhere else.
 */
import { inTransaction, type SqliteDatabase } from '../../sync/sqlite.js';
import { sqliteEdgeState, type EdgeState } from './edges.js';
import { sqliteEventLog, type EventLog } from './events.js';
import { sqliteObjectState, type ObjectState } from './objects.js';
import { sqliteStatusState, type StatusState } from './status.js';

export interface HubState {
  objects: ObjectState;
  edges: EdgeState;
  events: EventLog;
  status: StatusState;
  /**
   * Runs `fn` in one transaction, joining an open one (every write of the hub's state is one).
   * `immediate` takes the write lock at the start: for a read-then-write another process may race.
   */
  transaction<T>(fn: () => T, opts?: { immediate?: boolean }): T;
}

export function sqliteHubState(db: SqliteDatabase): HubState {
  return {
    objects: sqliteObjectState(db),
    edges: sqliteEdgeState(db),
    events: sqliteEventLog(db),
    status: sqliteStatusState(db),
    transaction: (fn, opts) =>
      opts?.immediate && !db.inTransaction ? db.transaction(fn).immediate() : inTransaction(db, fn),
  };
}
