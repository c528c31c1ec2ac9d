/**
 * @module The catalog's tables (the only SQL about them): `packages`, one row per published
 * version with its description, readme, icon, archive digest, scan verdict and, for a Helm
 * chart, what the hub read of it;
 * `package_deployments`, the version a package placement resolved to (once per rollout); and
 * `package_revisions`, the version each revision of a generated workload renders.
 */
import type { BlobDigest } from '../../core/blobs.js';
import type { ChartInfo } from '../../core/chart.js';
import type { PackageManifest } from '../../core/package.js';
import { all, bindDb, migrateTables, one, run, type SqlDb } from './sql.js';
import { SCAN_STATES, type PackageVersion, type ScanState } from '../../core/api/types.js';
import type { PackageDeploymentView } from '../../core/api/views.js';

export function migrateCatalog(db: SqlDb): void {
  migrateTables(db, 'catalog');
}

export { SCAN_STATES };
export type { PackageVersion, ScanState };

export interface PackageRecord extends PackageVersion {
  manifest: PackageManifest;
  readme?: string;
  /** A data: URL. */
  icon?: string;
  /** The Helm chart this version is (its manifest then has no workloads of its own). */
  chart?: ChartInfo;
}

interface Row {
  project: string;
  name: string;
  version: string;
  digest: string;
  manifest: string;
  readme: string | null;
  icon: string | null;
  published_by: string;
  published_at: number;
  scan_state: ScanState;
  scan_signature: string | null;
  scan_engine: string | null;
  scanned_at: number | null;
  scan_error: string | null;
  chart: string | null;
}

function toRecord(r: Row): PackageRecord {
  const manifest = JSON.parse(r.manifest) as PackageManifest;
  return {
    project: r.project,
    name: r.name,
    version: r.version,
    digest: r.digest as BlobDigest,
    ...(manifest.spec.description ? { description: manifest.spec.description } : {}),
    publishedBy: r.published_by,
    publishedAt: new Date(r.published_at).toISOString(),
    scan: {
      state: r.scan_state,
      ...(r.scan_signature ? { signature: r.scan_signature } : {}),
      ...(r.scan_engine ? { engine: r.scan_engine } : {}),
      ...(r.scanned_at ? { scannedAt: new Date(r.scanned_at).toISOString() } : {}),
      ...(r.scan_error ? { error: r.scan_error } : {}),
    },
    manifest,
    ...(r.readme !== null ? { readme: r.readme } : {}),
    ...(r.icon !== null ? { icon: r.icon } : {}),
    ...(r.chart ? { chart: JSON.parse(r.chart) as ChartInfo } : {}),
  };
}

/** Records a new version; false when the project already has it (versions are immutable). */
export function insertPackage(
  db: SqlDb,
  p: {
    project: string;
    manifest: PackageManifest;
    digest: BlobDigest;
    readme?: string | undefined;
    icon?: string | undefined;
    chart?: ChartInfo | undefined;
    publishedBy: string;
  },
  now = Date.now(),
): boolean {
  const r = run(
    db,
    `INSERT INTO packages (project, name, version, digest, manifest, readme, icon, chart, published_by, published_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, name, version) DO NOTHING`,
    p.project,
    p.manifest.metadata.name,
    p.manifest.spec.version,
    p.digest,
    JSON.stringify(p.manifest),
    p.readme ?? null,
    p.icon ?? null,
    p.chart ? JSON.stringify(p.chart) : null,
    p.publishedBy,
    now,
  );
  return r === 1;
}

export function getPackage(db: SqlDb, project: string, name: string, version: string): PackageRecord | undefined {
  const r = one<Row>(
    db,
    'SELECT * FROM packages WHERE project = ? AND name = ? AND version = ?',
    project,
    name,
    version,
  );
  return r ? toRecord(r) : undefined;
}

/** Every version of one package (unordered: callers sort by semver). */
export function packageVersions(db: SqlDb, project: string, name: string): PackageRecord[] {
  return all<Row>(db, 'SELECT * FROM packages WHERE project = ? AND name = ?', project, name).map(toRecord);
}

export function allPackages(db: SqlDb, project: string | '*'): PackageRecord[] {
  return (
    project === '*'
      ? all<Row>(db, 'SELECT * FROM packages ORDER BY project, name')
      : all<Row>(db, 'SELECT * FROM packages WHERE project = ? ORDER BY name', project)
  ).map(toRecord);
}

export function pendingPackages(db: SqlDb): PackageRecord[] {
  return all<Row>(db, "SELECT * FROM packages WHERE scan_state = 'Pending' ORDER BY published_at").map(toRecord);
}

export function recordVerdict(
  db: SqlDb,
  key: { project: string; name: string; version: string },
  v: { state: ScanState; signature?: string | undefined; engine: string },
  now = Date.now(),
): void {
  run(
    db,
    `UPDATE packages SET scan_state = ?, scan_signature = ?, scan_engine = ?, scanned_at = ?, scan_error = NULL
     WHERE project = ? AND name = ? AND version = ?`,
    v.state,
    v.signature ?? null,
    v.engine,
    now,
    key.project,
    key.name,
    key.version,
  );
}

export function recordScanError(
  db: SqlDb,
  key: { project: string; name: string; version: string },
  error: string,
): void {
  run(
    db,
    'UPDATE packages SET scan_error = ? WHERE project = ? AND name = ? AND version = ?',
    error,
    key.project,
    key.name,
    key.version,
  );
}

/** `status.package` of a package placement (core/api/views.ts), with the hash of its request. */
export interface Deployment extends PackageDeploymentView {
  inputHash: string;
}

interface DeploymentRow {
  placement: string;
  package: string;
  version_range: string;
  version: string;
  profile: string | null;
  input_hash: string;
  previous_version: string | null;
  resolved_at: number;
}

export function getDeployment(db: SqlDb, project: string, placement: string): Deployment | undefined {
  const r = one<DeploymentRow>(
    db,
    'SELECT * FROM package_deployments WHERE project = ? AND placement = ?',
    project,
    placement,
  );
  return r ? toDeployment(r) : undefined;
}

/** Every placement of the project that deploys package `name`, by placement. */
export function deploymentsOf(db: SqlDb, project: string, name: string): (Deployment & { placement: string })[] {
  return all<DeploymentRow>(
    db,
    'SELECT * FROM package_deployments WHERE project = ? AND package = ? ORDER BY placement',
    project,
    name,
  ).map((r) => ({ placement: r.placement, ...toDeployment(r) }));
}

function toDeployment(r: DeploymentRow): Deployment {
  return {
    package: r.package,
    versionRange: r.version_range,
    version: r.version,
    ...(r.profile ? { profile: r.profile } : {}),
    inputHash: r.input_hash,
    ...(r.previous_version ? { previousVersion: r.previous_version } : {}),
    resolvedAt: new Date(r.resolved_at).toISOString(),
  };
}

export function putDeployment(
  db: SqlDb,
  project: string,
  placement: string,
  d: Omit<Deployment, 'resolvedAt'>,
  now = Date.now(),
): void {
  run(
    db,
    `INSERT INTO package_deployments (project, placement, package, version_range, version, profile, input_hash, previous_version, resolved_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (project, placement) DO UPDATE SET package = excluded.package, version_range = excluded.version_range,
       version = excluded.version, profile = excluded.profile, input_hash = excluded.input_hash,
       previous_version = excluded.previous_version, resolved_at = excluded.resolved_at`,
    project,
    placement,
    d.package,
    d.versionRange,
    d.version,
    d.profile ?? null,
    d.inputHash,
    d.previousVersion ?? null,
    now,
  );
}

export function deleteDeployment(db: SqlDb, project: string, placement: string): void {
  run(db, 'DELETE FROM package_deployments WHERE project = ? AND placement = ?', project, placement);
}

/**
 * Records that revision `revision` of generated workload `workload` renders package version
 * `version`, and forgets the revisions the object store no longer keeps (`keep` back).
 */
export function putRevisionVersion(
  db: SqlDb,
  project: string,
  workload: string,
  revision: number,
  version: string,
  keep: number,
): void {
  run(
    db,
    `INSERT INTO package_revisions (project, workload, revision, version) VALUES (?, ?, ?, ?)
     ON CONFLICT (project, workload, revision) DO UPDATE SET version = excluded.version`,
    project,
    workload,
    revision,
    version,
  );
  run(
    db,
    'DELETE FROM package_revisions WHERE project = ? AND workload = ? AND revision <= ?',
    project,
    workload,
    revision - keep,
  );
}

/** `revision -> version` of each generated workload named. */
export function revisionVersions(db: SqlDb, project: string, workloads: string[]): Map<string, Map<number, string>> {
  const out = new Map<string, Map<number, string>>();
  for (const w of workloads)
    out.set(
      w,
      new Map(
        all<{ revision: number; version: string }>(
          db,
          'SELECT revision, version FROM package_revisions WHERE project = ? AND workload = ?',
          project,
          w,
        ).map((r) => [Number(r.revision), r.version]),
      ),
    );
  return out;
}

export function forgetRevisionVersions(db: SqlDb, project: string, workload: string): void {
  run(db, 'DELETE FROM package_revisions WHERE project = ? AND workload = ?', project, workload);
}

/** Forgets every package, deployment and revision version of a project (its deletion: hub/projects/deletion.ts). */
function forgetProject(db: SqlDb, project: string): void {
  run(db, 'DELETE FROM package_revisions WHERE project = ?', project);
  run(db, 'DELETE FROM package_deployments WHERE project = ?', project);
  run(db, 'DELETE FROM packages WHERE project = ?', project);
}

const CATALOG = {
  forgetProject,
  insertPackage,
  getPackage,
  packageVersions,
  allPackages,
  pendingPackages,
  recordVerdict,
  recordScanError,
  getDeployment,
  deploymentsOf,
  putDeployment,
  deleteDeployment,
  putRevisionVersion,
  revisionVersions,
  forgetRevisionVersions,
};

/** The catalog's tables as hub/catalog sees them (`HubState.catalog`). */
export type CatalogTables = ReturnType<typeof sqlCatalogTables>;

/** The catalog's tables on `db`, migrated on SQLite (PostgreSQL is migrated at start). */
export function sqlCatalogTables(db: SqlDb) {
  migrateCatalog(db);
  return bindDb(db, CATALOG);
}
