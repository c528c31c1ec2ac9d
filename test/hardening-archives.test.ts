/**
 * Archives an operator pushes, read by a real `outpost hub` process (issue #41 item 3): a gzip bomb
 * (a ~2 MB .tgz of 2 GiB of zeros), an entry past the per-entry limit and a root of many files are
 * refused or read with the hub's own memory measured (/proc/PID/status: VmRSS before and after,
 * VmHWM for the peak while the push ran); a normal package is still published. A spawned hub,
 * because what is measured is the hub's RSS. The archives are made here, streamed, never committed.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HubClient } from '../cli/client.js';
import { ARCHIVE_CHUNK_BYTES } from '../core/archive.js';
import { MAX_ARCHIVE_ENTRY_BYTES, MAX_ARCHIVE_EXPANDED_BYTES } from '../core/limits.js';
import { packageYaml, writeArchive } from './fixtures/archives.js';
import { runCli } from './fixtures/cli.js';
import { rssAround, tempDir } from './helpers.js';
import { freePort, startHubProc, type HubProc } from './procs.js';

/**
 * What a push may add to the hub's resident memory, at its peak and after. The reader holds two
 * 256 KiB buffers and zlib's state; the request around it a few more. The bomb made the hub
 * 2,235 MB from 193 MB in issue #41; the reader before this one took it here from 252 to 2,309 MB.
 */
const RSS_BOUND_MB = 8;

// RSS_BOUND_MB was set on a hub run through tsx. The run's bundle (test/outpost-bundle.ts, the
// code dist/outpost carries) starts with a smaller heap, and its first 500 MiB push grew the hub
// by 10 MB (2026-12-07): until the bound is settled for the shipped hub, this file's hub runs
// from the sources, so what it asserts stays as it was.
process.env.OUTPOST_TEST_SPAWN = 'tsx';
/**
 * The hub runs with V8's young generation pinned small, so that what is measured is what a push
 * holds. With V8's default sizing (what `outpost hub` runs with) the young generation grows under
 * any sustained work, once, up to V8's cap: during these pushes that added 2-12 MB (the bomb) and
 * up to 25 MB (2,000 entries) at random, V8's sizing rather than the archive; pinned, the same
 * pushes add 0-4 MB.
 */
const HUB_NODE_OPTIONS = '--max-semi-space-size=1';
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

let dir: string;
let hub: HubProc;
let env: NodeJS.ProcessEnv;
const cli = (args: string[]) => runCli(args, { env });
const client = () => new HubClient({ hub: hub.url, token: hub.token, ...(hub.ca ? { ca: hub.ca } : {}) });

/** `outpost package push FILE` with the hub's RSS measured around it; logs the figures. */
async function push(what: string, file: string) {
  const m = await rssAround(hub.proc.child.pid!, () => cli(['package', 'push', file]));
  console.log(
    `${what}: ${(fs.statSync(file).size / MiB).toFixed(1)} MB archive -> exit ${m.result.code}; hub RSS ${m.beforeMb} MB before, ${m.peakMb} MB at its peak, ${m.afterMb} MB after${m.result.code ? `\n  ${m.result.stderr.trim()}` : ''}`,
  );
  return m;
}

const digestOf = (file: string) => `sha256:${createHash('sha256').update(fs.readFileSync(file)).digest('hex')}`;

/** The bytes the hub says it expanded before it refused (its error names them). */
const expandedOf = (stderr: string): number => Number(/\((\d+) bytes\) of it expanded/.exec(stderr)?.[1]);

beforeAll(async () => {
  dir = tempDir('outpost-archives-');
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--scanner', 'none'], {
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${HUB_NODE_OPTIONS}`.trim(),
  });
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  expect((await cli(['login', '--hub', hub.url, '--token', hub.token])).code).toBe(0);
  // One publish first, so the hub has loaded (and compiled) what a push runs before anything is measured.
  const warm = path.join(dir, 'warm.tgz');
  await writeArchive(warm, [{ path: 'package.yaml', data: packageYaml('warm') }]);
  expect((await cli(['package', 'push', warm])).code).toBe(0);
});

afterAll(async () => {
  await hub?.proc.kill();
  fs.rmSync(dir, { recursive: true, force: true });
});

// Each case measures what it adds to one hub's RSS. The many-files case runs first: on a reader
// that buffers, the bomb before it would have grown the hub past what it holds, hiding it.
describe('archives pushed to the hub are read within byte bounds', () => {
  it('a root of 2,000 files of 256 KiB (500 MiB) is published without the hub holding them', async () => {
    const file = path.join(dir, 'many.tgz');
    await writeArchive(file, [
      ...Array.from({ length: 2000 }, (_, i) => ({ path: `file-${i}.txt`, data: 256 * 1024 })),
      { path: 'package.yaml', data: packageYaml('many') },
    ]);
    const m = await push('2,000 root files of 256 KiB', file);
    expect(m.result.stderr).toBe('');
    expect(m.result.stdout).toMatch(/package many 1\.0\.0 published/);
    expect(m.peakMb - m.beforeMb).toBeLessThanOrEqual(RSS_BOUND_MB);
    expect(m.afterMb - m.beforeMb).toBeLessThanOrEqual(RSS_BOUND_MB);
  });

  it('a ~2 MB .tgz of 2 GiB of zeros is refused 413 at the expanded limit, the hub RSS barely moving', async () => {
    const file = path.join(dir, 'bomb.tgz');
    // Entries of 128 MiB, each under the per-entry limit: only the expanded total stops it.
    await writeArchive(file, [
      { path: 'package.yaml', data: packageYaml('bomb') },
      ...Array.from({ length: 16 }, (_, i) => ({ path: `zeros-${String(i).padStart(2, '0')}`, data: 128 * MiB })),
    ]);
    expect(fs.statSync(file).size).toBeLessThan(3 * MiB);
    const m = await push('gzip bomb (2 GiB of zeros)', file);
    expect(m.result.code).not.toBe(0);
    expect(m.result.stderr).toMatch(
      /the archive expands to more than 1\.0 GiB, the limit for one archive \(MAX_ARCHIVE_EXPANDED_BYTES\): refused in entry zeros-07, with 1\.0 GiB \(\d+ bytes\) of it expanded from [\d.]+ MiB of the compressed file/,
    );
    // Refused at the first chunk past the limit: half of the 2 GiB was never expanded.
    const expanded = expandedOf(m.result.stderr);
    expect(expanded).toBeGreaterThan(MAX_ARCHIVE_EXPANDED_BYTES);
    expect(expanded).toBeLessThanOrEqual(MAX_ARCHIVE_EXPANDED_BYTES + ARCHIVE_CHUNK_BYTES);
    expect(expanded).toBeLessThan(2 * GiB);
    expect(m.peakMb - m.beforeMb).toBeLessThanOrEqual(RSS_BOUND_MB);
    expect(m.afterMb - m.beforeMb).toBeLessThanOrEqual(RSS_BOUND_MB);
    const versions = await cli(['package', 'versions', 'bomb']);
    expect(versions.stderr).toMatch(/package bomb not found/);
    // The API's answer under the CLI's message: 413 too_large.
    const err = await client()
      .post('/api/v1/projects/default/packages', { digest: digestOf(file) })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 413, code: 'too_large' });
  });

  it('a ~2 MB .tgz of nothing but 2 GiB of zeros is refused at its end-of-archive marker (no package.yaml), the hub RSS unmoved', async () => {
    const file = path.join(dir, 'zeros.tgz');
    await writeArchive(file, [], { trailingZeros: 2 * GiB });
    const m = await push('gzip of 2 GiB of zeros, no entry', file);
    expect(m.result.stderr).toMatch(/the archive has no package\.yaml at its root/);
    expect(m.peakMb - m.beforeMb).toBeLessThanOrEqual(RSS_BOUND_MB);
    expect(m.afterMb - m.beforeMb).toBeLessThanOrEqual(RSS_BOUND_MB);
  });

  it('an entry past the per-entry limit is refused 413 at its header, reading stopping there', async () => {
    const file = path.join(dir, 'entry.tgz');
    await writeArchive(file, [
      { path: 'package.yaml', data: packageYaml('huge-entry') },
      { path: 'data/model.bin', data: MAX_ARCHIVE_ENTRY_BYTES + MiB },
    ]);
    const m = await push('one entry of 257 MiB', file);
    expect(m.result.code).not.toBe(0);
    expect(m.result.stderr).toMatch(
      /entry data\/model\.bin of the archive is 257\.0 MiB, over the 256\.0 MiB limit for one entry \(MAX_ARCHIVE_ENTRY_BYTES\): refused at its header, with [\d.]+ [KM]iB \(\d+ bytes\) of it expanded/,
    );
    expect(expandedOf(m.result.stderr)).toBeLessThanOrEqual(ARCHIVE_CHUNK_BYTES);
    // The API's answer under the CLI's message: 413 too_large.
    const err = await client()
      .post('/api/v1/projects/default/packages', { digest: digestOf(file) })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      status: 413,
      code: 'too_large',
      message: expect.stringMatching(/MAX_ARCHIVE_ENTRY_BYTES/),
    });
    expect(m.peakMb - m.beforeMb).toBeLessThanOrEqual(RSS_BOUND_MB);
    expect(m.afterMb - m.beforeMb).toBeLessThanOrEqual(RSS_BOUND_MB);
  });

  it('a normal package, built by the CLI, is still published with its readme and icon', async () => {
    const pkg = path.join(dir, 'web');
    fs.mkdirSync(path.join(pkg, 'data'), { recursive: true });
    fs.writeFileSync(
      path.join(pkg, 'package.yaml'),
      packageYaml('web', '1.2.0', '  readme: ABOUT.md\n  icon: icon.svg\n'),
    );
    fs.writeFileSync(path.join(pkg, 'ABOUT.md'), '# web\n\nSays hello.\n');
    fs.writeFileSync(path.join(pkg, 'icon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    fs.writeFileSync(path.join(pkg, 'data', 'payload.bin'), Buffer.alloc(4 * MiB, 7));
    const file = path.join(dir, 'web-1.2.0.tgz');
    expect((await cli(['package', 'build', pkg, '-o', file])).code).toBe(0);
    const m = await push('a normal package', file);
    expect(m.result.stderr).toBe('');
    expect(m.result.stdout).toMatch(/package web 1\.2\.0 published/);
    const v = await client().get<{ readme?: string; icon?: string }>('/api/v1/projects/default/packages/web/1.2.0');
    expect(v?.readme).toBe('# web\n\nSays hello.\n');
    expect(v?.icon).toBe(
      `data:image/svg+xml;base64,${Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>').toString('base64')}`,
    );
  });
});
