/**
 * @module Where each version of a package runs (docs/catalog.md, "The Catalog page"): per version,
 * the placements that deploy it and the edges whose assignments hold it. An edge runs the version
 * of the revision its assignment holds (`package_revisions`), which during a rollout may still be
 * the placement's previous version; a revision `rollout undo` copied runs the version of the one
 * it copied. A revision the catalog never recorded (a placement deployed before the table
 * existed) counts as the placement's resolved version when it is the workload's current one, and
 * is left out otherwise.
 */
import type { PackagePlacementView } from '../../core/api/views.js';
import { rolledBackFrom, type ObjectStore } from '../objects.js';
import type { AssignmentStore } from '../state/assignments.js';
import type { CatalogTables } from '../state/catalog.js';

/** A version's placement names this many of its edges; `edgeCount` says how many there are. */
export const PACKAGE_EDGES_SHOWN = 20;

/** Version -> the placements that deploy it, each with the edges it runs on there. */
export function packageRuns(
  catalog: CatalogTables,
  objects: Pick<ObjectStore, 'currentRevision' | 'revisions'>,
  assignments: Pick<AssignmentStore, 'keysForPlacement'>,
  project: string,
  name: string,
): Map<string, PackagePlacementView[]> {
  const byVersion = new Map<string, Map<string, { view: PackagePlacementView; edges: Set<string> }>>();
  const entry = (version: string, d: { placement: string; versionRange: string; profile?: string }) => {
    const placements = byVersion.get(version) ?? byVersion.set(version, new Map()).get(version)!;
    let e = placements.get(d.placement);
    if (!e) {
      e = {
        view: {
          placement: d.placement,
          versionRange: d.versionRange,
          ...(d.profile ? { profile: d.profile } : {}),
          edges: [],
          edgeCount: 0,
        },
        edges: new Set(),
      };
      placements.set(d.placement, e);
    }
    return e;
  };
  for (const d of catalog.deploymentsOf(project, name)) {
    // Resolved, even before any edge has it: the placement shows with 0 edges.
    entry(d.version, d);
    const keys = assignments.keysForPlacement(project, d.placement);
    const recorded = catalog.revisionVersions(project, [...new Set(keys.map((k) => k.workload))]);
    // Read only for a revision the table does not name (each read parses every kept revision).
    const causes = new Map<string, Map<number, string | undefined>>();
    const causeOf = (workload: string, revision: number) => {
      let m = causes.get(workload);
      if (!m) {
        m = new Map(objects.revisions(project, workload).map((r) => [r.revision, r.changeCause]));
        causes.set(workload, m);
      }
      return m.get(revision);
    };
    const versionOf = (workload: string, revision: number): string | undefined => {
      const known = recorded.get(workload);
      const v = known?.get(revision);
      if (v) return v;
      const copied = rolledBackFrom(causeOf(workload, revision));
      const from = copied === undefined ? undefined : known?.get(copied);
      if (from) return from;
      return revision === objects.currentRevision(project, workload) ? d.version : undefined;
    };
    for (const k of keys) {
      const v = versionOf(k.workload, k.revision);
      if (v) entry(v, d).edges.add(k.edge);
    }
  }
  const out = new Map<string, PackagePlacementView[]>();
  for (const [version, placements] of byVersion)
    out.set(
      version,
      [...placements.values()].map(({ view, edges }) => {
        const sorted = [...edges].sort();
        return { ...view, edges: sorted.slice(0, PACKAGE_EDGES_SHOWN), edgeCount: sorted.length };
      }),
    );
  return out;
}
