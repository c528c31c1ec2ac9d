/**
 * @module How each kind is spelled where people type it: singular, plural (the URL segment of the
 * REST and Kubernetes APIs) and short name. The CLI accepts all three (cli/kinds.ts), and the
 * hub's Kubernetes API announces them in discovery, so `kubectl get pl` and `outpost get pl` agree.
 */
import type { Kind } from './resources.js';

export interface KindName {
  singular: string;
  plural: string;
  short: string;
}

export const KIND_NAMES: Record<Kind, KindName> = {
  Edge: { singular: 'edge', plural: 'edges', short: 'e' },
  Workload: { singular: 'workload', plural: 'workloads', short: 'wl' },
  Placement: { singular: 'placement', plural: 'placements', short: 'pl' },
  AgentUpgrade: { singular: 'agentupgrade', plural: 'agentupgrades', short: 'au' },
  Registry: { singular: 'registry', plural: 'registries', short: 'reg' },
  DataObject: { singular: 'dataobject', plural: 'dataobjects', short: 'do' },
  GitRepo: { singular: 'gitrepo', plural: 'gitrepos', short: 'gr' },
  ClusterTemplate: { singular: 'clustertemplate', plural: 'clustertemplates', short: 'ct' },
  Cluster: { singular: 'cluster', plural: 'clusters', short: 'cl' },
  ServiceExport: { singular: 'serviceexport', plural: 'serviceexports', short: 'svcx' },
  ServiceImport: { singular: 'serviceimport', plural: 'serviceimports', short: 'svci' },
};
