/**
 * @module The object tables (`objects`, `workload_revisions`, and the `counters` row that hands out
 * resourceVersions): the only SQL about them. What an object means (validation, sealing Secrets,
 * optimistic concurrency, events, change hooks) is hub/objects.ts; this module only stores.
 * `ObjectState` is the seam for a second implementation (issue #22); `sqlObjectState` is today's.
 */
import type { Kind } from '../../core/resources.js';
import { all, allOf, containsParam, json, NO_LIMIT, one, read, run, type Read, type SqlDb } from './sql.js';

export interface StoredObject {
  kind: Kind;
  project: string;
  name: string;
  uid: string;
  resourceVersion: number;
  generation: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The kind's spec as it was stored (validated by hub/objects.ts before). */
  spec: unknown;
  createdAt: string;
  updatedAt: string;
}

export interface StoredRevision {
  revision: number;
  createdAt: string;
  manifests: unknown[];
  changeCause?: string;
}

export interface ObjectState {
  get(kind: Kind, project: string, name: string): StoredObject | undefined;
  /** Ordered by project and name; `project` `*` spans projects (`after` is then `project/name`). */
  list(kind: Kind, project: string, opts?: { after?: string; limit?: number }): StoredObject[];
  count(kind: Kind, project: string): number;
  /** Names and labels only, for a filtered count over a whole fleet (labels parsed when asked). */
  labels(kind: Kind, project: string): { name: string; labels(): Record<string, string> }[];
  /** Projects that hold at least one object. */
  projects(): string[];
  /** The resourceVersion last handed out (the Kubernetes API's lists and watches start from it). */
  lastResourceVersion(): number;
  /** Hands out the next resourceVersion without writing an object: a deletion's, for the Kubernetes API's watch. */
  nextResourceVersion(): number;
  /** Inserts at generation 1 with the next resourceVersion; returns it. */
  insert(o: {
    kind: Kind;
    project: string;
    name: string;
    uid: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    spec: unknown;
    at: string;
  }): number;
  /** Rewrites metadata and spec with the next resourceVersion (generation + 1 when the spec changed). */
  update(o: {
    kind: Kind;
    project: string;
    name: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    spec: unknown;
    specChanged: boolean;
    at: string;
  }): number;
  /** Deletes an object (and a workload's revisions). */
  delete(kind: Kind, project: string, name: string): void;

  revisions(project: string, workload: string): StoredRevision[];
  /** The newest revision number (0 when none). */
  currentRevision(project: string, workload: string): number;
  /** Adds the next revision and drops those `keep` or more behind it. */
  addRevision(
    project: string,
    workload: string,
    r: { manifests: unknown[]; changeCause?: string; at: string },
    keep: number,
  ): void;

  /**
   * The key id of a value sealed in the stored objects (Workload Secrets, Registry passwords), if
   * any: a hub must not start with another key over a database whose Secrets it then could not open.
   */
  sealedKeyId(sealedPrefix: string): string | undefined;
  /** Workload specs, as stored text, that contain `text` (a migration over stored Secrets). */
  workloadSpecsContaining(text: string): { project: string; name: string; spec: string }[];
  setWorkloadSpecText(project: string, name: string, spec: string): void;
  revisionsContaining(text: string): { project: string; workload: string; revision: number; manifests: string }[];
  setRevisionManifestsText(project: string, workload: string, revision: number, manifests: string): void;
}

interface ObjectRow {
  kind: Kind;
  project: string;
  name: string;
  uid: string;
  resource_version: number;
  generation: number;
  labels: string;
  annotations: string;
  spec: string;
  created_at: string;
  updated_at: string;
}

const toStored = (r: ObjectRow): StoredObject => ({
  kind: r.kind,
  project: r.project,
  name: r.name,
  uid: r.uid,
  resourceVersion: r.resource_version,
  generation: r.generation,
  labels: json<Record<string, string>>(r.labels, 'objects.labels'),
  annotations: json<Record<string, string>>(r.annotations, 'objects.annotations'),
  spec: json<unknown>(r.spec, 'objects.spec'),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

function nextResourceVersion(db: SqlDb): number {
  const r = one<{ value: number }>(
    db,
    "UPDATE counters SET value = value + 1 WHERE name = 'resourceVersion' RETURNING value",
  );
  if (!r) throw new Error('the hub database has no resourceVersion counter: it was not migrated; restore a backup');
  return r.value;
}

/** The read of a kind's objects in a project (`*`: all), given ahead at an edge's handshake (hub/state/index.ts `handshakeReads`). */
export function objectListRead(kind: string, project: string, opts: { after?: string; limit?: number } = {}): Read {
  return project === '*'
    ? read(
        "SELECT * FROM objects WHERE kind = ? AND (project || '/' || name) > ? ORDER BY project, name LIMIT ?",
        kind,
        opts.after ?? '',
        opts.limit ?? NO_LIMIT,
      )
    : read(
        'SELECT * FROM objects WHERE kind = ? AND project = ? AND name > ? ORDER BY name LIMIT ?',
        kind,
        project,
        opts.after ?? '',
        opts.limit ?? NO_LIMIT,
      );
}

export function sqlObjectState(db: SqlDb): ObjectState {
  return {
    get(kind, project, name) {
      const r = one<ObjectRow>(
        db,
        'SELECT * FROM objects WHERE kind = ? AND project = ? AND name = ?',
        kind,
        project,
        name,
      );
      return r && toStored(r);
    },
    list(kind, project, opts = {}) {
      return allOf<ObjectRow>(db, objectListRead(kind, project, opts)).map(toStored);
    },
    count(kind, project) {
      const r =
        project === '*'
          ? one<{ c: number }>(db, 'SELECT COUNT(*) c FROM objects WHERE kind = ?', kind)
          : one<{ c: number }>(db, 'SELECT COUNT(*) c FROM objects WHERE kind = ? AND project = ?', kind, project);
      return r?.c ?? 0;
    },
    labels(kind, project) {
      return (
        project === '*'
          ? all<{ name: string; labels: string }>(db, 'SELECT name, labels FROM objects WHERE kind = ?', kind)
          : all<{ name: string; labels: string }>(
              db,
              'SELECT name, labels FROM objects WHERE kind = ? AND project = ?',
              kind,
              project,
            )
      ).map((r) => ({ name: r.name, labels: () => json<Record<string, string>>(r.labels, 'objects.labels') }));
    },
    projects() {
      return all<{ project: string }>(db, 'SELECT DISTINCT project FROM objects ORDER BY 1').map((r) => r.project);
    },
    lastResourceVersion() {
      return one<{ value: number }>(db, "SELECT value FROM counters WHERE name = 'resourceVersion'")?.value ?? 0;
    },
    nextResourceVersion: () => nextResourceVersion(db),
    insert(o) {
      const rv = nextResourceVersion(db);
      run(
        db,
        'INSERT INTO objects (kind, project, name, uid, resource_version, generation, labels, annotations, spec, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)',
        o.kind,
        o.project,
        o.name,
        o.uid,
        rv,
        JSON.stringify(o.labels),
        JSON.stringify(o.annotations),
        JSON.stringify(o.spec),
        o.at,
        o.at,
      );
      return rv;
    },
    update(o) {
      const rv = nextResourceVersion(db);
      run(
        db,
        'UPDATE objects SET resource_version = ?, generation = generation + ?, labels = ?, annotations = ?, spec = ?, updated_at = ? WHERE kind = ? AND project = ? AND name = ?',
        rv,
        o.specChanged ? 1 : 0,
        JSON.stringify(o.labels),
        JSON.stringify(o.annotations),
        JSON.stringify(o.spec),
        o.at,
        o.kind,
        o.project,
        o.name,
      );
      return rv;
    },
    delete(kind, project, name) {
      run(db, 'DELETE FROM objects WHERE kind = ? AND project = ? AND name = ?', kind, project, name);
      if (kind === 'Workload')
        run(db, 'DELETE FROM workload_revisions WHERE project = ? AND workload = ?', project, name);
    },

    revisions(project, workload) {
      return all<{ revision: number; created_at: string; manifests: string; change_cause: string | null }>(
        db,
        'SELECT revision, created_at, manifests, change_cause FROM workload_revisions WHERE project = ? AND workload = ? ORDER BY revision',
        project,
        workload,
      ).map((r) => ({
        revision: r.revision,
        createdAt: r.created_at,
        manifests: json<unknown[]>(r.manifests, 'workload_revisions.manifests'),
        ...(r.change_cause ? { changeCause: r.change_cause } : {}),
      }));
    },
    currentRevision(project, workload) {
      return (
        one<{ r: number | null }>(
          db,
          'SELECT MAX(revision) r FROM workload_revisions WHERE project = ? AND workload = ?',
          project,
          workload,
        )?.r ?? 0
      );
    },
    addRevision(project, workload, r, keep) {
      const next = this.currentRevision(project, workload) + 1;
      run(
        db,
        'INSERT INTO workload_revisions (project, workload, revision, manifests, created_at, change_cause) VALUES (?, ?, ?, ?, ?, ?)',
        project,
        workload,
        next,
        JSON.stringify(r.manifests),
        r.at,
        r.changeCause ?? null,
      );
      run(
        db,
        'DELETE FROM workload_revisions WHERE project = ? AND workload = ? AND revision <= ?',
        project,
        workload,
        next - keep,
      );
    },

    sealedKeyId(sealedPrefix) {
      const row = one<{ spec: string }>(
        db,
        `SELECT spec FROM objects WHERE kind IN ('Workload', 'Registry') AND ${containsParam(db, 'spec')} LIMIT 1`,
        `"${sealedPrefix}`,
      );
      return row ? /"ohs1\.([0-9a-f]{8})\./.exec(row.spec)?.[1] : undefined;
    },
    workloadSpecsContaining(text) {
      return all<{ project: string; name: string; spec: string }>(
        db,
        `SELECT project, name, spec FROM objects WHERE kind = 'Workload' AND ${containsParam(db, 'spec')}`,
        text,
      );
    },
    setWorkloadSpecText(project, name, spec) {
      run(db, "UPDATE objects SET spec = ? WHERE kind = 'Workload' AND project = ? AND name = ?", spec, project, name);
    },
    revisionsContaining(text) {
      return all<{ project: string; workload: string; revision: number; manifests: string }>(
        db,
        `SELECT project, workload, revision, manifests FROM workload_revisions WHERE ${containsParam(db, 'manifests')}`,
        text,
      );
    },
    setRevisionManifestsText(project, workload, revision, manifests) {
      run(
        db,
        'UPDATE workload_revisions SET manifests = ? WHERE project = ? AND workload = ? AND revision = ?',
        manifests,
        project,
        workload,
        revision,
      );
    },
  };
}
