/**
 * @module Reads a pushed package archive (a .tgz made by `outpost package build`): its
 * `package.yaml`, readme and icon, through the bounded reader (core/archive.ts). Only those few
 * small files at the archive's root are held; the rest (data files, anything a workload ships)
 * stays in the blob, scanned with it.
 */
import path from 'node:path';
import YAML from 'yaml';
import { ArchiveFormatError, readArchive, type ArchiveEntry } from '../../core/archive.js';
import {
  MAX_ICON_BYTES,
  MAX_README_BYTES,
  PACKAGE_FILE,
  PackageError,
  parsePackage,
  type PackageManifest,
} from '../../core/package.js';

export interface PackageContents {
  manifest: PackageManifest;
  readme?: string;
  /** A data: URL. */
  icon?: string;
}

const ICON_TYPES: Record<string, string> = { '.png': 'image/png', '.svg': 'image/svg+xml' };

/** An entry's name when it is a file at the archive's root (`./README.md` is `README.md`). */
function rootFile(e: ArchiveEntry): string | undefined {
  const p = path.posix.normalize(e.path).replace(/^\.\//, '');
  return e.type === 'File' && !p.includes('/') ? p : undefined;
}

/**
 * The root files named `names`, each kept when at most MAX_README_BYTES (a larger one is only
 * noted in `tooBig`): one bounded pass over the archive (core/archive.ts).
 */
async function readRootFiles(
  file: string,
  names: Set<string>,
): Promise<{ files: Map<string, Buffer>; tooBig: Set<string> }> {
  const tooBig = new Set<string>();
  try {
    const { files } = await readArchive(file, (e) => {
      const p = rootFile(e);
      if (p === undefined || !names.has(p)) return undefined;
      if (e.size > MAX_README_BYTES) return void tooBig.add(p);
      tooBig.delete(p);
      return p;
    });
    for (const p of tooBig) files.delete(p);
    return { files, tooBig };
  } catch (err) {
    if (err instanceof ArchiveFormatError)
      throw new PackageError(
        `the archive is not a gzip-compressed tar (${err.message}): make it with outpost package build DIR`,
      );
    throw err;
  }
}

/**
 * Reads and validates an archive; throws a PackageError naming what is wrong and the fix, or an
 * ArchiveLimitError (413) past the archive limits. Only the files it needs are held: package.yaml
 * and README.md in a first pass, and, when package.yaml names another readme or an icon, those in
 * a second (each pass bounded by bytes; a root of many files is never held).
 */
export async function readPackageArchive(file: string): Promise<PackageContents> {
  const first = new Set([PACKAGE_FILE, 'README.md']);
  const { files, tooBig } = await readRootFiles(file, first);
  const text = files.get(PACKAGE_FILE);
  if (!text)
    throw new PackageError(
      tooBig.has(PACKAGE_FILE)
        ? `${PACKAGE_FILE} is larger than ${MAX_README_BYTES} bytes`
        : `the archive has no ${PACKAGE_FILE} at its root: make it with outpost package build DIR`,
    );
  let doc: unknown;
  try {
    doc = YAML.parse(text.toString('utf8'));
  } catch (err) {
    throw new PackageError(`${PACKAGE_FILE}: not valid YAML: ${(err as Error).message}`);
  }
  const manifest = parsePackage(doc);
  const more = new Set(
    [manifest.spec.readme, manifest.spec.icon].filter((f): f is string => f !== undefined && !first.has(f)),
  );
  if (more.size > 0) {
    const second = await readRootFiles(file, more);
    for (const [k, v] of second.files) files.set(k, v);
    for (const k of second.tooBig) tooBig.add(k);
  }
  const out: PackageContents = { manifest };
  const readmeName = manifest.spec.readme ?? (files.has('README.md') ? 'README.md' : undefined);
  if (readmeName !== undefined) {
    const r = files.get(readmeName);
    if (!r)
      throw new PackageError(
        tooBig.has(readmeName)
          ? `spec.readme: ${readmeName} is larger than ${MAX_README_BYTES} bytes`
          : `spec.readme: the archive has no file ${readmeName} at its root`,
      );
    out.readme = r.toString('utf8');
  }
  if (manifest.spec.icon !== undefined) {
    const type = ICON_TYPES[path.extname(manifest.spec.icon).toLowerCase()];
    if (!type) throw new PackageError(`spec.icon: ${manifest.spec.icon} is not a .png or .svg file`);
    const i = files.get(manifest.spec.icon);
    if (!i || i.length > MAX_ICON_BYTES)
      throw new PackageError(
        i || tooBig.has(manifest.spec.icon)
          ? `spec.icon: ${manifest.spec.icon} is larger than ${MAX_ICON_BYTES} bytes`
          : `spec.icon: the archive has no file ${manifest.spec.icon} at its root`,
      );
    out.icon = `data:${type};base64,${i.toString('base64')}`;
  }
  return out;
}
