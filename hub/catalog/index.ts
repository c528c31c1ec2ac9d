/**
 * @module The catalog (docs/catalog.md): versioned packages published as blobs (hub/blobs/),
 * scanned for malware before they can be deployed, and deployed by placements naming them
 * (hub/catalog/render.ts). A version may be a Helm chart (charts.ts), rendered per edge by Helm
 * (chart-renders.ts).
 *
 * Scanning fails closed: a version is Pending until the scanner gives a verdict (Clean, or
 * Quarantined with the signature), and stays Pending with an event while the scanner cannot be
 * reached, retried every `retryMs`. A hub started without `--scanner` scans nothing and deploys no
 * package; `--scanner none` is the explicit, logged opt-out (versions are Clean, engine `none`).
 *
 * @example
 * const catalog = new Catalog({ state, blobs, objects, box: secrets.box, scanner: parseScanner('clamd:unix:/run/clamav/clamd.ctl') });
 * catalog.start();
 * const v = await catalog.push('default', digest, 'token:abc');
 */
import { OutpostError } from '../../core/errors.js';
import type { BlobDigest } from '../../core/blobs.js';
import { createLogger } from '../../core/logger.js';
import { PACKAGE_MEDIA_TYPE, PackageError, sortVersions } from '../../core/package.js';
import type { Placement, Registry } from '../../core/resources.js';
import type { HubBlobs } from '../blobs/index.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import type { SecretBox } from '../secrets.js';
import type { HubState } from '../state/index.js';
import { readPackageArchive, type PackageContents } from './archive.js';
import { pullChart, readChart } from './charts.js';
import { NO_HELM_MESSAGE, type HelmRenderer } from './helm.js';
import { CHART_LAYER_MEDIA_TYPE, isChartArchive, type ChartInfo } from '../../core/chart.js';
import { packageRuns } from './runs.js';
import { admitPackagePlacement, forgetPackagePlacement, type RenderContext } from './render.js';
import { ScanLimitError, scanFile, type ScannerSpec, type ScanVerdict } from '../scan/clamd.js';
import { type Deployment, type PackageRecord, type PackageVersion } from '../state/catalog.js';
import type { PackageSummary, PackageVersionView } from '../../core/api/types.js';

const log = createLogger('hub:catalog');

/** While the scanner is unreachable, Pending versions are tried again this often. */
export const SCAN_RETRY_MS = 10_000;

export const NO_SCANNER_MESSAGE =
  'the hub runs without a malware scanner: packages stay Pending and cannot be deployed; start the hub with --scanner clamd:unix:PATH (or clamd:tcp:HOST:PORT), or --scanner none to deploy unscanned packages';

export interface CatalogOptions {
  /** The catalog's tables, events, the scheduler's assignments (read only) and transactions. */
  state: HubState;
  blobs: HubBlobs;
  objects: ObjectStore;
  box: SecretBox;
  /** Undefined: no scanner configured (fail closed). */
  scanner?: ScannerSpec | undefined;
  retryMs?: number;
  /** Renders Helm charts (`--helm`); without its binary, charts are refused with NO_HELM_MESSAGE. */
  helm?: HelmRenderer;
}

function view(r: PackageRecord): PackageVersionView {
  return {
    project: r.project,
    name: r.name,
    version: r.version,
    digest: r.digest,
    ...(r.description ? { description: r.description } : {}),
    publishedBy: r.publishedBy,
    publishedAt: r.publishedAt,
    scan: r.scan,
    parameters: r.manifest.spec.parameters,
    profiles: r.manifest.spec.profiles,
    dependsOn: r.manifest.spec.dependsOn,
    ...(r.chart
      ? {
          chart: {
            version: r.chart.version,
            ...(r.chart.appVersion ? { appVersion: r.chart.appVersion } : {}),
            dependencies: r.chart.dependencies.map((d) => ({ name: d.name, version: d.version })),
            ...(r.chart.source ? { source: r.chart.source } : {}),
          },
        }
      : {}),
  };
}

export class Catalog {
  private readonly state: HubState;
  private readonly retryMs: number;
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private lastError: string | undefined;
  /** Placements whose next admission resolves the version range again (rollout restart). */
  private readonly reresolve = new Set<string>();
  private readonly ctx: RenderContext;

  constructor(private readonly o: CatalogOptions) {
    this.state = o.state;
    this.retryMs = o.retryMs ?? SCAN_RETRY_MS;
    this.ctx = { catalog: o.state.catalog, objects: o.objects, box: o.box };
    o.objects.setPlacementAdmission((p, cur, actor) => {
      const key = `${p.metadata.project}/${p.metadata.name}`;
      const reresolve = this.reresolve.has(key);
      this.reresolve.delete(key);
      return admitPackagePlacement(this.ctx, p, cur, { reresolve, ...(actor ? { actor } : {}) });
    });
  }

  /** A package placement deleted: what it deployed is forgotten (its module's hook, hub/module.ts). */
  onObjectChange(c: ObjectChange): void {
    if (c.kind === 'Placement' && !c.after && (c.before as Placement | undefined)?.spec.package)
      forgetPackagePlacement(this.ctx, c.project, c.name);
  }

  /** Logs how packages are scanned and scans what is Pending. */
  start(): void {
    const s = this.o.scanner;
    if (!s) log.warn(NO_SCANNER_MESSAGE);
    else if (s.kind === 'none')
      log.warn('malware scanning is off (--scanner none): pushed packages are deployable without a scan');
    else log.info({ scanner: s.label }, 'packages are scanned by clamd');
    this.kick();
  }

  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return this.scanning ?? Promise.resolve();
  }

  /**
   * Publishes the package archive or Helm chart held in blob `digest`; 409 when the version
   * exists. `source`: the OCI reference a chart was pulled from (pushChart).
   */
  async push(
    project: string,
    digest: BlobDigest,
    by: string,
    source?: { reference: string; manifestDigest: string },
  ): Promise<PackageVersion> {
    const blob = this.o.blobs.get(project, digest);
    if (!blob)
      throw new OutpostError(
        'not_found',
        `blob ${digest} not found in project ${project}: upload the archive first (outpost package push FILE does both)`,
      );
    const file = this.o.blobs.files.path(digest);
    let contents: PackageContents & { chart?: ChartInfo };
    // Past the archive limits readPackageArchive throws an ArchiveLimitError: 413 by its own mapping.
    try {
      // The CLI names a chart by its media type; an archive uploaded otherwise is looked into.
      const chart =
        blob.mediaType === CHART_LAYER_MEDIA_TYPE ||
        (blob.mediaType !== PACKAGE_MEDIA_TYPE && (await isChartArchive(file)));
      if (chart) {
        if (!this.o.helm?.bin) throw new OutpostError('unavailable', NO_HELM_MESSAGE);
        const c = await readChart(this.o.helm, file, blob.size);
        contents = { ...c, chart: { ...c.chart, ...(source ? { source } : {}) } };
      } else contents = await readPackageArchive(file);
    } catch (err) {
      if (err instanceof PackageError) throw new OutpostError('invalid', `the package archive: ${err.message}`);
      throw err;
    }
    const { manifest } = contents;
    const { name } = manifest.metadata;
    const { version } = manifest.spec;
    this.state.transaction(() => {
      const inserted = this.state.catalog.insertPackage({
        project,
        manifest,
        digest,
        readme: contents.readme,
        icon: contents.icon,
        chart: contents.chart,
        publishedBy: by,
      });
      if (!inserted) {
        const had = this.state.catalog.getPackage(project, name, version)!;
        throw new OutpostError(
          'conflict',
          `package ${name} ${version} is already published in project ${project}${had.digest === digest ? ' (the same archive)' : ' with other content'}: versions are immutable; raise spec.version in package.yaml and build again`,
        );
      }
      this.o.blobs.setReferences(project, 'Package', `${name}@${version}`, [digest]);
      this.state.events.record({
        project,
        kind: 'Package',
        name,
        reason: 'Published',
        message: `${contents.chart ? 'chart' : 'package'} ${name} ${version} published by ${by} (${digest}${source ? `, pulled from ${source.reference}` : ''})${contents.chart?.dependencies.length ? ` with subcharts ${contents.chart.dependencies.map((d) => `${d.name} ${d.version}`).join(', ')}` : ''}; Pending its malware scan`,
      });
    });
    log.info({ project, package: name, version, digest, by }, 'package published');
    this.kick();
    return view(this.state.catalog.getPackage(project, name, version)!);
  }

  /** Pulls the Helm chart `reference` (`oci://HOST/REPO:TAG`) through the project's Registry for HOST and publishes it. */
  async pushChart(project: string, reference: string, by: string): Promise<PackageVersion> {
    if (!this.o.helm?.bin) throw new OutpostError('unavailable', NO_HELM_MESSAGE);
    const pulled = await pullChart(
      { blobs: this.o.blobs, box: this.o.box, registries: this.o.objects.list<Registry>('Registry', project) },
      project,
      reference,
      by,
    );
    return this.push(project, pulled.digest, by, { reference, manifestDigest: pulled.manifestDigest });
  }

  list(project: string | '*'): PackageSummary[] {
    const by = new Map<string, PackageRecord[]>();
    for (const r of this.state.catalog.allPackages(project)) {
      const k = `${r.project}/${r.name}`;
      (by.get(k) ?? by.set(k, []).get(k)!).push(r);
    }
    return [...by.values()].map((rs) => {
      const latest = sortVersions(rs.map((r) => r.version))[0];
      const r = rs.find((x) => x.version === latest)!;
      return {
        name: r.name,
        project: r.project,
        latest,
        versions: rs.length,
        ...(r.description ? { description: r.description } : {}),
        scan: r.scan,
        ...(r.icon ? { icon: r.icon } : {}),
      };
    });
  }

  /** Every version, newest first, each with the placements and edges it runs on. */
  versions(project: string, name: string): PackageVersionView[] {
    const rs = this.state.catalog.packageVersions(project, name);
    if (rs.length === 0) throw new OutpostError('not_found', `package ${name} not found in project ${project}`);
    const order = sortVersions(rs.map((r) => r.version));
    const runs = packageRuns(this.state.catalog, this.o.objects, this.state.assignments, project, name);
    return order.map((v) => ({ ...view(rs.find((r) => r.version === v)!), placements: runs.get(v) ?? [] }));
  }

  /** One version with its readme, icon and workload templates. */
  get(project: string, name: string, version: string): PackageRecord {
    const r = this.state.catalog.getPackage(project, name, version);
    if (!r) throw new OutpostError('not_found', `package ${name} ${version} not found in project ${project}`);
    return r;
  }

  deployment(project: string, placement: string): Deployment | undefined {
    return this.state.catalog.getDeployment(project, placement);
  }

  /** `outpost rollout restart`: resolves the placement's version range again (a new rollout if it moved). */
  restart(project: string, placement: string, actor: string): { placement: Placement; deployment: Deployment } {
    return this.state.transaction(() => {
      const p = this.o.objects.get<Placement>('Placement', project, placement);
      if (!p) throw new OutpostError('not_found', `Placement ${placement} not found in project ${project}`);
      if (!p.spec.package)
        throw new OutpostError(
          'invalid',
          `placement ${placement} deploys no package: rollout restart resolves a package's version range again`,
        );
      const before = this.state.catalog.getDeployment(project, placement);
      this.reresolve.add(`${project}/${placement}`);
      try {
        this.o.objects.apply(
          { ...p, metadata: { ...p.metadata, resourceVersion: undefined } },
          { actor, cause: 'rollout restart' },
        );
      } finally {
        this.reresolve.delete(`${project}/${placement}`);
      }
      const after = this.state.catalog.getDeployment(project, placement)!;
      this.state.events.record({
        project,
        kind: 'Placement',
        name: placement,
        reason: 'PackageResolved',
        message: `rollout restart by ${actor}: ${p.spec.package.name} ${p.spec.package.version} resolves to ${after.version}${before && before.version !== after.version ? ` (was ${before.version})` : ' (unchanged)'}`,
      });
      return { placement: this.o.objects.get<Placement>('Placement', project, placement)!, deployment: after };
    });
  }

  /** Starts a scan pass unless one runs (then one more follows it). */
  private kick(): void {
    if (this.stopped) return;
    if (this.scanning) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.scanning = this.scanPending()
      .catch((err: unknown) => log.error({ err }, 'scanning packages failed; retried later'))
      .finally(() => {
        this.scanning = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async scanPending(): Promise<void> {
    const pending = this.state.catalog.pendingPackages();
    if (pending.length === 0) return;
    const s = this.o.scanner;
    if (!s) {
      for (const r of pending) if (r.scan.error !== NO_SCANNER_MESSAGE) this.noVerdict(r, NO_SCANNER_MESSAGE);
      return;
    }
    for (const r of pending) {
      if (this.stopped) return;
      try {
        this.verdict(r, await scanFile(s, this.o.blobs.files.path(r.digest)));
        this.lastError = undefined;
      } catch (err) {
        if (err instanceof ScanLimitError) {
          // This package is over the scanner's settings; the others may not be. Retried with the
          // rest (the operator may have raised the settings by then).
          this.noVerdict(r, err.message);
          this.retryLater();
          continue;
        }
        const message = `${(err as Error).message}; retried every ${this.retryMs / 1000}s`;
        this.noVerdict(r, message);
        if (this.lastError !== message)
          log.warn({ scanner: s.kind === 'clamd' ? s.label : s.kind, err: (err as Error).message }, 'no scan verdict');
        this.lastError = message;
        // The scanner is down for the others too: try again later, all of them.
        this.retryLater();
        return;
      }
    }
  }

  private retryLater(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), this.retryMs);
    this.timer.unref();
  }

  private verdict(r: PackageRecord, v: ScanVerdict): void {
    this.state.transaction(() => {
      this.state.catalog.recordVerdict(r, v);
      this.state.events.record({
        project: r.project,
        kind: 'Package',
        name: r.name,
        reason: v.state === 'Clean' ? 'ScanClean' : 'Quarantined',
        message:
          v.state === 'Clean'
            ? `package ${r.name} ${r.version} is Clean (${v.engine})`
            : `package ${r.name} ${r.version} is Quarantined: ${v.signature} found (${v.engine}); it cannot be deployed`,
      });
    });
    log.info({ project: r.project, package: r.name, version: r.version, ...v }, 'package scanned');
  }

  /** Stays Pending; an event when the reason is new for this version. */
  private noVerdict(r: PackageRecord, message: string): void {
    if (r.scan.error === message) return;
    this.state.transaction(() => {
      this.state.catalog.recordScanError(r, message);
      this.state.events.record({
        project: r.project,
        kind: 'Package',
        name: r.name,
        reason: 'ScanPending',
        message: `package ${r.name} ${r.version} stays Pending: ${message}`,
      });
    });
  }
}
