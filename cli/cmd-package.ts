/**
 * @module `outpost package build DIR | push FILE | versions NAME`, and packages as `outpost get
 * packages` shows them: the catalog (docs/catalog.md). `build` checks `DIR/package.yaml` (core/package.ts) and packs the
 * directory into `NAME-VERSION.tgz` (a Helm chart directory as `helm package` lays it out); `push`
 * uploads it as a blob and publishes it, or has the hub pull a chart from an OCI registry.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Option, type Command } from 'commander';
import * as tar from 'tar';
import YAML from 'yaml';
import type { PackageScan, PackageSummary, PackageVersion, PackageVersionView } from '../core/api/types.js';
import { CHART_FILE, CHART_LAYER_MEDIA_TYPE, isChartArchive } from '../core/chart.js';
import { MAX_ARCHIVE_ENTRY_BYTES } from '../core/limits.js';
import { PACKAGE_FILE, PACKAGE_MEDIA_TYPE, PackageError, parsePackage } from '../core/package.js';
import { API_VERSION } from '../core/resources.js';
import { pushBlob } from './cmd-blob.js';
import { openSession, type CliDeps, type Session } from './context.js';
import { CliError, UsageError } from './errors.js';
import { formatTable, line, toJson, toYaml } from './output.js';
import type { ApiObject } from './views.js';

export function scanText(s: PackageScan): string {
  return s.state === 'Quarantined' ? `Quarantined(${s.signature ?? '?'})` : s.state;
}

/**
 * Packs a Helm chart directory as `helm package` lays it out: every file under `NAME/`, into
 * NAME-VERSION.tgz. Helm reads it on the hub (its checks are Helm's own).
 */
async function buildChart(dir: string, out?: string): Promise<{ file: string; name: string; version: string }> {
  const file = path.join(dir, CHART_FILE);
  let meta: { name?: unknown; version?: unknown };
  try {
    meta = (YAML.parse(fs.readFileSync(file, 'utf8')) ?? {}) as typeof meta;
  } catch (err) {
    throw new CliError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  if (typeof meta.name !== 'string' || typeof meta.version !== 'string')
    throw new CliError(`${file}: a chart names its name and version (Helm's Chart.yaml)`);
  const target = out ?? `${meta.name}-${meta.version}.tgz`;
  const parent = path.dirname(path.resolve(dir));
  const base = path.basename(path.resolve(dir));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-chart-'));
  try {
    // Helm wants the chart's own name as the top directory, whatever the directory is called.
    const top = path.join(tmp, meta.name);
    fs.cpSync(path.join(parent, base), top, {
      recursive: true,
      filter: (src) => path.resolve(src) !== path.resolve(target),
    });
    await tar.c({ gzip: true, file: target, cwd: tmp, portable: true }, [meta.name]);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return { file: target, name: meta.name, version: meta.version };
}

/**
 * How much of an archive the CLI expands to tell a chart from a package (core/chart.ts
 * isChartArchive) before it leaves the archive to the hub, which reads it within the archive
 * limits: a hostile one (a gzip bomb) must not make the CLI expand it all.
 */
const KIND_SCAN_LIMITS = { expandedBytes: 64 * 1024 * 1024, entryBytes: MAX_ARCHIVE_ENTRY_BYTES };

/**
 * Packs DIR into OUT (default NAME-VERSION.tgz in the current directory); returns the file and the
 * package. A directory with a Chart.yaml (and no package.yaml) is a Helm chart, packed as Helm does.
 */
export async function buildPackage(
  dir: string,
  out?: string,
): Promise<{ file: string; name: string; version: string }> {
  if (!fs.existsSync(path.join(dir, PACKAGE_FILE)) && fs.existsSync(path.join(dir, CHART_FILE)))
    return buildChart(dir, out);
  const file = path.join(dir, PACKAGE_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    throw new CliError(`${file} not found: a package directory holds a ${PACKAGE_FILE} (docs/catalog.md)`);
  }
  let pkg;
  try {
    pkg = parsePackage(YAML.parse(text));
  } catch (err) {
    if (err instanceof PackageError) throw new CliError(`${file}: ${err.message}`);
    throw new CliError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  for (const f of [pkg.spec.readme, pkg.spec.icon])
    if (f !== undefined && !fs.existsSync(path.join(dir, f)))
      throw new CliError(`${file}: ${f} is named in spec but not in ${dir}`);
  const target = out ?? `${pkg.metadata.name}-${pkg.spec.version}.tgz`;
  const entries = fs
    .readdirSync(dir)
    .filter((e) => !e.endsWith('.tgz') || path.resolve(dir, e) !== path.resolve(target));
  // portable: no user names, times of the files only; the same directory packs to a comparable archive.
  await tar.c({ gzip: true, file: target, cwd: dir, portable: true }, entries);
  return { file: target, name: pkg.metadata.name, version: pkg.spec.version };
}

/**
 * A package as `get packages -o yaml|json|jsonpath` prints it: an object like the other kinds, the
 * same listed or named (kubectl's habit), its versions newest first, each with its scan verdict,
 * parameters, profiles, dependsOn and the placements that deploy it. The readme and icon are not
 * in it: `GET /api/v1/projects/P/packages/NAME/VERSION` has them.
 */
export interface PackageObject extends ApiObject {
  apiVersion: typeof API_VERSION;
  kind: 'Package';
  metadata: { name: string; project: string };
  status: { latest: string; versions: Omit<PackageVersionView, 'project' | 'name'>[] };
}

/** Builds a package object from its versions as the hub lists them (newest first). */
export function packageObject(project: string, name: string, versions: PackageVersionView[]): PackageObject {
  return {
    apiVersion: API_VERSION,
    kind: 'Package',
    metadata: { name, project },
    status: {
      latest: versions[0]?.version ?? '',
      versions: versions.map(({ project: _p, name: _n, ...v }) => v),
    },
  };
}

const packagesPath = (s: Session, name?: string) =>
  `/api/v1/projects/${encodeURIComponent(s.project)}/packages${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;

/** One package with its versions; a 404 names it as `package/NAME`. */
export async function fetchPackage(s: Session, name: string): Promise<PackageObject> {
  const r = await s.client.get<{ items?: PackageVersionView[] }>(packagesPath(s, name), {
    subject: { kind: 'package', name },
  });
  return packageObject(s.project, name, r?.items ?? []);
}

/** The catalog of the session's project: each package's newest version, scan state and count. */
export async function listPackages(s: Session): Promise<PackageSummary[]> {
  return (await s.client.get<{ items?: PackageSummary[] }>(packagesPath(s)))?.items ?? [];
}

/** How many packages' versions are read at once for the objects of the whole catalog. */
const PACKAGE_READS_AT_ONCE = 8;

/** Every package of the catalog as an object (one request for the list, then one per package). */
export async function fetchPackages(s: Session): Promise<PackageObject[]> {
  const names = (await listPackages(s)).map((p) => p.name);
  const out: PackageObject[] = [];
  for (let i = 0; i < names.length; i += PACKAGE_READS_AT_ONCE)
    out.push(...(await Promise.all(names.slice(i, i + PACKAGE_READS_AT_ONCE).map((n) => fetchPackage(s, n)))));
  return out;
}

/** The row a package object has in the catalog table: its newest version speaks for it. */
export function packageSummary(o: PackageObject): PackageSummary {
  const newest = o.status.versions[0];
  return {
    name: o.metadata.name,
    project: o.metadata.project,
    latest: o.status.latest,
    versions: o.status.versions.length,
    ...(newest?.description ? { description: newest.description } : {}),
    scan: newest?.scan ?? { state: 'Pending' },
  };
}

/** `outpost get packages`: NAME, LATEST, VERSIONS, SCAN, DESCRIPTION. */
export function formatPackageTable(items: PackageSummary[]): string {
  return formatTable(
    ['NAME', 'LATEST', 'VERSIONS', 'SCAN', 'DESCRIPTION'],
    items.map((p) => [p.name, p.latest, String(p.versions), scanText(p.scan), p.description ?? '']),
  );
}

async function printVersions(s: Session, name: string, output: string): Promise<void> {
  const r = await s.client.get<{ items: PackageVersionView[] }>(packagesPath(s, name), {
    subject: { kind: 'package', name },
  });
  const items = r?.items ?? [];
  if (output === 'json') return void s.out.out.write(toJson(items));
  if (output === 'yaml') return void s.out.out.write(toYaml(items));
  s.out.out.write(
    formatTable(
      ['VERSION', 'SCAN', 'SIGNATURE DB', 'PUBLISHED', 'DIGEST'],
      items.map((v) => [
        v.version,
        scanText(v.scan),
        v.scan.engine ?? (v.scan.error ? `(${v.scan.error})` : ''),
        v.publishedAt,
        v.digest,
      ]),
    ),
  );
}

const outputOption = () =>
  new Option('-o, --output <format>', 'output format').choices(['table', 'yaml', 'json']).default('table');

export function registerPackageCommands(program: Command, deps: CliDeps): void {
  const pkg = program
    .command('package')
    .description('the catalog: versioned packages of workloads with parameters and profiles (docs/catalog.md)');
  pkg
    .command('build')
    .description(
      `pack a directory holding ${PACKAGE_FILE} into NAME-VERSION.tgz (checked first), or a Helm chart directory (${CHART_FILE}) as helm package does`,
    )
    .argument('<dir>', 'the package or chart directory')
    .option('-o, --output <file>', 'the archive to write (default NAME-VERSION.tgz here)')
    .action(async (dir: string, o: { output?: string }) => {
      const r = await buildPackage(dir, o.output);
      line(deps.stdout, r.file);
    });
  pkg
    .command('push')
    .description(
      'upload a package archive or a Helm chart and publish its version (a version is published once: 409 after); oci://HOST/REPO:VERSION: the hub pulls the chart through the Registry object for HOST',
    )
    .argument('<file>', 'the .tgz made by outpost package build (or helm package), or oci://HOST/REPO:VERSION')
    .action(async (file: string, _o: unknown, cmd: Command) => {
      const oci = file.startsWith('oci://');
      if (!oci && !file.endsWith('.tgz') && !file.endsWith('.tar.gz'))
        throw new UsageError(
          `${file}: push the .tgz that outpost package build (or helm package) made, or a chart's oci://HOST/REPO:VERSION`,
        );
      const chart = oci || (await isChartArchive(file, KIND_SCAN_LIMITS).catch(() => false));
      const s = await openSession(cmd, deps);
      const body = oci
        ? { chart: file }
        : { digest: (await pushBlob(s, file, chart ? CHART_LAYER_MEDIA_TYPE : PACKAGE_MEDIA_TYPE)).digest };
      const v = await s.client.post<PackageVersion>(`/api/v1/projects/${encodeURIComponent(s.project)}/packages`, body);
      line(
        s.out.out,
        `${chart ? 'chart' : 'package'} ${v.name} ${v.version} published (${scanText(v.scan)}): ${v.digest}`,
      );
    });
  pkg
    .command('versions')
    .description("a package's versions with their scan verdicts, newest first")
    .argument('<name>', 'the package')
    .addOption(outputOption())
    .action(async (name: string, o: { output: string }, cmd: Command) => {
      await printVersions(await openSession(cmd, deps), name, o.output);
    });
}
