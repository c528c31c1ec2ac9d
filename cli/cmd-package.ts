/**
 * @module `outpost package build DIR | push FILE | versions NAME` and `outpost get packages`: the
 * catalog (docs/catalog.md). `build` checks `DIR/package.yaml` (core/package.ts) and packs the
 * directory into `NAME-VERSION.tgz`; `push` uploads it as a blob and publishes it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Option, type Command } from 'commander';
import * as tar from 'tar';
import YAML from 'yaml';
import type { PackageScan, PackageSummary, PackageVersion, PackageVersionView } from '../core/api/types.js';
import { PACKAGE_FILE, PACKAGE_MEDIA_TYPE, PackageError, parsePackage } from '../core/package.js';
import { pushBlob } from './cmd-blob.js';
import { openSession, type CliDeps, type Session } from './context.js';
import { CliError, UsageError } from './errors.js';
import { formatTable, line, toJson, toYaml } from './output.js';

function scanText(s: PackageScan): string {
  return s.state === 'Quarantined' ? `Quarantined(${s.signature ?? '?'})` : s.state;
}

/** Packs DIR into OUT (default NAME-VERSION.tgz in the current directory); returns the file and the package. */
export async function buildPackage(
  dir: string,
  out?: string,
): Promise<{ file: string; name: string; version: string }> {
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

/** `outpost get packages [NAME]`: the catalog, or one package's versions. */
export async function getPackages(s: Session, name: string | undefined, output: string): Promise<void> {
  if (name !== undefined) return printVersions(s, name, output);
  const r = await s.client.get<{ items: PackageSummary[] }>(
    `/api/v1/projects/${encodeURIComponent(s.project)}/packages`,
  );
  const items = r?.items ?? [];
  if (output === 'json') return void s.out.out.write(toJson(items));
  if (output === 'yaml') return void s.out.out.write(toYaml(items));
  if (items.length === 0) return line(s.out.err, `No packages found in project ${s.project}.`);
  s.out.out.write(
    formatTable(
      ['NAME', 'LATEST', 'VERSIONS', 'SCAN', 'DESCRIPTION'],
      items.map((p) => [p.name, p.latest, String(p.versions), scanText(p.scan), p.description ?? '']),
    ),
  );
}

async function printVersions(s: Session, name: string, output: string): Promise<void> {
  const r = await s.client.get<{ items: PackageVersionView[] }>(
    `/api/v1/projects/${encodeURIComponent(s.project)}/packages/${encodeURIComponent(name)}`,
  );
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
    .description(`pack a directory holding ${PACKAGE_FILE} into NAME-VERSION.tgz (checked first)`)
    .argument('<dir>', 'the package directory')
    .option('-o, --output <file>', 'the archive to write (default NAME-VERSION.tgz here)')
    .action(async (dir: string, o: { output?: string }) => {
      const r = await buildPackage(dir, o.output);
      line(deps.stdout, r.file);
    });
  pkg
    .command('push')
    .description('upload a package archive and publish its version (a version is published once: 409 after)')
    .argument('<file>', 'the .tgz made by outpost package build')
    .action(async (file: string, _o: unknown, cmd: Command) => {
      if (!file.endsWith('.tgz') && !file.endsWith('.tar.gz'))
        throw new UsageError(`${file}: push the .tgz that outpost package build made`);
      const s = await openSession(cmd, deps);
      const blob = await pushBlob(s, file, PACKAGE_MEDIA_TYPE);
      const v = await s.client.post<PackageVersion>(`/api/v1/projects/${encodeURIComponent(s.project)}/packages`, {
        digest: blob.digest,
      });
      line(s.out.out, `package ${v.name} ${v.version} published (${scanText(v.scan)}): ${v.digest}`);
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
