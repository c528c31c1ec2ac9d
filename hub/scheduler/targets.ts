/**
 * @module Selection and customization, cached: which edges a placement selects and what each of
 * them should run (every workload customized for the edge, with its content key).
 *
 * Both depend only on the placement, its workloads and the edges themselves (labels, approval,
 * schedulability), not on status: they are reused across the many status-only passes a rollout
 * or a reconnect storm makes (at 5,000 edges, re-selecting and customizing on every pass kept the
 * hub busy for minutes).
 */
import { createHash } from 'node:crypto';
import { chartReleaseOf, type ChartRelease } from '../../core/chart.js';
import { customize, manifestHash, type EdgeContext } from '../../core/customize.js';
import type { Edge, Manifest, Placement, Registry, Workload } from '../../core/resources.js';
import { contentSetKey } from '../../core/rollout.js';
import { selectEdges } from '../../core/selector.js';
import { placementSelection } from '../clusters/selection.js';
import { schedulableEdges } from '../edges/phase.js';
import type { ClusterTables } from '../state/clusters.js';
import type { EdgeLiveness } from '../state/edges.js';

/** What a chart workload is on one edge: its rendered manifests, a rendering under way, or why not. */
export type ChartTarget = { manifests: Manifest[] } | { pending: string } | { error: string };

/** What one workload should be on one edge. */
export interface Target {
  workload: string;
  revision: number;
  manifests: Manifest[];
  /** `manifestHash` of the manifests, or `error:<hash of the error>`. */
  key: string;
  error?: string;
  /** Images of the revision the hub has not resolved to a digest yet, each with why (hub/images/pins.ts). */
  unresolvedImages?: string[];
  /** A chart this edge's values are being rendered for (hub/catalog/chart-renders.ts): the edge waits. */
  chartPending?: string;
}

export interface Selection {
  /** Selected edges, in the selector's order. */
  selected: string[];
  /** Per selected edge: its targets, one per workload the placement names and the project holds. */
  targets: Map<string, Target[]>;
  /** Per selected edge: `contentSetKey` of its targets. */
  targetKeys: Map<string, string>;
}

/** The Edge objects of a project (labels, annotations, drain). */
export type EdgeSource = (project: string) => Edge[];

/** Why an edge cannot be given these manifests (e.g. no key to receive Secrets), if it cannot. */
export type Receivable = (edge: string, manifests: Manifest[]) => string | undefined;

/** The Registry objects of a project, and the manifests with the pull access they name added (hub/images). */
export interface RegistryAccess {
  list: (project: string) => Registry[];
  add: (registries: Registry[], manifests: Manifest[]) => Manifest[];
}

const NO_REGISTRIES: RegistryAccess = { list: () => [], add: (_, m) => m };

/** Chart workloads rendered per edge (hub/catalog/chart-renders.ts). */
export interface ChartRendering {
  /** Bumped when a rendering of the project ends: its selections are computed again. */
  version(project: string): number;
  target(project: string, release: ChartRelease, edge: EdgeContext): ChartTarget;
}

/** Images pinned to digests per workload revision (hub/images/pins.ts). */
export interface ImagePinning {
  /** Bumped when a resolution of the project ends: its selections are computed again. */
  version(project: string): number;
  pin(
    project: string,
    workload: string,
    revision: number,
    manifests: Manifest[],
    registries: readonly Registry[],
  ): { manifests: Manifest[]; unresolved: string[] };
}

export class TargetCache {
  private readonly cache = new Map<string, Selection & { stamp: string }>();
  /** Bumped whenever an edge's labels, approval or schedulability may have changed. */
  private edgesVersion = 0;
  /** Set once the hub's image cache exists (hub.ts wires it after the scheduler). */
  images: ImagePinning | undefined;
  /** Set once the catalog exists (hub.ts wires it after the scheduler). */
  charts: ChartRendering | undefined;
  /** Which cluster holds which edge: a placement's `clusters` select their control-plane edges. */
  clusters: Pick<ClusterTables, 'hostsOf'> | undefined;

  constructor(
    private readonly edges: EdgeSource,
    private readonly cannotReceive: Receivable,
    /** An edge gets the pull credentials of the registries its workloads' images name. */
    private readonly registries: RegistryAccess = NO_REGISTRIES,
  ) {}

  /** Some edge changed (labels, approval, drain, enrollment): every selection is computed again. */
  edgesChanged(): void {
    this.edgesVersion++;
  }

  forget(project: string, placement: string): void {
    this.cache.delete(`${project}/${placement}`);
  }

  /**
   * The selection of a placement over its (existing) workloads. The approved count is part of the
   * stamp: approval is a runtime fact (edge_runtime), and a change of it that did not come
   * through `edgesChanged` must still re-select (the UI's scale test seeds it directly). So are the
   * project's registries: their access goes into the manifests.
   */
  get(placement: Placement, workloads: Workload[], runtimes: Map<string, EdgeLiveness>): Selection {
    const { project, name } = placement.metadata;
    let approved = 0;
    for (const l of runtimes.values()) if (l.approved) approved++;
    const registries = this.registries.list(project);
    const selection = this.clusters ? placementSelection(this.clusters, project, placement.spec) : placement.spec;
    const stamp = `${(selection.edges ?? []).join(',')}|${placement.metadata.resourceVersion}|${workloads.map((w) => w.metadata.resourceVersion).join(',')}|${this.edgesVersion}|${approved}/${runtimes.size}|${registries.map((r) => r.metadata.resourceVersion).join(',')}|${this.images?.version(project) ?? 0}|${this.charts?.version(project) ?? 0}`;
    const hit = this.cache.get(`${project}/${name}`);
    if (hit && hit.stamp === stamp) return hit;
    const candidates = schedulableEdges(this.edges(project), runtimes);
    const selected = selectEdges(candidates, selection);
    const byName = new Map(candidates.map((e) => [e.name, e]));
    const targets = new Map<string, Target[]>();
    const targetKeys = new Map<string, string>();
    for (const e of selected) {
      const edge = byName.get(e)!;
      const ts = workloads.map((w) => this.target(placement, w, edge, registries));
      targets.set(e, ts);
      targetKeys.set(e, contentSetKey(ts));
    }
    const sel = { stamp, selected, targets, targetKeys };
    this.cache.set(`${project}/${name}`, sel);
    return sel;
  }

  private target(
    placement: Placement,
    w: Workload,
    edge: { name: string; labels: Record<string, string>; annotations: Record<string, string> },
    registries: Registry[],
  ): Target {
    const revision = (w.status as { revision?: number } | undefined)?.revision ?? 0;
    const ctx = { name: edge.name, labels: edge.labels, annotations: edge.annotations };
    let source = w.spec.manifests;
    // A chart's rendered output is the chart's text: `{{ ... }}` in it is not an edge template.
    let templates = true;
    const release = this.charts ? chartReleaseOf(source) : undefined;
    if (release) {
      const c = this.charts!.target(placement.metadata.project, release, ctx);
      if ('pending' in c)
        return {
          workload: w.metadata.name,
          revision,
          manifests: [],
          key: `pending:${createHash('sha256').update(c.pending).digest('hex').slice(0, 16)}`,
          chartPending: c.pending,
        };
      if ('error' in c) return this.failed(w.metadata.name, revision, `workload ${w.metadata.name}: ${c.error}`);
      source = c.manifests;
      templates = false;
    }
    const r = customize(source, ctx, placement.spec.customization, w.metadata.name, { templates });
    const pinned =
      'error' in r || !this.images
        ? undefined
        : this.images.pin(placement.metadata.project, w.metadata.name, revision, r.manifests, registries);
    const manifests = 'error' in r ? [] : this.registries.add(registries, pinned?.manifests ?? r.manifests);
    const error = 'error' in r ? r.error : this.cannotReceive(edge.name, manifests);
    if (error !== undefined) return this.failed(w.metadata.name, revision, error);
    return {
      workload: w.metadata.name,
      revision,
      manifests,
      key: manifestHash(manifests),
      ...(pinned?.unresolved.length ? { unresolvedImages: pinned.unresolved } : {}),
    };
  }

  private failed(workload: string, revision: number, error: string): Target {
    return {
      workload,
      revision,
      manifests: [],
      key: `error:${createHash('sha256').update(error).digest('hex').slice(0, 16)}`,
      error,
    };
  }
}
