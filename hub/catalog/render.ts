/**
 * @module Package placements: turns a Placement with `spec.package` into the Workloads the
 * scheduler already handles. Called from one place, the object store's placement admission
 * (hub/objects.ts), inside the transaction that writes the placement, so the placement, its
 * generated workloads and the resolved version are one commit.
 *
 * The version range is resolved once per rollout: while the package request (name, range,
 * profile, values) is unchanged, the version recorded in `package_deployments` stays, whatever
 * is published meanwhile; `outpost rollout restart` resolves again. Secret parameter values are
 * sealed with the hub's key in the stored placement and delivered in a generated Secret (sealed
 * at rest and to each edge like any Secret, hub/secrets.ts). A Helm chart's placement generates one
 * workload holding a `ChartRelease` (core/chart.ts), rendered by Helm per edge (chart-renders.ts).
 */
import { createHash } from 'node:crypto';
import { OutpostError } from '../../core/errors.js';
import {
  PackageError,
  renderPackage,
  resolveValues,
  resolveVersion,
  isVersionRange,
  sortVersions,
} from '../../core/package.js';
import { HUB_SEALED_PREFIX } from '../../core/secrets.js';
import type { Manifest, Placement, Workload } from '../../core/resources.js';
import type { CatalogTables, PackageRecord } from '../state/catalog.js';
import { CHART_RELEASE_KIND, chartValues, type ChartRelease } from '../../core/chart.js';
import type { SecretBox } from '../secrets.js';
import { KEPT_REVISIONS, type ObjectStore } from '../objects.js';

/** Marks a workload generated for a package placement; the value is the placement's name. */
export const GENERATED_FOR_ANNOTATION = 'outpost.dev/generated-for-placement';
export const PACKAGE_ANNOTATION = 'outpost.dev/package';

export interface RenderContext {
  catalog: CatalogTables;
  objects: ObjectStore;
  box: SecretBox;
}

function refuse(placement: string, message: string): never {
  throw new OutpostError('invalid', `placement ${placement}: ${message}`, {
    details: [{ path: 'spec.package', message: `placement ${placement}: ${message}` }],
  });
}

function generatedName(placement: string, workload: string): string {
  const n = `${placement}-${workload}`;
  if (n.length > 63)
    throw new OutpostError(
      'invalid',
      `placement ${placement}: the generated workload name ${n} is longer than 63 characters: use a shorter placement name`,
    );
  return n;
}

/** Workloads generated for this placement. */
function generatedWorkloads(ctx: RenderContext, project: string, placement: string): Workload[] {
  return ctx.objects
    .list<Workload>('Workload', project)
    .filter((w) => w.metadata.annotations[GENERATED_FOR_ANNOTATION] === placement);
}

/** Drops what a placement generated (it was deleted, or no longer deploys a package). */
export function forgetPackagePlacement(
  ctx: RenderContext,
  project: string,
  placement: string,
  keep: string[] = [],
): void {
  for (const w of generatedWorkloads(ctx, project, placement))
    if (!keep.includes(w.metadata.name)) {
      ctx.objects.delete('Workload', project, w.metadata.name, 'the catalog');
      ctx.catalog.forgetRevisionVersions(project, w.metadata.name);
    }
  if (keep.length === 0) ctx.catalog.deleteDeployment(project, placement);
}

/**
 * The placement as it is to be stored: with `spec.workloads` naming the generated workloads and
 * secret values sealed; the generated workloads written. Throws a clear per-placement error when
 * the package, version, profile or a value is wrong, or the resolved version is not Clean.
 */
export function admitPackagePlacement(
  ctx: RenderContext,
  p: Placement,
  cur: Placement | undefined,
  opts: { reresolve?: boolean; actor?: string } = {},
): Placement {
  const { project, name } = p.metadata;
  const ref = p.spec.package;
  if (!ref) {
    if (cur?.spec.package) forgetPackagePlacement(ctx, project, name);
    return p;
  }
  if (!isVersionRange(ref.version))
    refuse(name, `version "${ref.version}" is not a version or semver range: use e.g. 1.2.0, ^1.2 or ~1.2.3`);
  const versions = ctx.catalog.packageVersions(project, ref.name);
  if (versions.length === 0)
    refuse(name, `package ${ref.name} is not in the catalog of project ${project}: push it with outpost package push`);

  // Secret values: sealed in the stored placement; an unchanged value keeps its stored sealing, so
  // applying the same file again changes nothing.
  const secretNames = new Set(
    versions.flatMap((v) => v.manifest.spec.parameters.filter((x) => x.secret).map((x) => x.name)),
  );
  const plain: Record<string, string | number | boolean> = {};
  const stored: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(ref.values)) {
    let value = v;
    if (typeof v === 'string' && v.startsWith(HUB_SEALED_PREFIX)) {
      try {
        value = ctx.box.open(v);
      } catch (err) {
        refuse(name, `values.${k}: ${(err as Error).message}`);
      }
    }
    plain[k] = value;
    if (secretNames.has(k)) {
      const before = cur?.spec.package?.values[k];
      const keep =
        typeof before === 'string' &&
        before.startsWith(HUB_SEALED_PREFIX) &&
        safeOpen(ctx.box, before) === String(value);
      stored[k] = keep ? before : ctx.box.seal(String(value));
    } else stored[k] = v;
  }
  const request = { ...ref, values: stored };
  const inputHash = createHash('sha256')
    .update(JSON.stringify([request.name, request.version, request.profile ?? null, Object.entries(stored).sort()]))
    .digest('hex');

  const recorded = ctx.catalog.getDeployment(project, name);
  let version: string | undefined;
  if (recorded && recorded.inputHash === inputHash && recorded.package === ref.name && !opts.reresolve)
    version = recorded.version;
  else {
    version = resolveVersion(
      ref.version,
      versions.map((v) => v.version),
    );
    if (!version)
      refuse(
        name,
        `package ${ref.name} has no version matching ${ref.version} (its versions: ${sortVersions(versions.map((v) => v.version)).join(', ')})`,
      );
  }
  const rec = versions.find((v) => v.version === version)!;
  if (rec.scan.state === 'Quarantined')
    refuse(
      name,
      `package ${ref.name} ${version} is Quarantined: the malware scanner found ${rec.scan.signature} in it (${rec.scan.engine}); it cannot be deployed: publish a clean version and name it`,
    );
  if (rec.scan.state !== 'Clean')
    refuse(
      name,
      `package ${ref.name} ${version} is Pending: it has not been scanned for malware yet${rec.scan.error ? ` (${rec.scan.error})` : ''}; it can be deployed once it is Clean (outpost package versions ${ref.name})`,
    );
  // Dependencies must be in the catalog and deployable; starting them first on each edge is not
  // done here (docs/catalog.md, "dependsOn"): deploy them with their own placement.
  for (const d of rec.manifest.spec.dependsOn) {
    const dv = ctx.catalog.packageVersions(project, d.name);
    const v = resolveVersion(
      d.version,
      dv.filter((x) => x.scan.state === 'Clean').map((x) => x.version),
    );
    if (!v)
      refuse(
        name,
        `package ${ref.name} ${version} depends on ${d.name} ${d.version}, and project ${project} has no Clean version of ${d.name} matching it${
          dv.length
            ? ` (its versions: ${sortVersions(dv.map((x) => x.version))
                .map((x) => `${x} ${dv.find((y) => y.version === x)!.scan.state}`)
                .join(', ')})`
            : ''
        }: publish one`,
      );
  }
  let rendered: { name: string; manifests: Manifest[] }[];
  try {
    rendered = rec.chart
      ? [{ name: rec.chart.name, manifests: [chartRelease(rec, p, plain)] }]
      : renderPackage(rec.manifest, resolveValues(rec.manifest, { profile: ref.profile, values: plain }));
  } catch (err) {
    if (err instanceof PackageError) refuse(name, err.message);
    throw err;
  }
  const names: string[] = [];
  const cause = `${rec.chart ? 'chart' : 'package'} ${ref.name} ${version}${ref.profile ? ` profile ${ref.profile}` : ''} for placement ${name}`;
  for (const w of rendered) {
    const wname = generatedName(name, w.name);
    const other = ctx.objects.get<Workload>('Workload', project, wname);
    if (other && other.metadata.annotations[GENERATED_FOR_ANNOTATION] !== name)
      refuse(name, `workload ${wname} exists and was not generated for this placement: rename one of them`);
    names.push(wname);
    if (other) keepSealing(ctx.box, w.manifests, other.spec.manifests);
    ctx.objects.apply(
      {
        apiVersion: 'outpost.dev/v1alpha1',
        kind: 'Workload',
        metadata: {
          name: wname,
          project,
          labels: {},
          annotations: {
            [GENERATED_FOR_ANNOTATION]: name,
            [PACKAGE_ANNOTATION]: `${ref.name}@${version}`,
          },
        },
        spec: { manifests: w.manifests },
      },
      { cause, ...(opts.actor ? { actor: opts.actor } : {}) },
    );
    ctx.catalog.putRevisionVersion(
      project,
      wname,
      ctx.objects.currentRevision(project, wname),
      version,
      KEPT_REVISIONS,
    );
  }
  forgetPackagePlacement(ctx, project, name, names);
  if (!recorded || recorded.version !== version || recorded.inputHash !== inputHash || recorded.package !== ref.name)
    ctx.catalog.putDeployment(project, name, {
      package: ref.name,
      versionRange: ref.version,
      version,
      ...(ref.profile ? { profile: ref.profile } : {}),
      inputHash,
      ...(recorded && recorded.version !== version ? { previousVersion: recorded.version } : {}),
    });
  return { ...p, spec: { ...p.spec, workloads: names, package: request } };
}

/**
 * The one manifest of a chart placement's workload: the chart (its digest and subcharts, what each
 * revision renders) and the values (profile, then the placement's values at their dotted paths),
 * `{{ edge.* }}` left in them for each edge (chart-renders.ts). The release is the placement's name,
 * in a namespace named as the project.
 */
function chartRelease(rec: PackageRecord, p: Placement, plain: Record<string, string | number | boolean>): Manifest {
  const chart = rec.chart!;
  const release: ChartRelease = {
    apiVersion: 'outpost.dev/v1alpha1',
    kind: CHART_RELEASE_KIND,
    metadata: { name: p.metadata.name },
    spec: {
      chart: { name: chart.name, version: chart.version, digest: rec.digest, dependencies: chart.dependencies },
      namespace: p.metadata.project,
      values: chartValues(chart, p.spec.package!.profile, plain),
    },
  };
  return release as unknown as Manifest;
}

/**
 * The generated Secret keeps the sealed values of the stored workload that open to the same plain
 * value: sealing again would change the workload (and roll it out) on every apply.
 */
function keepSealing(box: SecretBox, next: Manifest[], stored: Manifest[]): void {
  const before = new Map<string, string>();
  for (const m of stored)
    if (m.kind === 'Secret')
      for (const [k, v] of Object.entries((m as { stringData?: Record<string, string> }).stringData ?? {}))
        before.set(`${m.metadata.name}\0${k}`, v);
  for (const m of next) {
    const data = (m as { stringData?: Record<string, string> }).stringData;
    if (m.kind !== 'Secret' || !data) continue;
    for (const [k, v] of Object.entries(data)) {
      const old = before.get(`${m.metadata.name}\0${k}`);
      if (old !== undefined && old.startsWith(HUB_SEALED_PREFIX) && safeOpen(box, old) === v) data[k] = old;
    }
  }
}

function safeOpen(box: SecretBox, v: string): string | undefined {
  try {
    return box.open(v);
  } catch {
    return undefined;
  }
}
