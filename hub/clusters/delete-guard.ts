/**
 * @module A Cluster is not deleted while Placements target it (docs/clusters.md, "Delete"): their
 * workloads would fail on its control-plane edge once the cluster is gone. Forced, it is deleted
 * anyway (and those workloads fail there, saying so).
 */
import { OutpostError } from '../../core/errors.js';
import type { Placement } from '../../core/resources.js';
import type { ObjectStore } from '../objects.js';

/** Throws a conflict naming the Placements that target the cluster, unless `force`. */
export function refuseClusterDelete(
  objects: Pick<ObjectStore, 'list'>,
  project: string,
  name: string,
  force: boolean,
): void {
  if (force) return;
  const by = objects
    .list<Placement>('Placement', project)
    .filter((p) => p.spec.clusters?.includes(name))
    .map((p) => p.metadata.name);
  if (by.length)
    throw new OutpostError(
      'conflict',
      `Cluster ${name} is targeted by Placement ${by.join(', ')}: delete or change those placements first, or delete the cluster with --force (their workloads then fail on its edge)`,
    );
}
