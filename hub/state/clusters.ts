/**
 * @module Clusters at the sites (hub/clusters/), the only SQL about them: the versions of each
 * ClusterTemplate as first applied (a version never changes), which cluster each edge belongs to
 * (host reservation: at most one), the clusters' PKI sealed with the hub's key (the CA, and each
 * node's certificates), what each node's edge last reported, and the deletions asked for (a
 * Cluster is `Deleting` until its nodes tore down). The Cluster and ClusterTemplate objects
 * themselves are in `objects`.
 */
import { all, migrateTables, one, run, type SqlDb } from './sql.js';

export interface ClusterHost {
  edge: string;
  project: string;
  cluster: string;
  role: string;
}

/** A Cluster's deletion as asked for (hub/clusters/deletion.ts). */
export interface ClusterDeletion {
  uid: string;
  /** When it was asked for (ms since the epoch). */
  at: number;
  /** Asked past the Placements that target the cluster (`--force`). */
  forced: boolean;
  by: string;
}

export interface ClusterTables {
  /** A template version's spec (JSON) as first applied; undefined: never applied. */
  templateVersion(project: string, template: string, version: string): string | undefined;
  /** Records a template version (kept when it exists: the caller refuses a different content). */
  putTemplateVersion(project: string, template: string, version: string, spec: string, at: number): void;
  templateVersions(project: string, template: string): string[];
  /** The cluster an edge belongs to. */
  holder(edge: string): ClusterHost | undefined;
  hostsOf(project: string, cluster: string): ClusterHost[];
  allHosts(): ClusterHost[];
  reserve(h: ClusterHost): void;
  /** Releases one host of a cluster, or all of them. */
  release(project: string, cluster: string, edge?: string): void;
  /** Sealed PKI: the CA with edge ''. */
  pki(project: string, cluster: string, edge: string): { uid: string; sealed: string } | undefined;
  /**
   * Records PKI unless PKI of the same cluster uid is there already (another hub replica made it
   * first: the first one stays, so every replica hands out the same); returns what is kept.
   */
  putPki(project: string, cluster: string, edge: string, uid: string, sealed: string): { uid: string; sealed: string };
  /** Drops a cluster's PKI (all of it, or one node's). */
  dropPki(project: string, cluster: string, edge?: string): void;
  /** What an edge last reported of its node (JSON). */
  nodeReport(edge: string): { project: string; cluster: string; report: string } | undefined;
  putNodeReport(edge: string, project: string, cluster: string, report: string): void;
  deleteNodeReport(edge: string): void;
  nodesOf(project: string, cluster: string): { edge: string; report: string }[];
  /** A decommissioned edge: its reservation, its report and its node's PKI go. */
  forgetEdge(edge: string): void;
  /** Every row of a deleted project: its template versions (kept past a template's delete), and what its clusters left. */
  forgetProject(project: string): void;
  /** The deletion of a cluster, once asked for. */
  deletion(project: string, cluster: string): ClusterDeletion | undefined;
  /** Every deletion under way. */
  deletions(): ({ project: string; cluster: string } & ClusterDeletion)[];
  /** Records a deletion (one recorded for the same uid is kept; a stale one of another uid is replaced). */
  putDeletion(project: string, cluster: string, d: ClusterDeletion): void;
  /**
   * Ends a deletion (the Cluster is then removed); true for the one transaction that ended it: the
   * row is locked, so of hub replicas finishing it at once, one does.
   */
  endDeletion(project: string, cluster: string, uid: string): boolean;
}

interface DeletionRow {
  project: string;
  cluster: string;
  uid: string;
  at: number;
  forced: number;
  by_actor: string;
}
const deletionOf = (r: DeletionRow) => ({
  project: r.project,
  cluster: r.cluster,
  uid: r.uid,
  at: Number(r.at),
  forced: !!Number(r.forced),
  by: r.by_actor,
});
const DELETION_COLUMNS = 'project, cluster, uid, at, forced, by_actor';

export function sqlClusterTables(db: SqlDb): ClusterTables {
  migrateTables(db, 'clusters');
  return {
    templateVersion: (project, template, version) =>
      one<{ spec: string }>(
        db,
        `SELECT spec FROM cluster_template_versions WHERE project = ? AND template = ? AND version = ?`,
        project,
        template,
        version,
      )?.spec,
    putTemplateVersion(project, template, version, spec, at) {
      run(
        db,
        `INSERT INTO cluster_template_versions (project, template, version, spec, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (project, template, version) DO NOTHING`,
        project,
        template,
        version,
        spec,
        at,
      );
    },
    templateVersions: (project, template) =>
      all<{ version: string }>(
        db,
        `SELECT version FROM cluster_template_versions WHERE project = ? AND template = ? ORDER BY created_at, version`,
        project,
        template,
      ).map((r) => r.version),
    holder: (edge) =>
      one<ClusterHost>(db, `SELECT edge, project, cluster, role FROM cluster_hosts WHERE edge = ?`, edge),
    hostsOf: (project, cluster) =>
      all<ClusterHost>(
        db,
        `SELECT edge, project, cluster, role FROM cluster_hosts WHERE project = ? AND cluster = ? ORDER BY edge`,
        project,
        cluster,
      ),
    allHosts: () => all<ClusterHost>(db, `SELECT edge, project, cluster, role FROM cluster_hosts ORDER BY edge`),
    reserve(h) {
      run(
        db,
        `INSERT INTO cluster_hosts (edge, project, cluster, role) VALUES (?, ?, ?, ?)
         ON CONFLICT (edge) DO UPDATE SET role = excluded.role
         WHERE cluster_hosts.project = excluded.project AND cluster_hosts.cluster = excluded.cluster`,
        h.edge,
        h.project,
        h.cluster,
        h.role,
      );
    },
    release(project, cluster, edge) {
      if (edge === undefined) run(db, `DELETE FROM cluster_hosts WHERE project = ? AND cluster = ?`, project, cluster);
      else run(db, `DELETE FROM cluster_hosts WHERE project = ? AND cluster = ? AND edge = ?`, project, cluster, edge);
    },
    pki: (project, cluster, edge) =>
      one<{ uid: string; sealed: string }>(
        db,
        `SELECT uid, sealed FROM cluster_pki WHERE project = ? AND cluster = ? AND edge = ?`,
        project,
        cluster,
        edge,
      ),
    putPki(project, cluster, edge, uid, sealed) {
      run(
        db,
        `INSERT INTO cluster_pki (project, cluster, edge, uid, sealed) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (project, cluster, edge) DO UPDATE SET uid = excluded.uid, sealed = excluded.sealed
         WHERE cluster_pki.uid <> excluded.uid`,
        project,
        cluster,
        edge,
        uid,
        sealed,
      );
      return one<{ uid: string; sealed: string }>(
        db,
        `SELECT uid, sealed FROM cluster_pki WHERE project = ? AND cluster = ? AND edge = ?`,
        project,
        cluster,
        edge,
      )!;
    },
    dropPki(project, cluster, edge) {
      if (edge === undefined) run(db, `DELETE FROM cluster_pki WHERE project = ? AND cluster = ?`, project, cluster);
      else run(db, `DELETE FROM cluster_pki WHERE project = ? AND cluster = ? AND edge = ?`, project, cluster, edge);
    },
    nodeReport: (edge) =>
      one<{ project: string; cluster: string; report: string }>(
        db,
        `SELECT project, cluster, report FROM cluster_nodes WHERE edge = ?`,
        edge,
      ),
    putNodeReport(edge, project, cluster, report) {
      run(
        db,
        `INSERT INTO cluster_nodes (edge, project, cluster, report) VALUES (?, ?, ?, ?)
         ON CONFLICT (edge) DO UPDATE SET project = excluded.project, cluster = excluded.cluster, report = excluded.report`,
        edge,
        project,
        cluster,
        report,
      );
    },
    deleteNodeReport(edge) {
      run(db, `DELETE FROM cluster_nodes WHERE edge = ?`, edge);
    },
    nodesOf: (project, cluster) =>
      all<{ edge: string; report: string }>(
        db,
        `SELECT edge, report FROM cluster_nodes WHERE project = ? AND cluster = ? ORDER BY edge`,
        project,
        cluster,
      ),
    forgetEdge(edge) {
      run(db, `DELETE FROM cluster_hosts WHERE edge = ?`, edge);
      run(db, `DELETE FROM cluster_nodes WHERE edge = ?`, edge);
      run(db, `DELETE FROM cluster_pki WHERE edge = ?`, edge);
    },
    forgetProject(project) {
      for (const table of [
        'cluster_template_versions',
        'cluster_hosts',
        'cluster_pki',
        'cluster_nodes',
        'cluster_deletions',
      ])
        run(db, `DELETE FROM ${table} WHERE project = ?`, project);
    },
    deletion(project, cluster) {
      const r = one<DeletionRow>(
        db,
        `SELECT ${DELETION_COLUMNS} FROM cluster_deletions WHERE project = ? AND cluster = ?`,
        project,
        cluster,
      );
      if (!r) return undefined;
      const { project: _p, cluster: _c, ...d } = deletionOf(r);
      return d;
    },
    deletions: () =>
      all<DeletionRow>(db, `SELECT ${DELETION_COLUMNS} FROM cluster_deletions ORDER BY project, cluster`).map(
        deletionOf,
      ),
    putDeletion(project, cluster, d) {
      run(
        db,
        `INSERT INTO cluster_deletions (${DELETION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (project, cluster) DO UPDATE SET uid = excluded.uid, at = excluded.at,
           forced = excluded.forced, by_actor = excluded.by_actor
         WHERE cluster_deletions.uid <> excluded.uid`,
        project,
        cluster,
        d.uid,
        d.at,
        d.forced ? 1 : 0,
        d.by,
      );
    },
    endDeletion: (project, cluster, uid) =>
      run(db, `DELETE FROM cluster_deletions WHERE project = ? AND cluster = ? AND uid = ?`, project, cluster, uid) > 0,
  };
}
