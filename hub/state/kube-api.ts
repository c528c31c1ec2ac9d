/**
 * @module The Kubernetes API's tables (the only SQL about them), component `kube-api`:
 *
 * - `kube_watch_events`: every object change with the resourceVersion it made (a deletion takes
 *   a fresh one) and the object, written in the change's own transaction (a rolled-back write
 *   leaves none). Watches (hub/k8s/watch.ts) replay it from the resourceVersion a client names,
 *   through a hub restart too. It keeps the newest `keep` rows; the oldest kept is then a
 *   `Compacted` marker: a watch from before it is told 410 Gone.
 * - `kube_managed_fields`: each object's managed fields (server-side apply, hub/k8s/apply.ts),
 *   removed with the object.
 */
import { all, migrateTables, one, run, type SqlDb } from './sql.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredWatchEvent {
  rv: number;
  type: WatchEventType;
  kind: string;
  project: string;
  name: string;
  /** The object as stored (JSON). */
  object: string;
}

export interface KubeApiState {
  record(e: StoredWatchEvent): void;
  /** Events after `rv`, oldest first (at most `limit`). */
  after(rv: number, limit: number): StoredWatchEvent[];
  /** The resourceVersion below which events were dropped (0: none ever were). */
  compactedThrough(): number;
  /** Keeps the newest `keep` events; returns how many were dropped. */
  prune(keep: number): number;
  managedFields(kind: string, project: string, name: string): unknown[] | undefined;
  setManagedFields(kind: string, project: string, name: string, fields: unknown[] | undefined): void;
}

interface Row {
  rv: number | string;
  type: string;
  kind: string;
  project: string;
  name: string;
  object: string | null;
}

export function sqlKubeApiState(db: SqlDb): KubeApiState {
  migrateTables(db, 'kube-api');
  return {
    record(e) {
      run(
        db,
        'INSERT INTO kube_watch_events (rv, type, kind, project, name, object) VALUES (?, ?, ?, ?, ?, ?)',
        e.rv,
        e.type,
        e.kind,
        e.project,
        e.name,
        e.object,
      );
    },
    after(rv, limit) {
      return all<Row>(
        db,
        "SELECT * FROM kube_watch_events WHERE rv > ? AND type <> 'Compacted' ORDER BY rv LIMIT ?",
        rv,
        limit,
      ).map((r) => ({ ...r, rv: Number(r.rv), type: r.type as WatchEventType, object: r.object ?? '' }));
    },
    compactedThrough() {
      const r = one<{ rv: number | string }>(db, "SELECT rv FROM kube_watch_events WHERE type = 'Compacted'");
      return r ? Number(r.rv) : 0;
    },
    prune(keep) {
      const edge = one<{ rv: number | string }>(
        db,
        'SELECT rv FROM kube_watch_events ORDER BY rv DESC LIMIT 1 OFFSET ?',
        keep,
      );
      if (!edge) return 0;
      const n = run(db, 'DELETE FROM kube_watch_events WHERE rv < ?', edge.rv);
      run(db, "UPDATE kube_watch_events SET type = 'Compacted', object = NULL WHERE rv = ?", edge.rv);
      return n;
    },
    managedFields(kind, project, name) {
      const r = one<{ fields: string }>(
        db,
        'SELECT fields FROM kube_managed_fields WHERE kind = ? AND project = ? AND name = ?',
        kind,
        project,
        name,
      );
      return r ? (JSON.parse(r.fields) as unknown[]) : undefined;
    },
    setManagedFields(kind, project, name, fields) {
      run(db, 'DELETE FROM kube_managed_fields WHERE kind = ? AND project = ? AND name = ?', kind, project, name);
      if (fields?.length)
        run(
          db,
          'INSERT INTO kube_managed_fields (kind, project, name, fields) VALUES (?, ?, ?, ?)',
          kind,
          project,
          name,
          JSON.stringify(fields),
        );
    },
  };
}
