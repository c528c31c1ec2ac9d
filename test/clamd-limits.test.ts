/**
 * The malware scanner as Debian ships it: a real clamd with the size limits of Debian's
 * /etc/clamav/clamd.conf (StreamMaxLength 25M, MaxFileSize 25M, MaxScanSize 100M). An agent binary
 * over them (the real dist/outpost is ~116 MiB) is refused with what to change and the size it
 * needs, as a permanent error (413), never as "the scanner is down, retry later", which no retry
 * could mend; with the settings raised, the same binary is scanned and signed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { SignedRelease } from '../core/release.js';
import { startHub, type Hub } from '../hub/hub.js';
import { DEBIAN_CLAMD_LIMITS, TestClamd } from './fixtures/clamd.js';
import { runCli } from './fixtures/cli.js';
import { tempDir } from './helpers.js';

let dir: string;
let hub: Hub;
let clamd: TestClamd;
let env: NodeJS.ProcessEnv;
const cli = (args: string[]) => runCli(args, { env });

/** A stand-in agent of `mib` MiB that answers --version as outpost does (the rest is padding). */
function bigBinary(file: string, mib: number): string {
  const fd = fs.openSync(file, 'w', 0o755);
  fs.writeSync(fd, '#!/bin/sh\necho "outpost 9.9.9 (commit test, node v24)"\nexit 0\n');
  const chunk = Buffer.alloc(1024 * 1024, 0x23);
  for (let i = 0; i < mib; i++) fs.writeSync(fd, chunk);
  fs.closeSync(fd);
  return file;
}

beforeAll(async () => {
  dir = tempDir('outpost-clamd-limits-');
  clamd = new TestClamd(path.join(dir, 'clamd'), Buffer.from('not in this test'), DEBIAN_CLAMD_LIMITS);
  await clamd.start();
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    scanner: { kind: 'clamd', target: { path: clamd.socket }, label: `clamd:unix:${clamd.socket}` },
  });
  env = { OUTPOST_CONFIG: path.join(dir, 'cli', 'config.json') };
  expect((await runCli(['login', '--hub', hub.url, '--token', hub.adminToken], { env })).code).toBe(0);
}, 120_000);

afterAll(async () => {
  await hub?.close();
  await clamd?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("agent push with clamd's stock size limits", () => {
  it('refuses a binary over StreamMaxLength naming the settings and the size, then signs it once clamd allows it', async () => {
    const binary = bigBinary(path.join(dir, 'outpost-big'), 30);
    const r = await cli(['agent', 'push', binary]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /was not scanned, so it is not signed: clamd refused to scan the 31 MiB file for its size/,
    );
    expect(r.stderr).toMatch(/raise StreamMaxLength, MaxScanSize and MaxFileSize in clamd\.conf to at least 32M/);
    expect(r.stderr).toContain('docs/operations.md');
    expect(r.stderr).not.toMatch(/retry later/);

    // What docs/operations.md tells the operator to do: raise the three settings, restart clamd.
    await clamd.stop();
    clamd = new TestClamd(path.join(dir, 'clamd'), Buffer.from('not in this test'), [
      'StreamMaxLength 200M',
      'MaxFileSize 200M',
      'MaxScanSize 200M',
    ]);
    await clamd.start();
    const ok = await cli(['agent', 'push', binary]);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    const release = (parse(ok.stdout) as { spec: { release: SignedRelease } }).spec.release;
    expect(release).toMatchObject({ version: '9.9.9', size: fs.statSync(binary).size });
  });
});
