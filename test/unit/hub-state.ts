/**
 * @module Support for unit tests of hub parts: the hub's real tables on an in-memory SQLite
 * database (no file, no hub, no sockets), and rows seeded the way the hub writes them.
 */
import { Edge, Placement, Workload } from '../../core/resources.js';
import { migrateHub } from '../../hub/db.js';
import { openDatabase, type SqliteDatabase } from '../../sync/sqlite.js';
import { ReplicaStore } from '../../sync/store.js';

/** A fresh hub database in memory, migrated like a hub's file. */
export function memoryHubDb(): SqliteDatabase {
  const db = openDatabase(':memory:');
  migrateHub(db);
  return db;
}

/** A replica store in memory whose database also holds the hub's tables (as a hub's one file does). */
export async function memoryHubStore(): Promise<ReplicaStore> {
  const store = await ReplicaStore.open(':memory:');
  migrateHub(store.db);
  return store;
}

/** An enrolled edge: its runtime row and its Edge object. */
export function seedEdge(
  db: SqliteDatabase,
  name: string,
  opts: { project?: string; labels?: Record<string, string>; approved?: boolean; lastSeen?: number } = {},
): void {
  const project = opts.project ?? 'default';
  const now = Date.now();
  db.prepare(
    'INSERT INTO edge_runtime (name, project, approved, enrolled_at, last_seen, connected_since) VALUES (?, ?, ?, ?, ?, ?)',
  ).run(name, project, opts.approved === false ? 0 : 1, now, opts.lastSeen ?? null, opts.lastSeen ?? null);
  db.prepare(
    "INSERT INTO objects (kind, project, name, uid, resource_version, generation, labels, annotations, spec, created_at, updated_at) VALUES ('Edge', ?, ?, ?, 1, 1, ?, '{}', '{}', ?, ?)",
  ).run(
    project,
    name,
    `uid-${name}`,
    JSON.stringify(opts.labels ?? {}),
    new Date(now).toISOString(),
    new Date(now).toISOString(),
  );
}

/** What an edge reported for a workload (the status projection's row). */
export function seedStatus(
  db: SqliteDatabase,
  edge: string,
  workload: string,
  generation: number,
  phase: string,
): void {
  db.prepare(
    `INSERT INTO workload_status (edge, workload, observed_generation, phase, since, restarts, objects) VALUES (?, ?, ?, ?, 0, 0, '{}')
     ON CONFLICT(edge, workload) DO UPDATE SET observed_generation = excluded.observed_generation, phase = excluded.phase`,
  ).run(edge, workload, generation, phase);
}

/** Objects as the hub stores them (schema defaults filled in), with a resourceVersion. */
export function edgeObject(name: string, labels: Record<string, string> = {}, unschedulable = false): Edge {
  return Edge.parse({ kind: 'Edge', metadata: { name, labels, resourceVersion: '1' }, spec: { unschedulable } });
}

export function workloadObject(
  name: string,
  image: string,
  revision = 1,
  resourceVersion = String(revision),
): Workload {
  return {
    ...Workload.parse({
      kind: 'Workload',
      metadata: { name, resourceVersion },
      spec: {
        manifests: [
          { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image }] } },
        ],
      },
    }),
    status: { revision },
  };
}

export function placementObject(name: string, spec: Record<string, unknown>, resourceVersion = '1'): Placement {
  return Placement.parse({ kind: 'Placement', metadata: { name, resourceVersion }, spec });
}
