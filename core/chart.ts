/**
 * @module Helm charts as packages of the catalog (docs/catalog.md, "Helm charts"), pure: what the
 * hub records of a chart, the `ChartRelease` manifest a chart placement's generated workload
 * holds (rendered per edge by the hub, hub/catalog/chart-renders.ts), how a placement's profile
 * and values become chart values, which hooks are dropped or refused, and the reading of Helm's
 * rendered output. Rendering itself is Helm's (build/helm, run by hub/catalog/helm.ts).
 */
import YAML from 'yaml';
import { ARCHIVE_LIMITS, ArchiveFormatError, readArchive, type ArchiveLimits } from './archive.js';
import { MAX_RENDERED_WORKLOAD_BYTES } from './limits.js';
import { PACKAGE_FILE, PackageError } from './package.js';
import { formatIssues, Manifest } from './resources.js';

/** The media types of a chart in an OCI registry (Helm's own: `helm push` writes them). */
export const CHART_LAYER_MEDIA_TYPE = 'application/vnd.cncf.helm.chart.content.v1.tar+gzip';
export const CHART_CONFIG_MEDIA_TYPE = 'application/vnd.cncf.helm.config.v1+json';
/** The file every chart has at the root of its directory (`NAME/Chart.yaml` in its archive). */
export const CHART_FILE = 'Chart.yaml';
/** The manifest kind of a chart placement's generated workload: the hub renders it per edge. */
export const CHART_RELEASE_KIND = 'ChartRelease';
/** A chart archive (.tgz) larger than this is refused at publish: charts are templates, not data. */
export const MAX_CHART_BYTES = 4 * 1024 * 1024;
/** One rendering of a chart for one edge's values is stopped past this. */
export const CHART_RENDER_TIMEOUT_MS = 20_000;
/** What one rendering may print (its JSON answer); past it the renderer is stopped and the edge told. */
export const MAX_CHART_RENDER_OUTPUT_BYTES = MAX_RENDERED_WORKLOAD_BYTES;
/** Hook events that are dropped: they run only under `helm test`, never on install or upgrade. */
export const DROPPED_HOOK_EVENTS = ['test', 'test-success', 'test-failure'];

export interface ChartDependency {
  name: string;
  version: string;
  /** Where the subchart sits in the chart, e.g. `shop/charts/cache`. */
  path: string;
}

/** What the hub records of a published chart (the `chart` of its package version). */
export interface ChartInfo {
  name: string;
  version: string;
  appVersion?: string;
  /** The subcharts the archive carries, depth first, with their versions. */
  dependencies: ChartDependency[];
  /** values.yaml. */
  values: Record<string, unknown>;
  /** The chart's `values-NAME.yaml` files, by NAME: a placement's `profile`. */
  profiles: Record<string, Record<string, unknown>>;
  /** Where it was pulled from (`oci://HOST/REPO:TAG`) and the OCI manifest's digest; absent when pushed as a file. */
  source?: { reference: string; manifestDigest: string };
}

/** The one manifest of a chart placement's generated workload (edge templates left in `values`). */
export interface ChartRelease {
  apiVersion: 'outpost.dev/v1alpha1';
  kind: typeof CHART_RELEASE_KIND;
  metadata: { name: string };
  spec: {
    chart: { name: string; version: string; digest: string; dependencies: ChartDependency[] };
    namespace: string;
    values: Record<string, unknown>;
  };
}

export interface ChartHook {
  name: string;
  kind: string;
  path: string;
  events: string[];
}

/** The ChartRelease a workload's manifests are, if they are one. */
export function chartReleaseOf(manifests: readonly Manifest[]): ChartRelease | undefined {
  const m = manifests[0];
  return manifests.length === 1 && m?.kind === CHART_RELEASE_KIND && m.apiVersion === 'outpost.dev/v1alpha1'
    ? (m as unknown as ChartRelease)
    : undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `b` merged over `a` (maps deeply, anything else replaced), as Helm merges values files. */
export function mergeValues(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    Object.defineProperty(out, k, {
      value: isObject(cur) && isObject(v) ? mergeValues(cur, v) : v,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;

/**
 * The chart values a placement asks for: the profile's values file, then each value at its dotted
 * path (`image.tag: "1.2"`, as `helm --set` takes it, typed). The chart's values.yaml is under both
 * (Helm merges it); `{{ edge.* }}` templates in string values are left for each edge.
 */
export function chartValues(
  chart: Pick<ChartInfo, 'name' | 'profiles'>,
  profile: string | undefined,
  values: Record<string, string | number | boolean>,
): Record<string, unknown> {
  let out: Record<string, unknown> = {};
  if (profile !== undefined) {
    const p = chart.profiles[profile];
    if (!p)
      throw new PackageError(
        `profile ${profile}: chart ${chart.name} has no values-${profile}.yaml (its profiles: ${Object.keys(chart.profiles).join(', ') || 'none'})`,
      );
    out = mergeValues(out, p);
  }
  for (const [k, v] of Object.entries(values)) {
    const path = k.split('.');
    if (path.some((s) => !SEGMENT.test(s)))
      throw new PackageError(
        `values.${k}: a chart value is a dotted path of letters, digits, "_" and "-" (e.g. image.tag), as helm --set takes it`,
      );
    const patch: Record<string, unknown> = {};
    let at = patch;
    for (const [i, s] of path.entries()) {
      const next: Record<string, unknown> = {};
      Object.defineProperty(at, s, {
        value: i === path.length - 1 ? v : next,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      at = next;
    }
    out = mergeValues(out, patch);
  }
  return out;
}

/** Scalar leaves of a values tree by dotted path (`cache.size: 16`): a chart's parameters as forms show them. */
export function flattenScalars(v: Record<string, unknown>, prefix = ''): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, x] of Object.entries(v)) {
    const p = prefix ? `${prefix}.${k}` : k;
    if (isObject(x)) Object.assign(out, flattenScalars(x, p));
    else if (typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean') out[p] = x;
  }
  return out;
}

/**
 * Why these hooks cannot be deployed, if any: every hook but `test` ones needs Helm's release
 * lifecycle on a live cluster (run before or after the rest, waited for, deleted by policy), which
 * an edge does not have. Test hooks are dropped (they run only under `helm test`).
 */
export function refusedHooks(chart: string, hooks: readonly ChartHook[]): string | undefined {
  const refused = hooks.filter((h) => !h.events.every((e) => DROPPED_HOOK_EVENTS.includes(e)));
  if (refused.length === 0) return undefined;
  const list = refused.map((h) => `${h.kind}/${h.name} (${h.path}) on ${h.events.join(', ')}`).join('; ');
  return `chart ${chart} renders ${refused.length === 1 ? 'a hook' : 'hooks'} Outpost cannot run: ${list}. Hooks other than test hooks need Helm's release lifecycle on a live cluster (run in order before or after the release, waited for, deleted by policy), which edges do not have: turn the hook off with the chart's values, or make it a plain manifest (test hooks are dropped)`;
}

/** The manifests of Helm's rendered output (a YAML stream; empty documents skipped), each checked. */
export function parseRendered(chart: string, text: string): Manifest[] {
  const out: Manifest[] = [];
  for (const doc of YAML.parseAllDocuments(text)) {
    if (doc.errors.length) throw new PackageError(`chart ${chart} rendered invalid YAML: ${doc.errors[0].message}`);
    const v: unknown = doc.toJS();
    if (v === null || v === undefined) continue;
    const r = Manifest.safeParse(v);
    if (!r.success) {
      const i = formatIssues(r.error, `manifests[${out.length}]`)[0];
      throw new PackageError(`chart ${chart} rendered a manifest that is not one: ${i.path}: ${i.message}`);
    }
    out.push(r.data);
  }
  if (out.length === 0) throw new PackageError(`chart ${chart} rendered no manifest with these values`);
  return out;
}

/**
 * Whether `file` is a Helm chart archive (an entry NAME/Chart.yaml, and no package.yaml at its
 * root) rather than an Outpost package; false when it is no archive at all. Read within `limits`
 * (ArchiveLimitError past them): the hub reads with the archive limits, the CLI only a little of it.
 */
export async function isChartArchive(file: string, limits: ArchiveLimits = ARCHIVE_LIMITS): Promise<boolean> {
  const chartEntry = new RegExp(`^[^/]+/${CHART_FILE}$`);
  let chart = false;
  let pkg = false;
  try {
    await readArchive(
      file,
      (e) => {
        const p = e.path.replace(/^\.\//, '');
        if (p === PACKAGE_FILE) pkg = true;
        else if (e.type === 'File' && chartEntry.test(p)) chart = true;
        return undefined;
      },
      limits,
    );
  } catch (err) {
    if (err instanceof ArchiveFormatError) return false;
    throw err;
  }
  return chart && !pkg;
}
