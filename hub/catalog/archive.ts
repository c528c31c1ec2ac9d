/**
 * @module Reads a pushed package archive (a .tgz made by `outpost package build`): its
 * `package.yaml`, readme and icon. Only small files at the archive's root are read; the rest
 * (data files, anything a workload ships) stays in the blob, scanned with it.
 */
import path from 'node:path';
import * as tar from 'tar';
import YAML from 'yaml';
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

/** Reads and validates an archive; throws a PackageError naming what is wrong and the fix. */
export async function readPackageArchive(file: string): Promise<PackageContents> {
  const files = new Map<string, Buffer>();
  const tooBig = new Set<string>();
  try {
    await tar.t({
      file,
      onReadEntry: (entry) => {
        const p = path.posix.normalize(entry.path).replace(/^\.\//, '');
        if (entry.type !== 'File' || p.includes('/')) return;
        if (entry.size > MAX_README_BYTES) {
          tooBig.add(p);
          return;
        }
        const parts: Buffer[] = [];
        entry.on('data', (c: Buffer) => parts.push(c));
        entry.on('end', () => files.set(p, Buffer.concat(parts)));
      },
    });
  } catch (err) {
    throw new PackageError(
      `the archive is not a gzip-compressed tar (${(err as Error).message}): make it with outpost package build DIR`,
    );
  }
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
