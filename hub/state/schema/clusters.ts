/** The schema component `clusters`: the tables of hub/state/clusters.ts. Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const CLUSTER_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      -- Every version of every ClusterTemplate as it was first applied: a version never changes.
      CREATE TABLE cluster_template_versions (
        project TEXT NOT NULL,
        template TEXT NOT NULL,
        version TEXT NOT NULL,
        spec TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (project, template, version)
      );
      -- Host reservation: an edge belongs to at most one cluster.
      CREATE TABLE cluster_hosts (
        edge TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        cluster TEXT NOT NULL,
        role TEXT NOT NULL
      );
      CREATE INDEX cluster_hosts_cluster ON cluster_hosts (project, cluster);
      -- A cluster's CA (edge '') and each node's certificates and keys, sealed with the hub's key.
      CREATE TABLE cluster_pki (
        project TEXT NOT NULL,
        cluster TEXT NOT NULL,
        edge TEXT NOT NULL,
        uid TEXT NOT NULL,
        sealed TEXT NOT NULL,
        PRIMARY KEY (project, cluster, edge)
      );
      -- What each node's edge last reported of it (core/cluster.ts ClusterNodeReport, JSON).
      CREATE TABLE cluster_nodes (
        edge TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        cluster TEXT NOT NULL,
        report TEXT NOT NULL
      );
      CREATE INDEX cluster_nodes_cluster ON cluster_nodes (project, cluster);
    `,
  },
  {
    version: 2,
    sql: `
      -- A Cluster whose deletion was asked for (phase Deleting): its nodes tear down, then it goes.
      -- uid: the Cluster's, so a cluster made again under the name is not taken for it.
      CREATE TABLE cluster_deletions (
        project TEXT NOT NULL,
        cluster TEXT NOT NULL,
        uid TEXT NOT NULL,
        at INTEGER NOT NULL,
        forced INTEGER NOT NULL,
        by_actor TEXT NOT NULL,
        PRIMARY KEY (project, cluster)
      );
    `,
  },
];
