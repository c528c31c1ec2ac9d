import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArchiveLimitError } from '../../core/archive.js';
import { PackageError } from '../../core/package.js';
import { packageYaml, writeArchive, type TarEntry } from '../../test/fixtures/archives.js';
import { tempDir } from '../../test/helpers.js';
import { readPackageArchive } from './archive.js';

let dir: string;
let n = 0;
beforeAll(() => {
  dir = tempDir('outpost-package-archive-');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function archive(entries: TarEntry[]): Promise<string> {
  const file = path.join(dir, `p${n++}.tgz`);
  await writeArchive(file, entries);
  return file;
}

const SVG = '<svg xmlns="http://www.w3.org/2000/svg"/>';

describe('readPackageArchive', () => {
  it('reads package.yaml, README.md by default, and a readme and icon package.yaml names after them', async () => {
    const plain = await readPackageArchive(
      await archive([
        { path: 'README.md', data: '# default' },
        { path: './package.yaml', data: packageYaml('web') },
      ]),
    );
    expect(plain.manifest.metadata.name).toBe('web');
    expect(plain.readme).toBe('# default');

    // The readme and icon come before package.yaml, which names them: a second pass reads them.
    const named = await readPackageArchive(
      await archive([
        { path: 'ABOUT.md', data: '# about' },
        { path: 'icon.svg', data: SVG },
        { path: 'data/big.bin', data: 1024 * 1024 },
        { path: 'package.yaml', data: packageYaml('web', '1.0.0', '  readme: ABOUT.md\n  icon: icon.svg\n') },
      ]),
    );
    expect(named.readme).toBe('# about');
    expect(named.icon).toBe(`data:image/svg+xml;base64,${Buffer.from(SVG).toString('base64')}`);
  });

  it('a later package.yaml replaces an earlier one, as tar extracts it', async () => {
    const r = await readPackageArchive(
      await archive([
        { path: 'package.yaml', data: packageYaml('first') },
        { path: 'package.yaml', data: packageYaml('second') },
      ]),
    );
    expect(r.manifest.metadata.name).toBe('second');
  });

  it('names a missing or oversized file, and a file that is no archive', async () => {
    const noYaml = archive([{ path: 'README.md', data: '# x' }]);
    await expect(readPackageArchive(await noYaml)).rejects.toThrow(
      /the archive has no package\.yaml at its root: make it with outpost package build DIR/,
    );
    const bigIcon = archive([
      { path: 'package.yaml', data: packageYaml('web', '1.0.0', '  icon: icon.png\n') },
      { path: 'icon.png', data: 200 * 1024 },
    ]);
    await expect(readPackageArchive(await bigIcon)).rejects.toThrow(
      /spec\.icon: icon\.png is larger than 131072 bytes/,
    );
    const text = path.join(dir, 'not-an-archive.tgz');
    fs.writeFileSync(text, 'just text, long enough to be read as a tar header block '.repeat(20));
    const err = await readPackageArchive(text).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PackageError);
    expect((err as Error).message).toMatch(
      /^the archive is not a gzip-compressed tar \(.+\): make it with outpost package build DIR$/,
    );
  });

  it('past an archive limit, the ArchiveLimitError (413) comes through', async () => {
    const file = await archive([
      { path: 'package.yaml', data: packageYaml('web') },
      { path: 'huge.bin', data: 257 * 1024 * 1024 },
    ]);
    const err = await readPackageArchive(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArchiveLimitError);
    expect((err as ArchiveLimitError).toOutpostError().status).toBe(413);
  });
});
