/**
 * @module The GitRepos' sync state (table `git_repo_status`, the only SQL about it): per GitRepo,
 * the commit applied and when, the last fetch (its head or its error), the errors of the last
 * commit that could not be applied, and the objects the applied commit owns with a hash of each as
 * it was applied (drift is an owned object whose stored hash differs: hub/gitops/sync.ts).
 * The GitRepo object itself is in `objects`; this is what the hub learned by syncing it.
 */
import type { GitRepoObjectView, GitRepoSyncError } from '../../core/api/views.js';
import { migrateTables, one, run, type SqlDb } from './sql.js';

/** An object a GitRepo's applied commit owns, with a hash of its stored form at that moment. */
export interface OwnedObject extends GitRepoObjectView {
  hash: string;
}

export interface GitRepoSyncState {
  appliedCommit?: string;
  appliedAt?: number;
  appliedPaths?: string;
  head?: string;
  fetchedAt?: number;
  fetchError?: string;
  failedCommit?: string;
  errors: GitRepoSyncError[];
  owned: OwnedObject[];
}

export interface GitRepoStates {
  get(project: string, name: string): GitRepoSyncState | undefined;
  /** A fetch that ended: its head, or its error (the applied commit stays as it was). */
  fetched(project: string, name: string, at: number, r: { head: string } | { error: string }): void;
  /** A commit applied: the owned objects replace the previous ones, errors cleared. */
  applied(project: string, name: string, at: number, commit: string, paths: string, owned: OwnedObject[]): void;
  /** A commit refused: nothing of it applied, why by file and line. */
  failed(project: string, name: string, commit: string, errors: GitRepoSyncError[]): void;
  delete(project: string, name: string): void;
}

interface Row {
  applied_commit: string | null;
  applied_at: number | null;
  applied_paths: string | null;
  head: string | null;
  fetched_at: number | null;
  fetch_error: string | null;
  failed_commit: string | null;
  sync_errors: string | null;
  owned: string;
}

const ENSURE = `INSERT INTO git_repo_status (project, name) VALUES (?, ?) ON CONFLICT (project, name) DO NOTHING`;

export function sqlGitRepoStates(db: SqlDb): GitRepoStates {
  migrateTables(db, 'git-repos');
  return {
    get(project, name) {
      const r = one<Row>(db, `SELECT * FROM git_repo_status WHERE project = ? AND name = ?`, project, name);
      if (!r) return undefined;
      return {
        ...(r.applied_commit ? { appliedCommit: r.applied_commit } : {}),
        ...(r.applied_at !== null ? { appliedAt: Number(r.applied_at) } : {}),
        ...(r.applied_paths !== null ? { appliedPaths: r.applied_paths } : {}),
        ...(r.head ? { head: r.head } : {}),
        ...(r.fetched_at !== null ? { fetchedAt: Number(r.fetched_at) } : {}),
        ...(r.fetch_error ? { fetchError: r.fetch_error } : {}),
        ...(r.failed_commit ? { failedCommit: r.failed_commit } : {}),
        errors: r.sync_errors ? (JSON.parse(r.sync_errors) as GitRepoSyncError[]) : [],
        owned: JSON.parse(r.owned) as OwnedObject[],
      };
    },
    fetched(project, name, at, r) {
      run(db, ENSURE, project, name);
      if ('head' in r)
        run(
          db,
          `UPDATE git_repo_status SET head = ?, fetched_at = ?, fetch_error = NULL WHERE project = ? AND name = ?`,
          r.head,
          at,
          project,
          name,
        );
      else
        run(
          db,
          `UPDATE git_repo_status SET fetched_at = ?, fetch_error = ? WHERE project = ? AND name = ?`,
          at,
          r.error,
          project,
          name,
        );
    },
    applied(project, name, at, commit, paths, owned) {
      run(db, ENSURE, project, name);
      run(
        db,
        `UPDATE git_repo_status SET applied_commit = ?, applied_at = ?, applied_paths = ?, failed_commit = NULL,
           sync_errors = NULL, owned = ? WHERE project = ? AND name = ?`,
        commit,
        at,
        paths,
        JSON.stringify(owned),
        project,
        name,
      );
    },
    failed(project, name, commit, errors) {
      run(db, ENSURE, project, name);
      run(
        db,
        `UPDATE git_repo_status SET failed_commit = ?, sync_errors = ? WHERE project = ? AND name = ?`,
        commit,
        JSON.stringify(errors),
        project,
        name,
      );
    },
    delete(project, name) {
      run(db, `DELETE FROM git_repo_status WHERE project = ? AND name = ?`, project, name);
    },
  };
}
