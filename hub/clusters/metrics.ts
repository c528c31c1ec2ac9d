/**
 * @module Prometheus series of the clusters at the sites (docs/clusters.md, "Status"), read at
 * scrape time from the same status the API shows: how many clusters are in each phase, each
 * cluster's nodes and Ready nodes, and whether each control-plane component is healthy.
 */
import client from 'prom-client';
import type { Cluster } from '../../core/resources.js';
import type { ObjectStore } from '../objects.js';
import type { HubClusters } from './index.js';

const PHASES = ['Provisioning', 'Ready', 'Scaling', 'Upgrading', 'Degraded', 'Deleting'] as const;

export function registerClusterMetrics(
  registry: client.Registry,
  clusters: Pick<HubClusters, 'status'>,
  objects: Pick<ObjectStore, 'list'>,
): void {
  const statuses = () => objects.list<Cluster>('Cluster', '*').map((c) => ({ c, s: clusters.status(c) }));
  new client.Gauge({
    name: 'outpost_hub_clusters',
    help: 'Clusters at the sites, by phase',
    labelNames: ['phase'],
    registers: [registry],
    collect() {
      const n = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<string, number>;
      for (const { s } of statuses()) n[s.phase] = (n[s.phase] ?? 0) + 1;
      for (const [phase, v] of Object.entries(n)) this.set({ phase }, v);
    },
  });
  new client.Gauge({
    name: 'outpost_hub_cluster_nodes',
    help: "A cluster's nodes (a worker being removed included), and how many are Ready",
    labelNames: ['project', 'cluster', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { c, s } of statuses()) {
        const at = { project: c.metadata.project, cluster: c.metadata.name };
        const ready = s.nodes.filter((n) => n.ready).length;
        this.set({ ...at, state: 'ready' }, ready);
        this.set({ ...at, state: 'not_ready' }, s.nodes.length - ready);
      }
    },
  });
  new client.Gauge({
    name: 'outpost_hub_cluster_component_healthy',
    help: "1 when a cluster's control-plane component answers its health check, else 0",
    labelNames: ['project', 'cluster', 'component'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { c, s } of statuses())
        for (const [component, v] of Object.entries(s.components))
          this.set({ project: c.metadata.project, cluster: c.metadata.name, component }, v.healthy ? 1 : 0);
    },
  });
}
