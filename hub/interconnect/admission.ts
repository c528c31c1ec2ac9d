/**
 * @module What the interconnect relay checks a connection against at open (hub/interconnect/relay.ts):
 * per import of a project, the import, the edges it selects, the export it names (or why it is
 * refused) and the edges serving that export with their health and region. Read from the objects
 * and the tables once and kept for ADMISSION_TTL_MS, or until the objects change (the relay clears
 * it before it checks its open connections again): a burst of short connections reads them once,
 * not nine statements per connection (measured: a fifth of what the hub allocated per connection,
 * docs/benchmarks.md "Interconnect, sixth round").
 *
 * What may be stale within the TTL: the order of the serving edges tried (one that went away fails
 * at open and the next is tried), and an edge approved within the second not yet among those an
 * import selects (its listeners come with its next spec anyway). A change of the objects is not
 * left stale: the relay clears what is kept and checks every open connection again right after
 * the change commits (InterconnectPlanner.onAuthorityChange), so a connection opened in between
 * is checked with the rest and reset if the change took its right away.
 */
import type { Edge, ServiceExport, ServiceImport } from '../../core/resources.js';
import type { ObjectStore } from '../objects.js';
import type { InterconnectPlanner } from './index.js';
import { REGION_LABEL, type ServingCandidate } from './pick.js';

/** How long what was read for an import serves the connections opened for it. */
export const ADMISSION_TTL_MS = 1_000;

/** Imports kept at most (a peer naming imports that do not exist cannot grow it without bound). */
const MAX_KEPT = 1_024;

/** What was read for one import of one project. */
export interface Admission {
  readonly at: number;
  /** The import (absent: not found). */
  readonly imp?: ServiceImport;
  /** Why its connections are refused whatever the consuming edge: the export missing, or no grant. */
  readonly refused?: string;
  /** The edges of the import's project it selects. */
  readonly selected: ReadonlySet<string>;
  readonly exp?: ServiceExport;
  /** The export's project. */
  readonly project: string;
  /** The edges running the export's workload, with their health and `region` label. */
  readonly serving: readonly ServingCandidate[];
  /** The consuming edges' `region` labels, read as they open connections. */
  readonly regions: Map<string, string | undefined>;
}

export class Admissions {
  private readonly kept = new Map<string, Admission>();

  constructor(
    private readonly planner: Pick<InterconnectPlanner, 'selected' | 'exportOf' | 'servingEdges'>,
    private readonly objects: Pick<ObjectStore, 'get'>,
    private readonly ttlMs = ADMISSION_TTL_MS,
  ) {}

  /** What import `name` of `project` is checked against now. */
  of(project: string, name: string, now = Date.now()): Admission {
    const key = `${project}/${name}`;
    const hit = this.kept.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit;
    if (this.kept.size >= MAX_KEPT) this.kept.clear();
    const a = this.read(project, name, now);
    this.kept.set(key, a);
    return a;
  }

  /** The `region` label of consuming edge `edge` of the import's project. */
  regionOf(a: Admission, project: string, edge: string): string | undefined {
    if (!a.regions.has(edge))
      a.regions.set(edge, this.objects.get<Edge>('Edge', project, edge)?.metadata.labels[REGION_LABEL]);
    return a.regions.get(edge);
  }

  /** The objects changed: everything is read again at the next open. */
  clear(): void {
    this.kept.clear();
  }

  private read(project: string, name: string, at: number): Admission {
    const none = { at, selected: new Set<string>(), serving: [], regions: new Map() };
    const imp = this.objects.get<ServiceImport>('ServiceImport', project, name);
    if (!imp) return { ...none, project };
    const selected = new Set(this.planner.selected(imp));
    const { exp, project: exporter, refused } = this.planner.exportOf(imp);
    if (refused || !exp) return { ...none, imp, selected, project: exporter, refused: refused ?? 'no export' };
    const serving = this.planner.servingEdges(exp, at).map((c) => ({
      ...c,
      region: this.objects.get<Edge>('Edge', exporter, c.edge)?.metadata.labels[REGION_LABEL],
    }));
    return { ...none, imp, selected, exp, project: exporter, serving };
  }
}
