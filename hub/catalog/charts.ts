/**
 * @module Publishing a Helm chart as a package version (docs/catalog.md, "Helm charts"): a chart
 * archive uploaded as a blob (`outpost package push CHART.tgz`), or pulled from an OCI registry
 * that a Registry object of the project describes, with its credentials and CA
 * (`outpost package push oci://HOST/REPO:TAG`). Either way the archive is a blob of the project,
 * scanned like any package, and read by Helm (helm.ts `inspect`): its version, its subcharts and
 * their versions, values.yaml and `values-NAME.yaml` profiles are recorded with the version.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { isDigest, type BlobDigest } from '../../core/blobs.js';
import {
  CHART_CONFIG_MEDIA_TYPE,
  CHART_LAYER_MEDIA_TYPE,
  flattenScalars,
  MAX_CHART_BYTES,
  refusedHooks,
  type ChartInfo,
} from '../../core/chart.js';
import { OutpostError } from '../../core/errors.js';
import { registryHost } from '../../core/images.js';
import { PackageError, type PackageManifest, type Parameter } from '../../core/package.js';
import type { Registry } from '../../core/resources.js';
import type { HubBlobs } from '../blobs/index.js';
import type { SecretBox } from '../secrets.js';
import { UpstreamRegistry } from '../images/upstream.js';
import { ChartRenderError, type HelmRenderer } from './helm.js';

/** A chart's values.yaml leaves as parameters (dotted names, typed by their default), for forms and `describe`. */
function chartParameters(values: Record<string, unknown>): Parameter[] {
  return Object.entries(flattenScalars(values)).map(([name, v]) => ({
    name,
    type:
      typeof v === 'boolean'
        ? 'boolean'
        : typeof v === 'number'
          ? Number.isInteger(v)
            ? 'integer'
            : 'number'
          : 'string',
    default: v,
    required: false,
    secret: false,
  }));
}

/**
 * Reads a chart archive with Helm and checks it: at most MAX_CHART_BYTES, loadable, and with its
 * default values rendering no hook Outpost cannot run. Throws a PackageError naming the problem.
 */
export async function readChart(
  helm: HelmRenderer,
  file: string,
  size: number,
): Promise<{ chart: ChartInfo; manifest: PackageManifest; readme?: string }> {
  if (size > MAX_CHART_BYTES)
    throw new OutpostError(
      'too_large',
      `the chart archive is ${size} bytes, more than the ${MAX_CHART_BYTES}-byte limit of a chart (MAX_CHART_BYTES): a chart holds templates, not data; ship large files as blobs or in images`,
    );
  let info: ChartInfo & { description?: string; readme?: string };
  try {
    info = await helm.inspect(file);
  } catch (err) {
    if (err instanceof ChartRenderError) throw new PackageError(`the chart: ${err.message}`);
    throw err;
  }
  // Hooks are refused where they are known: with the chart's own values here, per edge later.
  try {
    const out = await helm.render({ chart: file, release: info.name, namespace: 'default', values: {} });
    const refused = refusedHooks(`${info.name} ${info.version}`, out.hooks);
    if (refused) throw new PackageError(refused);
  } catch (err) {
    // A chart may need values its placement gives (`required`): it is rendered per edge then.
    if (!(err instanceof ChartRenderError)) throw err;
  }
  const chart: ChartInfo = {
    name: info.name,
    version: info.version,
    ...(info.appVersion ? { appVersion: info.appVersion } : {}),
    dependencies: info.dependencies,
    values: info.values,
    profiles: info.profiles,
  };
  const manifest: PackageManifest = {
    apiVersion: 'outpost.dev/v1alpha1',
    kind: 'Package',
    metadata: { name: info.name, labels: {} },
    spec: {
      version: info.version,
      ...(info.description ? { description: info.description } : {}),
      parameters: chartParameters(info.values),
      profiles: Object.fromEntries(Object.entries(info.profiles).map(([k, v]) => [k, flattenScalars(v)])),
      dependsOn: [],
      workloads: [],
    },
  };
  return { chart, manifest, ...(info.readme ? { readme: info.readme } : {}) };
}

/** `oci://HOST/REPO:TAG` (or `@sha256:...`) split; a clear error otherwise. */
export function parseChartReference(ref: string): { host: string; repository: string; reference: string } {
  const m = /^oci:\/\/([^/]+)\/(.+?)(?::([A-Za-z0-9_][A-Za-z0-9._-]{0,127})|@(sha256:[a-f0-9]{64}))$/.exec(ref);
  if (!m)
    throw new OutpostError(
      'invalid',
      `chart reference ${JSON.stringify(ref)}: use oci://HOST/REPOSITORY:VERSION (or @sha256:DIGEST), the address helm push printed`,
    );
  return { host: m[1], repository: m[2], reference: m[3] ?? m[4] };
}

/**
 * Pulls the chart `ref` names from the registry of the project's Registry object for its host
 * (its credentials and CA), into the project's blobs. Refuses a manifest that is not a Helm chart's
 * and a chart over MAX_CHART_BYTES before reading it.
 */
export async function pullChart(
  o: { blobs: HubBlobs; box: SecretBox; registries: Registry[] },
  project: string,
  ref: string,
  by: string,
): Promise<{ digest: BlobDigest; size: number; manifestDigest: string }> {
  const { host, repository, reference } = parseChartReference(ref);
  const registry = o.registries.find((r) => registryHost(r.spec.url) === host);
  if (!registry)
    throw new OutpostError(
      'invalid',
      `no Registry object of project ${project} is for ${host}: apply one (spec.url https://${host}, with its credentials) so the hub can pull ${ref}`,
    );
  const upstream = new UpstreamRegistry(registry, o.box);
  const { bytes } = await upstream.manifest(repository, reference);
  const manifestDigest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  let m: { config?: { mediaType?: string }; layers?: { mediaType?: string; digest?: string; size?: number }[] };
  try {
    m = JSON.parse(bytes.toString('utf8')) as typeof m;
  } catch {
    throw new OutpostError('invalid', `${ref}: the registry's manifest is not JSON`);
  }
  const layer = m.layers?.find((l) => l.mediaType === CHART_LAYER_MEDIA_TYPE);
  if (m.config?.mediaType !== CHART_CONFIG_MEDIA_TYPE || !layer?.digest || !isDigest(layer.digest))
    throw new OutpostError(
      'invalid',
      `${ref} is not a Helm chart (its config is ${m.config?.mediaType ?? 'missing'}, not ${CHART_CONFIG_MEDIA_TYPE}, or it has no ${CHART_LAYER_MEDIA_TYPE} layer): push charts with helm push`,
    );
  if ((layer.size ?? 0) > MAX_CHART_BYTES)
    throw new OutpostError(
      'too_large',
      `${ref}: the chart is ${layer.size} bytes, more than the ${MAX_CHART_BYTES}-byte limit of a chart (MAX_CHART_BYTES)`,
    );
  const blob = await upstream.blob(repository, layer.digest);
  const info = await o.blobs.upload(blob.body as Readable, {
    project,
    uploadedBy: by,
    mediaType: CHART_LAYER_MEDIA_TYPE,
    expected: layer.digest,
    ...(layer.size !== undefined ? { size: layer.size } : {}),
  });
  return { digest: info.digest, size: info.size, manifestDigest };
}
