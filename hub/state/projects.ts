/**
 * @module The Project objects (table `projects`, the only SQL about it): each project's spec, its
 * resource version, and its deletion once asked for (the hub resumes a recorded deletion at start:
 * hub/projects/deletion.ts). The rules over them are in hub/projects/.
 */
import { all, isPostgres, migrateTables, one, run, type SqlDb } from './sql.js';

export interface ProjectDeletion {
  /** Who asked. */
  by: string;
  /** When (ms since the epoch). */
  at: number;
  /** The project its edges move to; absent: they are decommissioned. */
  moveEdgesTo?: string;
}

export interface StoredProject {
  name: string;
  uid: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  spec: unknown;
  resourceVersion: number;
  generation: number;
  createdAt: string;
  deletion?: ProjectDeletion;
}

export interface ProjectTables {
  get(name: string): StoredProject | undefined;
  list(): StoredProject[];
  /** Inserts a project; false when it exists. */
  insert(p: { name: string; uid: string; labels: object; annotations: object; spec: unknown; at: string }): boolean;
  /** Replaces labels, annotations and spec; the resource version always moves, the generation with the spec. */
  update(p: { name: string; labels: object; annotations: object; spec: unknown; specChanged: boolean }): void;
  setDeletion(name: string, d: ProjectDeletion): void;
  /** The projects being deleted. */
  terminating(): string[];
  remove(name: string): void;
  /**
   * Holds `project`'s quota lock to the end of the open transaction: on PostgreSQL a transaction
   * advisory lock of the project (hub replicas admitting into one project at once are serialized);
   * on SQLite nothing, the caller's immediate transaction holds the file's write lock.
   */
  lockQuota(project: string): void;
}

interface Row {
  name: string;
  uid: string;
  labels: string;
  annotations: string;
  spec: string;
  resource_version: number;
  generation: number;
  created_at: string;
  deletion: string | null;
}

/** Two-key advisory locks: this class and a hash of the project name (the blob quota has its own class). */
const QUOTA_LOCK_CLASS = 0x70726a71; // "prjq"

function toStored(r: Row): StoredProject {
  return {
    name: r.name,
    uid: r.uid,
    labels: JSON.parse(r.labels) as Record<string, string>,
    annotations: JSON.parse(r.annotations) as Record<string, string>,
    spec: JSON.parse(r.spec),
    resourceVersion: Number(r.resource_version),
    generation: Number(r.generation),
    createdAt: r.created_at,
    ...(r.deletion ? { deletion: JSON.parse(r.deletion) as ProjectDeletion } : {}),
  };
}

export function sqlProjectTables(db: SqlDb): ProjectTables {
  migrateTables(db, 'projects');
  return {
    get(name) {
      const r = one<Row>(db, 'SELECT * FROM projects WHERE name = ?', name);
      return r ? toStored(r) : undefined;
    },
    list() {
      return all<Row>(db, 'SELECT * FROM projects ORDER BY name').map(toStored);
    },
    insert(p) {
      return (
        run(
          db,
          `INSERT INTO projects (name, uid, labels, annotations, spec, created_at) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (name) DO NOTHING`,
          p.name,
          p.uid,
          JSON.stringify(p.labels),
          JSON.stringify(p.annotations),
          JSON.stringify(p.spec),
          p.at,
        ) > 0
      );
    },
    update(p) {
      run(
        db,
        `UPDATE projects SET labels = ?, annotations = ?, spec = ?, resource_version = resource_version + 1,
           generation = generation + ? WHERE name = ?`,
        JSON.stringify(p.labels),
        JSON.stringify(p.annotations),
        JSON.stringify(p.spec),
        p.specChanged ? 1 : 0,
        p.name,
      );
    },
    setDeletion(name, d) {
      run(
        db,
        'UPDATE projects SET deletion = ?, resource_version = resource_version + 1 WHERE name = ?',
        JSON.stringify(d),
        name,
      );
    },
    terminating() {
      return all<{ name: string }>(db, 'SELECT name FROM projects WHERE deletion IS NOT NULL ORDER BY name').map(
        (r) => r.name,
      );
    },
    remove(name) {
      run(db, 'DELETE FROM projects WHERE name = ?', name);
    },
    lockQuota(project) {
      if (isPostgres(db)) one(db, `SELECT pg_advisory_xact_lock(${QUOTA_LOCK_CLASS}, hashtext(?)) locked`, project);
    },
  };
}
