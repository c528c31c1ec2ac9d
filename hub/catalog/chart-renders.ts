/**
 * @module Chart placements rendered per edge (docs/catalog.md, "Helm charts"). A chart
 * placement's generated workload holds one `ChartRelease` manifest; the scheduler asks here, for
 * each selected edge, what it becomes there: its values' `{{ edge.* }}` templates are rendered for
 * the edge (core/customize.ts), then the chart with those values by Helm (helm.ts). Edges whose
 * values come out the same share one rendering (keyed by the chart's digest, release, namespace
 * and values), so a placement over a thousand edges that differ only by name renders once per
 * distinct set of values its templates name.
 *
 * Rendering is asynchronous; until an edge's rendering is done the edge waits (the charts gate,
 * gate.ts `chartsGate`) and keeps what it runs; when one ends the project's placements are planned
 * again. Renderings are kept in memory (at most MAX_KEPT): a restarted hub renders again.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, renderTemplates, type EdgeContext } from '../../core/customize.js';
import { parseRendered, refusedHooks, type ChartRelease } from '../../core/chart.js';
import { createLogger } from '../../core/logger.js';
import { PackageError } from '../../core/package.js';
import type { Manifest } from '../../core/resources.js';
import type { ChartRendering, ChartTarget } from '../scheduler/targets.js';
import { ChartRenderError, type HelmRenderer } from './helm.js';

const log = createLogger('hub:charts');

/** Renderings kept; the oldest is dropped past it (rendered again if still asked for). */
export const MAX_KEPT = 1024;
/** A rendering stopped at a bound (time, a failed start) is tried again after this. */
export const TRANSIENT_RETRY_MS = 30_000;

type Entry =
  | { state: 'rendering' }
  | { state: 'done'; manifests: Manifest[] }
  | { state: 'failed'; error: string; until?: number };

export class ChartRenders implements ChartRendering {
  private readonly kept = new Map<string, Entry>();
  private readonly versions = new Map<string, number>();

  constructor(
    private readonly helm: HelmRenderer,
    /** The file of a blob (the chart archive). */
    private readonly blobPath: (digest: string) => string,
    /** A rendering of the project ended: re-plan its placements. */
    private readonly onRendered: (project: string) => void,
  ) {}

  /** Bumped when a rendering of the project ends: its selections are computed again. */
  version(project: string): number {
    return this.versions.get(project) ?? 0;
  }

  /** What `release` is on `edge`: its manifests, a rendering under way, or why it cannot be. */
  target(project: string, release: ChartRelease, edge: EdgeContext): ChartTarget {
    const { chart } = release.spec;
    const label = `chart ${chart.name} ${chart.version}`;
    const values = renderTemplates(release.spec.values, edge, ['spec', 'values']);
    if ('error' in values) return { error: `${label}: ${values.error}` };
    const request = {
      release: release.metadata.name,
      namespace: release.spec.namespace,
      values: values.value as Record<string, unknown>,
    };
    const key = createHash('sha256')
      .update(`${chart.digest}\0${canonicalJson(request)}`)
      .digest('hex');
    const e = this.kept.get(key);
    if (e?.state === 'done') return { manifests: e.manifests };
    if (e?.state === 'failed' && (e.until === undefined || e.until > Date.now()))
      return { error: `${label}: ${e.error}` };
    if (e?.state !== 'rendering') this.start(project, key, label, { chart: this.blobPath(chart.digest), ...request });
    return { pending: `${label} rendered for its values by the hub (under way)` };
  }

  private start(
    project: string,
    key: string,
    label: string,
    req: { chart: string; release: string; namespace: string; values: Record<string, unknown> },
  ): void {
    this.keep(key, { state: 'rendering' });
    void this.helm
      .render(req)
      .then((out): Entry => {
        const refused = refusedHooks(`${out.chart} ${out.version}`, out.hooks);
        if (refused) return { state: 'failed', error: refused.replace(/^chart \S+ \S+ /, '') };
        return { state: 'done', manifests: parseRendered(`${out.chart} ${out.version}`, out.manifest) };
      })
      .catch((err: unknown): Entry => {
        if (err instanceof ChartRenderError)
          return {
            state: 'failed',
            error: err.message,
            ...(err.transient ? { until: Date.now() + TRANSIENT_RETRY_MS } : {}),
          };
        if (err instanceof PackageError) return { state: 'failed', error: err.message.replace(/^chart \S+ \S+ /, '') };
        log.error({ err }, 'rendering a chart failed');
        return {
          state: 'failed',
          error: `rendering failed: ${(err as Error).message}`,
          until: Date.now() + TRANSIENT_RETRY_MS,
        };
      })
      .then((entry) => {
        if (entry.state === 'failed') log.info({ project, chart: label, error: entry.error }, 'chart not rendered');
        this.keep(key, entry);
        this.ended(project);
        // A bound passed: the edges asking for it are planned again once it may be tried again.
        if (entry.state === 'failed' && entry.until !== undefined)
          setTimeout(() => this.ended(project), entry.until - Date.now() + 10).unref();
      });
  }

  private ended(project: string): void {
    this.versions.set(project, this.version(project) + 1);
    this.onRendered(project);
  }

  private keep(key: string, e: Entry): void {
    this.kept.delete(key);
    this.kept.set(key, e);
    if (this.kept.size > MAX_KEPT) {
      // The oldest that is not under way: dropping one under way would start it again at once.
      for (const [k, v] of this.kept)
        if (v.state !== 'rendering') {
          this.kept.delete(k);
          break;
        }
    }
  }
}
