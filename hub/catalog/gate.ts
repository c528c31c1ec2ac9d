/**
 * @module `dependsOn` on the edge: a package's workloads start on an edge only once each package it
 * depends on is Ready there (issue #21). A scheduler gate (hub/scheduler/gates.ts): for a placement
 * of a package, each dependency must be deployed to the same edge by another placement, at a
 * version its range accepts, with every workload Ready; until then the edge waits, named in the
 * rollout's reason. The dependency is not deployed for you: deploy it with its own placement.
 */
import semver from 'semver';
import type { Placement } from '../../core/resources.js';
import type { CatalogTables } from '../state/catalog.js';
import type { ObjectStore } from '../objects.js';
import type { EdgeGate } from '../scheduler/gates.js';

export function dependsOnGate(catalog: CatalogTables, objects: ObjectStore): EdgeGate {
  return (placement, edges, ctx) => {
    const out = new Map<string, string[]>();
    const { project, name } = placement.metadata;
    if (!placement.spec.package || !edges.length) return out;
    const deployed = catalog.getDeployment(project, name);
    if (!deployed) return out;
    const deps = catalog.getPackage(project, deployed.package, deployed.version)?.manifest.spec.dependsOn ?? [];
    if (!deps.length) return out;
    // The placements that deploy each dependency at a version in its range.
    const all = objects.list<Placement>('Placement', project);
    const providers = deps.map((d) => ({
      d,
      by: all.filter((p) => {
        if (p.spec.package?.name !== d.name || p.metadata.name === name) return false;
        const v = catalog.getDeployment(project, p.metadata.name)?.version;
        return v !== undefined && semver.satisfies(v, d.version);
      }),
    }));
    for (const edge of edges) {
      const missing = providers
        .filter(({ by }) => !by.some((p) => ctx.readyOn(project, p.metadata.name, edge)))
        .map(({ d, by }) =>
          by.length
            ? `package ${d.name} ${d.version} Ready on it (placement ${by.map((p) => p.metadata.name).join(', ')})`
            : `package ${d.name} ${d.version} Ready on it (no placement deploys it: apply one with spec.package.name ${d.name})`,
        );
      if (missing.length) out.set(edge, missing);
    }
    return out;
  };
}

/**
 * Chart placements (chart-renders.ts): an edge whose chart is still being rendered for its values
 * waits, named in the rollout's reason, and keeps what it runs; it goes on once the rendering ends.
 */
export function chartsGate(): EdgeGate {
  return (_placement, edges, ctx) => {
    const out = new Map<string, string[]>();
    for (const edge of edges) {
      const pending = ctx.targetsOn(edge).flatMap((t) => (t.chartPending ? [t.chartPending] : []));
      if (pending.length) out.set(edge, pending);
    }
    return out;
  };
}
